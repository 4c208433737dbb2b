import { Payment, Refund } from '../../db/entities/payment.js';
import type { Topup } from '../../db/entities/topup.js';
import { compare, isPositive } from '../../domain/money.js';
import { invoiceStates } from '../../domain/states/invoice-states.js';
import { paymentStates } from '../../domain/states/payment-states.js';
import { refundStates } from '../../domain/states/refund-states.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import { topupStates } from '../../domain/states/topup-states.js';
import type { DataContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { paymentSummaryData, subscriptionData, topupSummaryData } from '../notifications/payloads.js';
import { settleRefundTotals } from '../refunds/refund-totals.js';
import { withdrawFunds } from '../subscription-rules/period-funds.js';
import { postWalletEntry } from '../wallet/wallet-ledger.js';
import type { GatewayEvent } from './gateway-event.js';

/*
 * Reversals (MIDTRANS.md §7.3, DECISIONS.md §4): a `deny` or `cancel` after `settlement` means
 * the gateway took the money back (Permata VA, Mandiri bill and Indomaret settlements can flip
 * to deny minutes later; a card capture can be voided before it settles). The payment becomes
 * `reversed`, what it paid for is owed again, and the customer is told.
 */

/**
 * Whether the event takes back money this payment or top-up already counted as received. A
 * `cancel` of a payment we had withdrawn ourselves is the echo of our own cancel request, which
 * can arrive after a late settlement: the money stays where the settlement put it.
 */
export function isReversal(event: GatewayEvent, status: string, cancelRequestedAt: Date | null = null): boolean {
  if (event.transactionStatus === 'cancel' && cancelRequestedAt) return false;
  return (event.transactionStatus === 'deny' || event.transactionStatus === 'cancel') && ['settled', 'partially_refunded', 'success'].includes(status);
}

/**
 * Reverses a settled payment inside applyGatewayEvent's transaction (subscription and payment
 * locked there): payment `reversed`, its invoice open again and due at once for dunning, the
 * subscription `past_due`. A `cancel` that confirms our own void (a refund by cancel of an
 * unsettled card capture, refund-by-cancel.ts) is that refund succeeding, not a reversal.
 */
export async function reversePayment(
  ctx: DataContext,
  payment: Payment,
  event: GatewayEvent,
  at: Date,
): Promise<string[]> {
  if (event.transactionStatus === 'cancel') {
    const refunds = await ctx.em.find(Refund, { payment });
    const ownVoid = refunds.find((r) => r.method === 'cancel' && r.status !== 'failed');
    if (ownVoid) {
      refundStates.applyIfAllowed(ownVoid, 'succeed', at);
      return [`refund ${ownVoid.refundKey} confirmed by the gateway's cancel`, ...(await settleRefundTotals(ctx, payment, refunds))];
    }
  }
  if (!paymentStates.applyIfAllowed(payment, 'reverse', at)) return [];
  const changes = [`payment reversed by the gateway (${event.transactionStatus} after settlement)`];
  notify(ctx, payment.user, 'payment_reversed', { ...paymentSummaryData(payment), gateway_status: event.transactionStatus });
  changes.push(...(await takeBackWalletCredits(ctx, payment, event)));
  // What it still paid for is unpaid again: a plan change or a refund must not count its unused
  // share as money in hand (a repayment funds the period anew).
  await withdrawFunds(ctx, payment, payment.grossAmount, at);

  const invoice = payment.invoice;
  // Another settled payment of the same invoice still pays it (a duplicate payment made good).
  const otherPaid = invoice
    ? await ctx.em.count(Payment, { invoice, id: { $ne: payment.id }, status: { $in: ['settled', 'partially_refunded'] } })
    : 0;
  if (invoice && otherPaid === 0 && invoiceStates.applyIfAllowed(invoice, 'reopen', at)) {
    // NOTE: due now: the next billing run takes it through dunning (retries, then cancellation).
    invoice.nextRetryAt = at;
    changes.push(`invoice ${invoice.number} open again`);
    const sub = payment.subscription;
    if (sub) {
      const was = sub.status;
      if (subscriptionStates.applyIfAllowed(sub, 'mark_past_due', at) && was !== 'past_due') {
        notify(ctx, sub.user, 'subscription_past_due', subscriptionData(sub));
        changes.push(`subscription ${was} -> past_due`);
      }
    }
  }
  return changes;
}

/** The wallet reference of a reversal's debit: this prefix and the payment's or top-up's id. */
export const REVERSAL_REFERENCE = 'reversal:';

/**
 * What the wallet received from a payment the gateway took back goes out again: a settlement
 * nobody could use credited whole, or proration credits from its funds (`creditedAmount`). Left
 * there, it would be money from nowhere. Like a top-up's reversal, this debit may go below zero.
 */
async function takeBackWalletCredits(ctx: DataContext, payment: Payment, event: GatewayEvent): Promise<string[]> {
  if (!isPositive(payment.creditedAmount)) return [];
  const entry = await postWalletEntry(ctx, {
    user: payment.user,
    kind: 'debit',
    amount: payment.creditedAmount,
    currency: payment.currency,
    source: 'payment',
    referenceId: `${REVERSAL_REFERENCE}${payment.id}`,
    description: `Payment ${payment.orderId} reversed by the gateway (${event.transactionStatus} after settlement): its wallet credit taken back`,
    allowNegative: true,
  });
  return [`wallet debited ${payment.creditedAmount}, credited from the reversed payment (balance now ${entry.balanceAfter})`];
}

/**
 * Reverses a credited top-up: its amount is debited from the wallet again, even below zero (the
 * only debit allowed to; `wallet verify` shows such balances), and the customer is told.
 */
export async function reverseTopup(ctx: DataContext, topup: Topup, event: GatewayEvent, at: Date): Promise<string[]> {
  if (!topupStates.applyIfAllowed(topup, 'reverse', at)) return [];
  const entry = await postWalletEntry(ctx, {
    user: topup.user,
    kind: 'debit',
    amount: topup.amount,
    currency: topup.currency,
    source: 'topup',
    referenceId: `${REVERSAL_REFERENCE}${topup.id}`,
    description: `Top-up ${topup.orderId} reversed by the gateway (${event.transactionStatus} after settlement)`,
    allowNegative: true,
  });
  notify(ctx, topup.user, 'payment_reversed', { ...topupSummaryData(topup), balance_after: entry.balanceAfter });
  const negative = compare(entry.balanceAfter, '0') < 0 ? ` (balance now ${entry.balanceAfter})` : '';
  return [`top-up reversed`, `wallet debited ${topup.amount}${negative}`];
}
