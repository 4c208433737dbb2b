import type { NotificationType } from '../../db/entities/notification.js';

type Data = Record<string, unknown>;

const text = (v: unknown): string => (v === undefined || v === null ? '' : String(v));

/** How to pay, from payment_details (DECISIONS §5 shapes); a QR code and its app link may both be there. */
function paymentInstructions(d: Data): string {
  if (d.va_number) return ` to virtual account ${text(d.bank).toUpperCase()} ${text(d.va_number)}`;
  if (d.bill_key) return ` with Mandiri bill key ${text(d.bill_key)} (biller code ${text(d.biller_code)})`;
  if (d.qr_code_url) return ` by scanning ${text(d.qr_code_url)}${d.deeplink_url ? ` or in the app: ${text(d.deeplink_url)}` : ''}`;
  if (d.deeplink_url) return ` in the app: ${text(d.deeplink_url)}`;
  if (d.redirect_url) return ` by completing card verification at ${text(d.redirect_url)}`;
  return '';
}

/** Title and message of each notification type, from the event's data. */
const CONTENT: Record<NotificationType, (d: Data) => { title: string; message: string }> = {
  payment_pending: (d) => ({
    title: 'Payment waiting',
    message: `Please pay ${text(d.currency)} ${text(d.amount)} for ${d.topup_id ? 'wallet top-up' : 'order'} ${text(d.order_id)}${paymentInstructions(d)}${d.expiry_time ? ` before ${text(d.expiry_time)}` : ''}.`,
  }),
  payment_succeeded: (d) => ({ title: 'Payment received', message: `We received ${text(d.currency)} ${text(d.amount)} for order ${text(d.order_id)}. Thank you.` }),
  payment_failed: (d) => ({ title: 'Payment failed', message: `The payment for order ${text(d.order_id)} did not go through (${text(d.gateway_status)}).` }),
  payment_credited_to_wallet: (d) => ({
    title: 'Payment credited to your wallet',
    message: `${text(d.currency)} ${text(d.amount)} from order ${text(d.order_id)} could not be used (${text(d.reason).replace(/_/g, ' ')}), so ${d.credited === false ? 'support will refund it to you' : 'it was added to your wallet'}.`,
  }),
  payment_refunded: (d) => ({ title: 'Payment refunded', message: `${text(d.currency)} ${text(d.refunded_amount)} of order ${text(d.order_id)} has been refunded.` }),
  subscription_activated: (d) => ({ title: 'Subscription active', message: `Your ${text(d.plan_name)} subscription is active.` }),
  subscription_past_due: (d) => ({ title: 'Payment overdue', message: `Your ${text(d.plan_name)} subscription is past due; please complete the payment to keep access.` }),
  subscription_canceled: (d) => ({ title: 'Subscription canceled', message: `Your ${text(d.plan_name)} subscription has been canceled.` }),
  subscription_paused: (d) => ({ title: 'Subscription paused', message: `Your ${text(d.plan_name)} subscription is paused.` }),
  subscription_resumed: (d) => ({ title: 'Subscription resumed', message: `Your ${text(d.plan_name)} subscription is active again.` }),
  subscription_plan_changed: (d) => ({ title: 'Plan changed', message: `Your subscription moved from ${text(d.old_plan_name)} to ${text(d.plan_name)}.` }),
  subscription_renewed: (d) => ({ title: 'Subscription renewed', message: `Your ${text(d.plan_name)} subscription renewed until ${text(d.current_period_end)}.` }),
  subscription_expired: (d) => ({ title: 'Subscription ended', message: `Your ${text(d.plan_name)} subscription reached its last billing cycle.` }),
  trial_will_end: (d) => ({ title: 'Trial ending soon', message: `Your ${text(d.plan_name)} trial ends on ${text(d.trial_end)}.` }),
  topup_succeeded: (d) => ({ title: 'Top-up received', message: `${text(d.currency)} ${text(d.amount)} was added to your wallet.` }),
  topup_failed: (d) => ({ title: 'Top-up failed', message: `The top-up ${text(d.order_id)} did not go through.` }),
  topup_expired: (d) => ({ title: 'Top-up expired', message: `The top-up ${text(d.order_id)} expired before it was paid.` }),
  payment_reversed: (d) => ({
    title: 'Payment reversed',
    message: `Your bank reversed the payment of ${text(d.currency)} ${text(d.amount)} for ${d.topup_id ? 'wallet top-up' : 'order'} ${text(d.order_id)}${d.topup_id ? '; the amount was taken back from your wallet' : '; please pay the invoice again'}.`,
  }),
  payment_charged_back: (d) => ({
    title: 'Payment charged back',
    message: `Your card issuer charged back ${text(d.currency)} ${text(d.chargeback_amount)} of ${d.topup_id ? 'wallet top-up' : 'order'} ${text(d.order_id)}${d.topup_id ? '; the amount was taken back from your wallet' : d.fully_charged_back === false ? '; your subscription is unchanged' : '; please pay the invoice again'}.`,
  }),
  card_expiring: (d) => ({
    title: 'Saved card expiring',
    message: `The card saved for your ${text(d.plan_name)} subscription stops working on ${text(d.card_expires_at)}, before the next renewal on ${text(d.next_billing_date)}. Pay with a new card to keep it.`,
  }),
};

export function notificationContent(type: NotificationType, data: Data): { title: string; message: string } {
  return CONTENT[type](data);
}
