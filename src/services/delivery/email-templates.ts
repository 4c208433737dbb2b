import type { NotificationType } from '../../db/entities/notification.js';
import type { EmailLabels, LocaleSettings } from '../documents/labels/labels.js';
import { DEFAULT_LOCALE_SETTINGS, localisation } from '../documents/labels/localisation.js';

type Data = Record<string, unknown>;

/** What a template decides; rendering to text and HTML (with escaping) happens in one place. */
interface EmailDraft {
  subject: string;
  heading: string;
  paragraphs: string[];
  /** Label and value rows; rows with an empty value are left out. */
  facts: [string, string][];
  /** Links (payment pages, QR codes); only http(s) URLs become links. */
  actions?: { label: string; url: string }[];
}

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

const str = (v: unknown): string => (v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));

/** An ISO timestamp of the event data as an instant; null for anything else. */
function instant(value: unknown): Date | null {
  const raw = str(value).trim();
  if (!/^\d{4}-\d{2}-\d{2}T/.test(raw)) return null;
  const at = new Date(raw);
  return Number.isNaN(at.getTime()) ? null : at;
}

/**
 * The words and formats of one email: the catalogue of BILLING_LOCALE (src/services/documents/
 * labels/), amounts and dates as the documents write them, every date in BILLING_TIMEZONE (an
 * event at 18:30 UTC on 31 March reads 1 April in Jakarta).
 */
interface Writer {
  t: EmailLabels;
  money(currency: unknown, amount: unknown): string;
  /** An event's moment (paid, canceled, expires), with its time of day and zone. */
  when(value: unknown): string;
  /** A date (a period's end, a renewal, a trial's end): its day in the zone. */
  day(value: unknown): string;
  method(d: Data): string;
  /** "the Pro subscription" in the catalogue's words. */
  subscription(d: Data): string;
}

function writer(settings: LocaleSettings): Writer {
  const { labels, format } = localisation(settings);
  const methods: Record<string, string> = labels.paymentMethods;
  return {
    t: labels.email,
    money: (currency, amount) => {
      const value = str(amount).trim();
      return value ? format.money(value, str(currency)) : '';
    },
    when: (value) => {
      const at = instant(value);
      return at ? format.dateTime(at) : str(value).trim();
    },
    day: (value) => {
      const at = instant(value);
      return at ? format.date(at) : str(value).trim();
    },
    method: (d) => methods[str(d.payment_type)] ?? str(d.payment_type),
    subscription: (d) => labels.email.subscription(str(d.plan_name)),
  };
}

function paymentPending(d: Data, { t, money, when, method }: Writer): EmailDraft {
  const amount = money(d.currency, d.amount);
  const paragraphs: string[] = [];
  const facts: [string, string][] = [[t.facts.order, str(d.order_id)], [t.facts.amount, amount]];
  const actions: { label: string; url: string }[] = [];
  if (d.va_number) {
    const bank = str(d.bank).toUpperCase();
    paragraphs.push(t.paymentPending.transfer(amount, bank));
    facts.push([t.facts.bank, bank], [t.facts.vaNumber, str(d.va_number)]);
  }
  if (d.bill_key) {
    paragraphs.push(t.paymentPending.billPayment(amount));
    facts.push([t.facts.billerCode, str(d.biller_code)], [t.facts.billKey, str(d.bill_key)]);
  }
  if (d.qr_code_url) {
    paragraphs.push(t.paymentPending.scanQr(amount, method(d)));
    actions.push({ label: t.actions.openQr, url: str(d.qr_code_url) });
    facts.push([t.facts.qrCode, str(d.qr_code_url)]);
  }
  if (d.deeplink_url) actions.push({ label: t.actions.payInApp, url: str(d.deeplink_url) });
  if (d.redirect_url) {
    paragraphs.push(t.paymentPending.verifyCard(amount));
    actions.push({ label: t.actions.verifyCard, url: str(d.redirect_url) });
  }
  if (paragraphs.length === 0) paragraphs.push(t.paymentPending.complete(amount));
  facts.push([t.facts.paymentMethod, method(d)], [t.facts.payBefore, when(d.expiry_time)]);
  return { subject: t.paymentPending.subject(str(d.order_id), amount), heading: t.paymentPending.heading, paragraphs, facts, actions };
}

/** An immediate change (with its proration), or one scheduled for the next renewal. */
function planChanged(d: Data, { t, money, day }: Writer): EmailDraft {
  const from = str(d.old_plan_name);
  const to = str(d.plan_name) || t.planChanged.newPlan;
  const net = str(d.proration).trim();
  const credited = net.startsWith('-');
  const charged = net !== '' && !credited && !/^0+(\.0+)?$/.test(net);
  if (d.scheduled === true) {
    return {
      subject: t.planChangeScheduled.subject(from, to),
      heading: t.planChangeScheduled.heading,
      paragraphs: [t.planChangeScheduled.body],
      facts: [[t.facts.currentPlan, from], [t.facts.newPlan, str(d.plan_name)], [t.facts.changesOn, day(d.current_period_end)]],
    };
  }
  return {
    subject: t.planChanged.subject(from, to),
    heading: t.planChanged.heading,
    paragraphs: [t.planChanged.body],
    facts: [
      [t.facts.previousPlan, from],
      [t.facts.newPlan, str(d.plan_name)],
      [t.facts.proratedCharge, charged ? money(d.currency, net) : ''],
      [t.facts.creditedToWallet, credited ? money(d.currency, net.slice(1)) : ''],
      [t.facts.amountCharged, money(d.currency, d.amount)],
      [t.facts.currentPeriodEnds, day(d.current_period_end)],
    ],
  };
}

/** Where a refund went back to, in words when it is one of ours (gateway, wallet). */
function refundDestination(d: Data, t: EmailLabels): string {
  const destination = str(d.destination);
  return destination === 'gateway' || destination === 'wallet' ? t.refundDestinations[destination] : destination;
}

const order = (d: Data): string => str(d.order_id);

const TEMPLATES: Record<NotificationType, (d: Data, w: Writer) => EmailDraft> = {
  payment_pending: paymentPending,
  payment_succeeded: (d, { t, money, method, when }) => ({
    subject: t.paymentSucceeded.subject(money(d.currency, d.amount), order(d)),
    heading: t.paymentSucceeded.heading,
    paragraphs: [t.paymentSucceeded.body],
    facts: [
      [t.facts.order, order(d)],
      [t.facts.amountPaid, money(d.currency, d.amount)],
      [t.facts.paymentMethod, method(d)],
      [t.facts.paidOn, when(d.paid_at)],
      [t.facts.invoice, str(d.invoice_number)],
      [t.facts.transaction, str(d.transaction_id)],
    ],
  }),
  payment_failed: (d, { t, money, method }) => ({
    subject: t.paymentFailed.subject(order(d)),
    heading: t.paymentFailed.heading,
    paragraphs: [t.paymentFailed.body],
    facts: [[t.facts.order, order(d)], [t.facts.amount, money(d.currency, d.amount)], [t.facts.paymentMethod, method(d)], [t.facts.reason, str(d.gateway_status)]],
  }),
  payment_refunded: (d, { t, money }) => ({
    subject: t.paymentRefunded.subject(money(d.currency, d.refunded_amount), order(d)),
    heading: t.paymentRefunded.heading,
    paragraphs: [t.paymentRefunded.body],
    facts: [
      [t.facts.order, order(d)],
      [t.facts.refunded, money(d.currency, d.refunded_amount)],
      [t.facts.originalAmount, money(d.currency, d.amount)],
      [t.facts.refundedTo, refundDestination(d, t)],
    ],
  }),
  subscription_activated: (d, { t, day, subscription }) => ({
    subject: t.subscriptionActivated.subject(subscription(d)),
    heading: t.subscriptionActivated.heading,
    paragraphs: [t.subscriptionActivated.body(subscription(d))],
    facts: [[t.facts.plan, str(d.plan_name)], [t.facts.currentPeriodEnds, day(d.current_period_end)]],
  }),
  subscription_past_due: (d, { t, money, subscription }) => ({
    subject: t.subscriptionPastDue.subject(subscription(d)),
    heading: t.subscriptionPastDue.heading,
    paragraphs: [t.subscriptionPastDue.body(subscription(d))],
    facts: [[t.facts.plan, str(d.plan_name)], [t.facts.amountDue, money(d.currency, d.amount)], [t.facts.order, order(d)]],
  }),
  subscription_canceled: (d, { t, when, subscription }) => ({
    subject: t.subscriptionCanceled.subject(subscription(d)),
    heading: t.subscriptionCanceled.heading,
    paragraphs: [t.subscriptionCanceled.body(subscription(d))],
    facts: [[t.facts.plan, str(d.plan_name)], [t.facts.canceledOn, when(d.canceled_at)], [t.facts.reason, str(d.cancel_reason).replace(/_/g, ' ')]],
  }),
  subscription_paused: (d, { t, when, subscription }) => ({
    subject: t.subscriptionPaused.subject(subscription(d)),
    heading: t.subscriptionPaused.heading,
    paragraphs: [t.subscriptionPaused.body(subscription(d))],
    facts: [[t.facts.plan, str(d.plan_name)], [t.facts.pausedOn, when(d.paused_at)]],
  }),
  subscription_resumed: (d, { t, day, subscription }) => ({
    subject: t.subscriptionResumed.subject(subscription(d)),
    heading: t.subscriptionResumed.heading,
    paragraphs: [t.subscriptionResumed.body(subscription(d))],
    facts: [[t.facts.plan, str(d.plan_name)], [t.facts.nextBillingDate, day(d.next_billing_date)], [t.facts.currentPeriodEnds, day(d.current_period_end)]],
  }),
  subscription_plan_changed: planChanged,
  subscription_renewed: (d, { t, money, day, subscription }) => ({
    subject: t.subscriptionRenewed.subject(subscription(d), day(d.current_period_end)),
    heading: t.subscriptionRenewed.heading,
    paragraphs: [t.subscriptionRenewed.body(subscription(d))],
    facts: [[t.facts.plan, str(d.plan_name)], [t.facts.renewedUntil, day(d.current_period_end)], [t.facts.amount, money(d.currency, d.amount)]],
  }),
  subscription_expired: (d, { t, day, subscription }) => ({
    subject: t.subscriptionExpired.subject(subscription(d)),
    heading: t.subscriptionExpired.heading,
    paragraphs: [t.subscriptionExpired.body(subscription(d))],
    facts: [[t.facts.plan, str(d.plan_name)], [t.facts.endedOn, day(d.current_period_end)], [t.facts.billingCycles, str(d.cycles_completed)]],
  }),
  trial_will_end: (d, { t, money, day, subscription }) => ({
    subject: t.trialWillEnd.subject(str(d.plan_name), day(d.trial_end)),
    heading: t.trialWillEnd.heading,
    paragraphs: [t.trialWillEnd.body(subscription(d))],
    facts: [[t.facts.plan, str(d.plan_name)], [t.facts.trialEnds, day(d.trial_end)], [t.facts.priceAfterTrial, money(d.currency, d.price ?? d.amount)]],
  }),
  topup_succeeded: (d, { t, money }) => ({
    subject: t.topupSucceeded.subject(money(d.currency, d.amount)),
    heading: t.topupSucceeded.heading,
    paragraphs: [t.topupSucceeded.body(money(d.currency, d.amount))],
    facts: [[t.facts.order, order(d)], [t.facts.amount, money(d.currency, d.amount)], [t.facts.walletBalance, money(d.currency, d.balance_after ?? d.balance)]],
  }),
  topup_failed: (d, { t, money }) => ({
    subject: t.topupFailed.subject(order(d)),
    heading: t.topupFailed.heading,
    paragraphs: [t.topupFailed.body],
    facts: [[t.facts.order, order(d)], [t.facts.amount, money(d.currency, d.amount)]],
  }),
  payment_credited_to_wallet: (d, { t, money }) => ({
    subject: t.paymentCreditedToWallet.subject(money(d.currency, d.amount), order(d)),
    heading: t.paymentCreditedToWallet.heading,
    paragraphs: [t.paymentCreditedToWallet.body(d.credited !== false)],
    facts: [[t.facts.order, order(d)], [t.facts.amount, money(d.currency, d.amount)]],
  }),
  topup_expired: (d, { t, money }) => ({
    subject: t.topupExpired.subject(order(d)),
    heading: t.topupExpired.heading,
    paragraphs: [t.topupExpired.body],
    facts: [[t.facts.order, order(d)], [t.facts.amount, money(d.currency, d.amount)]],
  }),
  payment_reversed: (d, { t, money }) => ({
    subject: t.paymentReversed.subject(order(d)),
    heading: t.paymentReversed.heading,
    paragraphs: [d.topup_id ? t.paymentReversed.topup : t.paymentReversed.invoice],
    facts: [[t.facts.order, order(d)], [t.facts.amount, money(d.currency, d.amount)]],
  }),
  payment_charged_back: (d, { t, money }) => ({
    subject: t.paymentChargedBack.subject(order(d)),
    heading: t.paymentChargedBack.heading,
    paragraphs: [
      d.topup_id
        ? t.paymentChargedBack.topup
        : d.fully_charged_back === false
          ? t.paymentChargedBack.partly(money(d.currency, d.chargeback_amount))
          : t.paymentChargedBack.invoice,
    ],
    facts: [[t.facts.order, order(d)], [t.facts.amount, money(d.currency, d.amount)], [t.facts.chargedBack, money(d.currency, d.chargeback_amount)]],
  }),
  card_expiring: (d, { t, day, subscription }) => ({
    subject: t.cardExpiring.subject,
    heading: t.cardExpiring.heading,
    paragraphs: [t.cardExpiring.body(subscription(d))],
    facts: [[t.facts.cardValidUntil, day(d.card_expires_at)], [t.facts.nextRenewal, day(d.next_billing_date)]],
  }),
  payment_method_required: (d, { t, subscription }) => ({
    subject: t.paymentMethodRequired.subject,
    heading: t.paymentMethodRequired.heading,
    paragraphs: [t.paymentMethodRequired.body(subscription(d))],
    facts: [[t.facts.order, order(d)]],
  }),
};

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

/** Only absolute http(s) URLs become links: a `javascript:` URL in event data stays inert text. */
function safeUrl(url: string): string | null {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.toString() : null;
  } catch {
    return null;
  }
}

function render(draft: EmailDraft, recipientName: string, t: EmailLabels): RenderedEmail {
  const facts = draft.facts.filter(([, value]) => value.trim() !== '');
  const actions = (draft.actions ?? []).flatMap((a) => {
    const url = safeUrl(a.url);
    return url ? [{ label: a.label, url }] : [];
  });
  const greeting = t.greeting(recipientName);
  // Headers cannot carry line breaks; keep the subject to one line of sane length.
  const subject = draft.subject.replace(/[\r\n\t]+/g, ' ').replace(/\s{2,}/g, ' ').trim().slice(0, 200);

  const text = [
    greeting,
    '',
    ...draft.paragraphs.flatMap((p) => [p, '']),
    ...facts.map(([label, value]) => `${label}: ${value}`),
    ...(actions.length ? ['', ...actions.map((a) => `${a.label}: ${a.url}`)] : []),
    '',
    '-- ',
    t.footer,
  ].join('\n');

  const e = escapeHtml;
  const html = [
    '<!doctype html>',
    `<html><head><meta charset="utf-8"><title>${e(subject)}</title></head>`,
    '<body style="font-family: Arial, Helvetica, sans-serif; color: #222; line-height: 1.5;">',
    `<h1 style="font-size: 20px;">${e(draft.heading)}</h1>`,
    `<p>${e(greeting)}</p>`,
    ...draft.paragraphs.map((p) => `<p>${e(p)}</p>`),
    facts.length
      ? `<table style="border-collapse: collapse;">${facts
          .map(([label, value]) => `<tr><th style="text-align: left; padding: 4px 12px 4px 0;">${e(label)}</th><td style="padding: 4px 0;">${e(value)}</td></tr>`)
          .join('')}</table>`
      : '',
    ...actions.map((a) => `<p><a href="${e(a.url)}" style="color: #0b5cad;">${e(a.label)}</a></p>`),
    `<p style="color: #777; font-size: 12px;">${e(t.footer)}</p>`,
    '</body></html>',
  ]
    .filter((line) => line !== '')
    .join('\n');

  return { subject, text, html };
}

/**
 * The email for a notification entry: subject, plain text and HTML, with every data value
 * escaped in the HTML, in the words of `settings.locale` with every date in `settings.timeZone`
 * (the configuration's `documents`; the defaults of BILLING_LOCALE and BILLING_TIMEZONE when
 * not given).
 */
export function renderNotificationEmail(type: NotificationType, data: Data, recipientName = '', settings: LocaleSettings = DEFAULT_LOCALE_SETTINGS): RenderedEmail {
  const template = TEMPLATES[type];
  if (!template) throw new Error(`No email template for notification type "${type}".`);
  const w = writer(settings);
  return render(template(data ?? {}, w), recipientName, w.t);
}
