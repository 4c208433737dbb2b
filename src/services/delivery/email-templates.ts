import type { NotificationType } from '../../db/entities/notification.js';
import { PAYMENT_METHOD_NAMES } from '../../domain/payment-method-names.js';

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

/** "150000.00" → "150,000.00"; grouping on the string, so no float ever touches the amount. */
function groupDigits(amount: string): string {
  const match = /^(-?)(\d+)(\.\d+)?$/.exec(amount);
  if (!match) return amount;
  return `${match[1]}${match[2].replace(/\B(?=(\d{3})+(?!\d))/g, ',')}${match[3] ?? ''}`;
}

function money(currency: unknown, amount: unknown): string {
  const value = str(amount).trim();
  if (!value) return '';
  return `${str(currency).trim()} ${groupDigits(value)}`.trim();
}

/** ISO timestamps read as "2026-11-22 09:30 UTC"; anything else is shown as given. */
function when(value: unknown): string {
  const raw = str(value).trim();
  if (!/^\d{4}-\d{2}-\d{2}T/.test(raw)) return raw;
  const date = new Date(raw);
  if (Number.isNaN(date.getTime())) return raw;
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** A date (renewal, trial end) without the time of day when it is exactly midnight UTC. */
function day(value: unknown): string {
  const shown = when(value);
  return shown.endsWith(' 00:00 UTC') ? shown.slice(0, 10) : shown;
}

const method = (d: Data): string => PAYMENT_METHOD_NAMES[str(d.payment_type)] ?? str(d.payment_type);
const plan = (d: Data): string => (d.plan_name ? `${str(d.plan_name)} subscription` : 'subscription');
const ref = (d: Data): string => (d.order_id ? ` ${str(d.order_id)}` : '');

function paymentPending(d: Data): EmailDraft {
  const amount = money(d.currency, d.amount);
  const paragraphs: string[] = [];
  const facts: [string, string][] = [['Order', str(d.order_id)], ['Amount', amount]];
  const actions: { label: string; url: string }[] = [];
  if (d.va_number) {
    const bank = str(d.bank).toUpperCase();
    paragraphs.push(`Transfer exactly ${amount} to the ${bank ? `${bank} ` : ''}virtual account number below.`);
    facts.push(['Bank', bank], ['Virtual account number', str(d.va_number)]);
  }
  if (d.bill_key) {
    paragraphs.push(`Pay ${amount} with Mandiri bill payment (ATM, internet or mobile banking) using the biller code and bill key below.`);
    facts.push(['Biller code', str(d.biller_code)], ['Bill key', str(d.bill_key)]);
  }
  if (d.qr_code_url) {
    paragraphs.push(`Scan the QR code with your ${method(d) || 'payment'} app to pay ${amount}.`);
    actions.push({ label: 'Open the QR code', url: str(d.qr_code_url) });
    facts.push(['QR code', str(d.qr_code_url)]);
  }
  if (d.deeplink_url) actions.push({ label: 'Pay in the app', url: str(d.deeplink_url) });
  if (d.redirect_url) {
    paragraphs.push(`Complete the card verification to pay ${amount}.`);
    actions.push({ label: 'Verify the card payment', url: str(d.redirect_url) });
  }
  if (paragraphs.length === 0) paragraphs.push(`Please complete the payment of ${amount}.`);
  facts.push(['Payment method', method(d)], ['Pay before', when(d.expiry_time)]);
  return { subject: `Payment instructions for order${ref(d)}: ${amount}`, heading: 'Your payment is waiting', paragraphs, facts, actions };
}

/** An immediate change (with its proration), or one scheduled for the next renewal. */
function planChanged(d: Data): EmailDraft {
  const from = d.old_plan_name ? ` from ${str(d.old_plan_name)}` : '';
  const to = str(d.plan_name) || 'a new plan';
  const net = str(d.proration).trim();
  const credited = net.startsWith('-');
  const charged = net !== '' && !credited && !/^0+(\.0+)?$/.test(net);
  if (d.scheduled === true) {
    return {
      subject: `Your plan will change${from} to ${to} at renewal`,
      heading: 'Plan change scheduled',
      paragraphs: ['Your current plan stays in place until the end of the period; the new plan starts with the next renewal.'],
      facts: [['Current plan', str(d.old_plan_name)], ['New plan', str(d.plan_name)], ['Changes on', day(d.current_period_end)]],
    };
  }
  return {
    subject: `Your plan changed${from} to ${to}`,
    heading: 'Plan changed',
    paragraphs: ['Your subscription is now on a different plan.'],
    facts: [
      ['Previous plan', str(d.old_plan_name)],
      ['New plan', str(d.plan_name)],
      ['Prorated charge', charged ? money(d.currency, net) : ''],
      ['Credited to your wallet', credited ? money(d.currency, net.slice(1)) : ''],
      ['Amount charged', money(d.currency, d.amount)],
      ['Current period ends', day(d.current_period_end)],
    ],
  };
}

const TEMPLATES: Record<NotificationType, (d: Data) => EmailDraft> = {
  payment_pending: paymentPending,
  payment_succeeded: (d) => ({
    subject: `Receipt: ${money(d.currency, d.amount)} paid for order${ref(d)}`,
    heading: 'Payment received',
    paragraphs: ['Thank you. This email is your receipt.'],
    facts: [
      ['Order', str(d.order_id)],
      ['Amount paid', money(d.currency, d.amount)],
      ['Payment method', method(d)],
      ['Paid on', when(d.paid_at)],
      ['Invoice', str(d.invoice_number)],
      ['Transaction', str(d.transaction_id)],
    ],
  }),
  payment_failed: (d) => ({
    subject: `Payment for order${ref(d)} did not go through`,
    heading: 'Payment failed',
    paragraphs: ['The payment was not completed. If you still want to pay, start a new payment from your account.'],
    facts: [['Order', str(d.order_id)], ['Amount', money(d.currency, d.amount)], ['Payment method', method(d)], ['Reason', str(d.gateway_status)]],
  }),
  payment_refunded: (d) => ({
    subject: `Refund of ${money(d.currency, d.refunded_amount)} for order${ref(d)}`,
    heading: 'Payment refunded',
    paragraphs: ['Depending on where the money goes back to, it can take a few days to appear.'],
    facts: [['Order', str(d.order_id)], ['Refunded', money(d.currency, d.refunded_amount)], ['Original amount', money(d.currency, d.amount)], ['Refunded to', str(d.destination)]],
  }),
  subscription_activated: (d) => ({
    subject: `Your ${plan(d)} is active`,
    heading: 'Subscription active',
    paragraphs: [`Your ${plan(d)} is active. Thank you for subscribing.`],
    facts: [['Plan', str(d.plan_name)], ['Current period ends', day(d.current_period_end)]],
  }),
  subscription_past_due: (d) => ({
    subject: `Action needed: your ${plan(d)} payment is overdue`,
    heading: 'Payment overdue',
    paragraphs: [`We could not collect the payment for your ${plan(d)}. Please complete the payment to keep your access.`],
    facts: [['Plan', str(d.plan_name)], ['Amount due', money(d.currency, d.amount)], ['Order', str(d.order_id)]],
  }),
  subscription_canceled: (d) => ({
    subject: `Your ${plan(d)} has been canceled`,
    heading: 'Subscription canceled',
    paragraphs: [`Your ${plan(d)} has been canceled.`],
    facts: [['Plan', str(d.plan_name)], ['Canceled on', when(d.canceled_at)], ['Reason', str(d.cancel_reason).replace(/_/g, ' ')]],
  }),
  subscription_paused: (d) => ({
    subject: `Your ${plan(d)} is paused`,
    heading: 'Subscription paused',
    paragraphs: [`Your ${plan(d)} is paused. You are not billed while it is paused; resume it at any time.`],
    facts: [['Plan', str(d.plan_name)], ['Paused on', when(d.paused_at)]],
  }),
  subscription_resumed: (d) => ({
    subject: `Your ${plan(d)} is active again`,
    heading: 'Subscription resumed',
    paragraphs: [`Your ${plan(d)} is active again.`],
    facts: [['Plan', str(d.plan_name)], ['Next billing date', day(d.next_billing_date)], ['Current period ends', day(d.current_period_end)]],
  }),
  subscription_plan_changed: planChanged,
  subscription_renewed: (d) => ({
    subject: `Your ${plan(d)} renewed${d.current_period_end ? ` until ${day(d.current_period_end)}` : ''}`,
    heading: 'Subscription renewed',
    paragraphs: [`Your ${plan(d)} has been renewed.`],
    facts: [['Plan', str(d.plan_name)], ['Renewed until', day(d.current_period_end)], ['Amount', money(d.currency, d.amount)]],
  }),
  subscription_expired: (d) => ({
    subject: `Your ${plan(d)} has ended`,
    heading: 'Subscription ended',
    paragraphs: [`Your ${plan(d)} reached its last billing cycle and has ended. You can subscribe again at any time.`],
    facts: [['Plan', str(d.plan_name)], ['Ended on', day(d.current_period_end)], ['Billing cycles', str(d.cycles_completed)]],
  }),
  trial_will_end: (d) => ({
    subject: `Your ${str(d.plan_name) || ''} trial ends${d.trial_end ? ` on ${day(d.trial_end)}` : ' soon'}`.replace(/\s+/g, ' '),
    heading: 'Your trial ends soon',
    paragraphs: [`Your trial of the ${plan(d)} ends soon. After it ends, the subscription continues as a paid plan.`],
    facts: [['Plan', str(d.plan_name)], ['Trial ends', day(d.trial_end)], ['Price after the trial', money(d.currency, d.price ?? d.amount)]],
  }),
  topup_succeeded: (d) => ({
    subject: `Top-up of ${money(d.currency, d.amount)} received`,
    heading: 'Top-up received',
    paragraphs: [`${money(d.currency, d.amount)} was added to your wallet.`],
    facts: [['Order', str(d.order_id)], ['Amount', money(d.currency, d.amount)], ['Wallet balance', money(d.currency, d.balance_after ?? d.balance)]],
  }),
  topup_failed: (d) => ({
    subject: `Top-up${ref(d)} did not go through`,
    heading: 'Top-up failed',
    paragraphs: ['The top-up was not completed and your wallet was not credited. You can start a new top-up at any time.'],
    facts: [['Order', str(d.order_id)], ['Amount', money(d.currency, d.amount)]],
  }),
  payment_credited_to_wallet: (d) => ({
    subject: `${money(d.currency, d.amount)} added to your wallet${ref(d)}`,
    heading: 'Payment credited to your wallet',
    paragraphs: [
      `A payment arrived that could no longer be used (the invoice was already paid, the subscription had ended or the top-up was canceled). ${d.credited === false ? 'It is in another currency than your wallet, so our support team will refund it to you.' : 'Its full amount was added to your wallet balance.'}`,
    ],
    facts: [['Order', str(d.order_id)], ['Amount', money(d.currency, d.amount)]],
  }),
  topup_expired: (d) => ({
    subject: `Top-up${ref(d)} expired`,
    heading: 'Top-up expired',
    paragraphs: ['The top-up expired before the payment arrived, so your wallet was not credited. Start a new top-up if you still want to add funds.'],
    facts: [['Order', str(d.order_id)], ['Amount', money(d.currency, d.amount)]],
  }),
  payment_reversed: (d) => ({
    subject: `Payment${ref(d)} was reversed`,
    heading: 'Payment reversed',
    paragraphs: [
      d.topup_id
        ? 'Your bank took back a top-up payment that had already arrived, so its amount was taken back from your wallet.'
        : 'Your bank took back a payment that had already arrived, so its invoice is open again. Please pay it to keep your subscription.',
    ],
    facts: [['Order', str(d.order_id)], ['Amount', money(d.currency, d.amount)]],
  }),
  payment_charged_back: (d) => ({
    subject: `Payment${ref(d)} was charged back`,
    heading: 'Payment charged back',
    paragraphs: [
      d.topup_id
        ? 'Your card issuer took back a top-up payment through a chargeback, so its amount was taken back from your wallet.'
        : d.fully_charged_back === false
          ? `Your card issuer took back ${money(d.currency, d.chargeback_amount)} of this payment through a chargeback. A credit note records it; your subscription is unchanged.`
          : 'Your card issuer took back this payment through a chargeback, so its invoice is open again. Please pay it to keep your subscription.',
    ],
    facts: [['Order', str(d.order_id)], ['Amount', money(d.currency, d.amount)], ['Charged back', money(d.currency, d.chargeback_amount)]],
  }),
  card_expiring: (d) => ({
    subject: 'The card saved for your subscription is expiring',
    heading: 'Saved card expiring',
    paragraphs: [`The card saved for your ${plan(d)} stops working before the next renewal. Pay the next invoice with a new card to keep your subscription running.`],
    facts: [['Card valid until', day(d.card_expires_at)], ['Next renewal', day(d.next_billing_date)]],
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

const FOOTER = 'You receive this email because of activity on your billing account.';

function render(draft: EmailDraft, recipientName: string): RenderedEmail {
  const facts = draft.facts.filter(([, value]) => value.trim() !== '');
  const actions = (draft.actions ?? []).flatMap((a) => {
    const url = safeUrl(a.url);
    return url ? [{ label: a.label, url }] : [];
  });
  const greeting = `Hello${recipientName ? ` ${recipientName}` : ''},`;
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
    FOOTER,
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
    `<p style="color: #777; font-size: 12px;">${e(FOOTER)}</p>`,
    '</body></html>',
  ]
    .filter((line) => line !== '')
    .join('\n');

  return { subject, text, html };
}

/** The email for a notification entry: subject, plain text and HTML, with every data value escaped in the HTML. */
export function renderNotificationEmail(type: NotificationType, data: Data, recipientName = ''): RenderedEmail {
  const template = TEMPLATES[type];
  if (!template) throw new Error(`No email template for notification type "${type}".`);
  return render(template(data ?? {}), recipientName);
}
