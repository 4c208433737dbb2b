import type { Invoice } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import type { RenewalFailure, Subscription } from '../../db/entities/subscription.js';
import { compare, isPositive } from '../../domain/money.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import { capExpiryMinutes } from '../../gateway/expiry-limits.js';
import type { Bank } from '../../gateway/types.js';
import type { DataContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { applyGatewayEvent } from '../gateway-events/apply-gateway-event.js';
import { subscriptionData } from '../notifications/payloads.js';
import type { GatewayEvent } from '../gateway-events/gateway-event.js';
import { openPayment } from '../gateway-events/open-payment.js';
import { cancelInvoicePayments } from '../payments/cancel-invoice-payments.js';
import { newSubscriptionOrderId } from '../payments/order-id.js';
import type { SubmitPaymentOptions } from '../gateway-events/submit-payment.js';
import { getOrCreateWallet } from '../wallet/wallet-ledger.js';
import { RESUBMIT_AFTER_MS } from './dunning-schedule.js';
import { noSavedCard, renewalFailure } from '../subscription-rules/record-renewal-failure.js';

export type BillingCounter =
  | 'renewed'
  | 'charged'
  | 'pending'
  | 'failed'
  /** A charge that failed on our side or the gateway's (wrong key, outage): no dunning step taken. */
  | 'merchant_failed'
  | 'retried'
  | 'past_due'
  | 'canceled'
  | 'expired'
  | 'trial_ended'
  | 'trial_notices'
  | 'card_notices'
  | 'plan_changes';

export type Counts = Partial<Record<BillingCounter, number>>;

/** Gateway work for after the commit: side effects only after it (docs/architecture.md, 'How things travel'). */
export interface AfterCommit {
  cancelOrderIds: string[];
  submit: { paymentId: string; invoiceId: string; options: SubmitPaymentOptions } | null;
  /** A renewal payment committed but never answered: ask the gateway, and charge it if it never heard of it. */
  resubmit: { subscriptionId: string; invoiceId: string } | null;
}

export interface Collection {
  counts: Counts;
  after: AfterCommit;
  /** A customer's payment that cannot be made (no saved card): an outcome of the run, not its failure. */
  outcome: string | null;
  /** Why this attempt failed, to keep on the subscription; null when it did not fail (yet). */
  failure?: RenewalFailure | null;
  /** The renewal was paid at once (a wallet). */
  paid?: boolean;
}

export const nothingAfter = (): AfterCommit => ({ cancelOrderIds: [], submit: null, resubmit: null });

/** Moves a renewing subscription to past_due (once) and tells the user. */
export function markPastDue(ctx: DataContext, sub: Subscription, at: Date): boolean {
  if (sub.status === 'past_due' || !subscriptionStates.applyIfAllowed(sub, 'mark_past_due', at)) return false;
  notify(ctx, sub.user, 'subscription_past_due', subscriptionData(sub));
  return true;
}

/**
 * A wallet that cannot cover a renewal: the attempt is recorded as a wallet payment the
 * "gateway" (the wallet) denied, through applyGatewayEvent like any refusal, so the payment
 * history shows it and the user gets the same payment_failed notification.
 */
async function declineWalletPayment(ctx: DataContext, sub: Subscription, invoice: Invoice, reason: string): Promise<Payment> {
  const payment = ctx.em.create(Payment, {
    orderId: newSubscriptionOrderId(),
    user: sub.user,
    subscription: sub,
    invoice,
    status: 'pending',
    paymentType: 'wallet',
    grossAmount: invoice.totalAmount,
    currency: invoice.currency,
    paymentDetails: { decline_reason: reason },
    createdAt: ctx.clock.now(),
  });
  await ctx.em.flush();
  const event: GatewayEvent = {
    orderId: payment.orderId,
    transactionStatus: 'deny',
    fraudStatus: null,
    statusCode: '202',
    grossAmount: payment.grossAmount,
    transactionId: null,
    paymentType: 'wallet',
    refundAmount: null,
    refunds: [],
    raw: { order_id: payment.orderId, transaction_status: 'deny', payment_type: 'wallet', status_message: reason },
  };
  await applyGatewayEvent(ctx, event);
  return payment;
}

/**
 * One attempt to collect an open renewal invoice, inside the caller's transaction: earlier
 * pending payments of the invoice are canceled (at the gateway after the commit), then a
 * wallet is debited at once (or the attempt is declined and the subscription falls past due),
 * and a card (saved token, merchant-initiated) or an asynchronous payment type gets a new
 * pending payment that is sent to the gateway after the commit.
 */
export async function collectInvoice(ctx: DataContext, sub: Subscription, invoice: Invoice, payableUntil: Date): Promise<Collection> {
  const at = ctx.clock.now();
  const after = nothingAfter();
  after.cancelOrderIds.push(...(await cancelInvoicePayments(ctx.em, { invoice }, at)));
  const input = { user: sub.user, subscription: sub, invoice, paymentType: sub.paymentType, amount: invoice.totalAmount, currency: invoice.currency };

  if (!isPositive(invoice.totalAmount)) {
    // A renewal its discount pays in full: paid at once, whatever the payment type (openPayment).
    await openPayment(ctx, input);
    return { counts: { charged: 1 }, after, outcome: null, paid: true };
  }
  if (sub.paymentType === 'wallet') {
    const wallet = await getOrCreateWallet(ctx, sub.user);
    const short =
      wallet.currency !== invoice.currency ? `the wallet holds ${wallet.currency}, the invoice is in ${invoice.currency}`
      : compare(wallet.balance, invoice.totalAmount) < 0 ? `the wallet balance ${wallet.balance} ${wallet.currency} does not cover ${invoice.totalAmount}`
      : null;
    if (short) {
      const before = sub.status;
      await declineWalletPayment(ctx, sub, invoice, short);
      markPastDue(ctx, sub, at);
      const counts: Counts = { failed: 1 };
      if (before !== 'past_due' && sub.status === 'past_due') counts.past_due = 1;
      return { counts, after, outcome: null, failure: renewalFailure(at, 'insufficient_funds', `The wallet could not pay the renewal: ${short}.`) };
    }
    await openPayment(ctx, input);
    return { counts: { charged: 1 }, after, outcome: null, paid: true };
  }

  if (sub.paymentType === 'credit_card' && !sub.cardToken) {
    // Nothing can be charged without the customer; the invoice waits for dunning (or POST /payments/charge/).
    const failure = noSavedCard(at);
    return { counts: { failed: 1 }, after, outcome: `${failure.code}: ${failure.message}`, failure };
  }
  const payment = await openPayment(ctx, input);
  // Looked at again after RESUBMIT_AFTER_MS in case this process dies before the gateway answers.
  const recheck = new Date(at.getTime() + RESUBMIT_AFTER_MS);
  if (!invoice.nextRetryAt || invoice.nextRetryAt.getTime() > recheck.getTime()) invoice.nextRetryAt = recheck;
  after.submit = { paymentId: payment.id, invoiceId: invoice.id, options: renewalSubmitOptions(sub, at, payableUntil) };
  return { counts: {}, after, outcome: null };
}

/**
 * How a renewal payment goes to the gateway: the subscription's bank and saved card, charged
 * merchant-initiated (the customer is not present), payable until `until` (payableMinutes).
 */
export function renewalSubmitOptions(
  sub: Pick<Subscription, 'bank' | 'cardToken' | 'paymentType' | 'customerDetails'>,
  at: Date,
  until: Date,
): SubmitPaymentOptions {
  return {
    bank: (sub.bank as Bank | null) ?? undefined,
    cardToken: sub.cardToken,
    merchantInitiated: sub.paymentType === 'credit_card',
    customer: sub.customerDetails,
    expiryMinutes: payableMinutes(sub, at, until),
  };
}

/**
 * NOTE: an asynchronous renewal payment stays payable at the gateway until the next dunning
 * step (the due date, then the next retry), not for the gateway's default day: otherwise its
 * expiry notification would make the subscription past_due before the invoice is even due.
 */
export function payableMinutes(sub: Pick<Subscription, 'paymentType'>, at: Date, until: Date): number | undefined {
  if (sub.paymentType === 'credit_card' || sub.paymentType === 'wallet') return undefined;
  // NOTE: never beyond what the method allows (a long dunning gap made every ShopeePay or GoPay
  // renewal fail validation): the payment then expires earlier, and the next retry makes a new one.
  return capExpiryMinutes(sub.paymentType, Math.ceil((until.getTime() - at.getTime()) / 60_000));
}

export type FollowUp = 'reattempt' | 'resubmit' | 'wait' | null;

/** The invoice's latest payment (its latest collection attempt), or null before the first. */
export function latestAttempt(ctx: DataContext, invoice: Invoice): Promise<Payment | null> {
  return ctx.em.findOne(Payment, { invoice }, { orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
}

/**
 * Between dunning retries: does the invoice need another attempt now? Yes when it never had
 * one or the last one never reached the gateway (it was down); a committed payment the gateway
 * never answered is re-sent once it is older than RESUBMIT_AFTER_MS ('wait' until then).
 */
export function followUp(latest: Payment | null, at: Date): FollowUp {
  if (!latest) return 'reattempt';
  if (latest.status === 'failed' && latest.gatewayStatus === null) return 'reattempt';
  if (latest.status === 'pending' && latest.gatewayStatus === null && latest.transactionId === null && latest.paymentType !== 'wallet') {
    return latest.createdAt.getTime() + RESUBMIT_AFTER_MS <= at.getTime() ? 'resubmit' : 'wait';
  }
  return null;
}
