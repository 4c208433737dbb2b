import type { Payment, Refund } from '../../db/entities/payment.js';
import { compare } from '../../domain/money.js';
import { succeededTotal } from '../../domain/refund-sum.js';
import { paymentStates, type PaymentEvent } from '../../domain/states/payment-states.js';
import type { DataContext } from '../context.js';
import { issueRefundCreditNotes } from '../credit-notes/issue-credit-note.js';
import { notify } from '../notifications/notify.js';
import { paymentData } from '../notifications/payloads.js';

export function refundEvent(payment: Payment, refunded: string): PaymentEvent {
  return compare(refunded, payment.grossAmount) >= 0 ? 'refund_fully' : 'refund_partially';
}

/**
 * Sets the payment's refunded amount (and status) from its succeeded refunds: the one place
 * that derives them, used by refund notifications and by refundPayment; and issues the credit
 * notes of the refunds that succeeded (issue-credit-note.ts).
 * NOTE: credit notes follow the refunded total, so they are issued only when it moves. An
 * unchanged total (a duplicate or stale notification, a keyed refund confirming what a row
 * without a key held) was documented when it last moved, in that transaction, or, if it moved
 * before the settlement, by the settlement (apply-to-payment.ts); issuing again would cost a
 * flush and two queries to find nothing owed.
 */
export async function settleRefundTotals(ctx: DataContext, payment: Payment, refunds: Refund[]): Promise<string[]> {
  const total = succeededTotal(refunds);
  if (compare(total, payment.refundedAmount) === 0) return [];
  payment.refundedAmount = total;
  paymentStates.applyIfAllowed(payment, refundEvent(payment, total), ctx.clock.now());
  if (payment.invoice) payment.invoice.amountRefunded = total;
  notify(ctx, payment.user, 'payment_refunded', { ...paymentData(payment), refunded_amount: total });
  return [`payment refunded ${total} (${payment.status})`, ...(await issueRefundCreditNotes(ctx, payment))];
}
