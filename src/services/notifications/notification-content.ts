import type { NotificationType } from '../../db/entities/notification.js';
import type { InAppLabels, Labels, LocaleSettings } from '../documents/labels/labels.js';
import { DEFAULT_LOCALE_SETTINGS, localisation } from '../documents/labels/localisation.js';

type Data = Record<string, unknown>;

const text = (v: unknown): string => (v === undefined || v === null ? '' : String(v));

/** The words of one notification and its amounts and dates as the documents write them, in BILLING_TIMEZONE. */
interface Words {
  t: InAppLabels;
  labels: Labels;
  money(d: Data, amount: unknown): string;
  /** An ISO timestamp as its date and time of day; anything else as given. */
  when(value: unknown): string;
  /** An ISO timestamp as its date; anything else as given. */
  day(value: unknown): string;
}

function words(settings: LocaleSettings): Words {
  const { labels, format } = localisation(settings);
  const instant = (value: unknown): Date | null => {
    const raw = text(value).trim();
    const at = /^\d{4}-\d{2}-\d{2}T/.test(raw) ? new Date(raw) : null;
    return at && !Number.isNaN(at.getTime()) ? at : null;
  };
  return {
    t: labels.inApp,
    labels,
    money: (d, amount) => (text(amount).trim() ? format.money(text(amount).trim(), text(d.currency)) : ''),
    when: (value) => {
      const at = instant(value);
      return at ? format.dateTime(at) : text(value);
    },
    day: (value) => {
      const at = instant(value);
      return at ? format.date(at) : text(value);
    },
  };
}

/** How to pay, from payment_details (shaped per payment type); a QR code and its app link may both be there. */
function paymentInstructions(d: Data, t: InAppLabels): string {
  if (d.va_number) return t.instructions.va(text(d.bank).toUpperCase(), text(d.va_number));
  if (d.bill_key) return t.instructions.billKey(text(d.bill_key), text(d.biller_code));
  if (d.qr_code_url) return t.instructions.qr(text(d.qr_code_url), text(d.deeplink_url));
  if (d.deeplink_url) return t.instructions.app(text(d.deeplink_url));
  if (d.redirect_url) return t.instructions.card(text(d.redirect_url));
  return '';
}

/** Why a settlement could not be used, in words when it is one we know. */
function unusableReason(d: Data, labels: Labels): string {
  const reason = text(d.reason);
  return (labels.unusableReasons as Record<string, string>)[reason] ?? reason.replace(/_/g, ' ');
}

/** Title and message of each notification type, from the event's data. */
const CONTENT: Record<NotificationType, (d: Data, w: Words) => { title: string; message: string }> = {
  payment_pending: (d, { t, money, when }) => ({
    title: t.titles.paymentPending,
    message: t.paymentPending(money(d, d.amount), t.what(text(d.order_id), Boolean(d.topup_id)), paymentInstructions(d, t), when(d.expiry_time)),
  }),
  payment_succeeded: (d, { t, money }) => ({ title: t.titles.paymentSucceeded, message: t.paymentSucceeded(money(d, d.amount), text(d.order_id)) }),
  payment_failed: (d, { t }) => ({ title: t.titles.paymentFailed, message: t.paymentFailed(text(d.order_id), text(d.gateway_status)) }),
  payment_credited_to_wallet: (d, { t, labels, money }) => ({
    title: t.titles.paymentCreditedToWallet,
    message: t.paymentCreditedToWallet(money(d, d.amount), text(d.order_id), unusableReason(d, labels), d.credited !== false),
  }),
  payment_refunded: (d, { t, money }) => ({ title: t.titles.paymentRefunded, message: t.paymentRefunded(money(d, d.refunded_amount), text(d.order_id)) }),
  subscription_activated: (d, { t }) => ({ title: t.titles.subscriptionActivated, message: t.subscriptionActivated(text(d.plan_name)) }),
  subscription_past_due: (d, { t }) => ({ title: t.titles.subscriptionPastDue, message: t.subscriptionPastDue(text(d.plan_name)) }),
  subscription_canceled: (d, { t }) => ({ title: t.titles.subscriptionCanceled, message: t.subscriptionCanceled(text(d.plan_name)) }),
  subscription_paused: (d, { t }) => ({ title: t.titles.subscriptionPaused, message: t.subscriptionPaused(text(d.plan_name)) }),
  subscription_resumed: (d, { t }) => ({ title: t.titles.subscriptionResumed, message: t.subscriptionResumed(text(d.plan_name)) }),
  subscription_plan_changed: (d, { t }) => ({ title: t.titles.subscriptionPlanChanged, message: t.subscriptionPlanChanged(text(d.old_plan_name), text(d.plan_name)) }),
  subscription_renewed: (d, { t, day }) => ({ title: t.titles.subscriptionRenewed, message: t.subscriptionRenewed(text(d.plan_name), day(d.current_period_end)) }),
  subscription_expired: (d, { t }) => ({ title: t.titles.subscriptionExpired, message: t.subscriptionExpired(text(d.plan_name)) }),
  trial_will_end: (d, { t, day }) => ({ title: t.titles.trialWillEnd, message: t.trialWillEnd(text(d.plan_name), day(d.trial_end)) }),
  topup_succeeded: (d, { t, money }) => ({ title: t.titles.topupSucceeded, message: t.topupSucceeded(money(d, d.amount)) }),
  topup_failed: (d, { t }) => ({ title: t.titles.topupFailed, message: t.topupFailed(text(d.order_id)) }),
  topup_expired: (d, { t }) => ({ title: t.titles.topupExpired, message: t.topupExpired(text(d.order_id)) }),
  payment_reversed: (d, { t, money }) => ({
    title: t.titles.paymentReversed,
    message: t.paymentReversed(money(d, d.amount), t.what(text(d.order_id), Boolean(d.topup_id)), Boolean(d.topup_id)),
  }),
  payment_charged_back: (d, { t, money }) => ({
    title: t.titles.paymentChargedBack,
    message: t.paymentChargedBack(money(d, d.chargeback_amount), t.what(text(d.order_id), Boolean(d.topup_id)), Boolean(d.topup_id), d.fully_charged_back === false),
  }),
  card_expiring: (d, { t, day }) => ({ title: t.titles.cardExpiring, message: t.cardExpiring(text(d.plan_name), day(d.card_expires_at), day(d.next_billing_date)) }),
  payment_method_required: (d, { t }) => ({ title: t.titles.paymentMethodRequired, message: t.paymentMethodRequired(text(d.plan_name), text(d.order_id)) }),
};

/**
 * Title and message of a notification, in the words of `settings.locale` with its dates in
 * `settings.timeZone` (the configuration's `documents`; the defaults of BILLING_LOCALE and
 * BILLING_TIMEZONE when not given).
 */
export function notificationContent(type: NotificationType, data: Data, settings: LocaleSettings = DEFAULT_LOCALE_SETTINGS): { title: string; message: string } {
  return CONTENT[type](data, words(settings));
}
