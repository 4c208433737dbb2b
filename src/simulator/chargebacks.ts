import { newId } from './random.js';
import { refundedAmount } from './refunds.js';
import { setStatus, type Move } from './transitions.js';
import type { SimTransaction } from './types.js';

export function chargedBackAmount(tx: SimTransaction): number {
  return tx.chargebacks.reduce((sum, c) => sum + c.chargeback_amount, 0);
}

export const isChargedBack = (tx: SimTransaction): boolean => tx.transaction_status === 'chargeback' || tx.transaction_status === 'partial_chargeback';

/** Statuses a card dispute can start from: money the merchant still holds some of. */
const DISPUTABLE = ['settlement', 'partial_refund', 'partial_chargeback'];

/**
 * The issuer takes money back from a settled card transaction: `partial: false` takes all that
 * the refunds and earlier chargebacks left (`amount`, when given, must be exactly that) and the
 * status becomes chargeback; `partial: true` takes `amount`, less than what is left, and the
 * status becomes partial_chargeback. Nothing is ever taken back twice.
 */
/** What the issuer writes when no reason is given: free text, as Midtrans passes it on. */
export const DEFAULT_CHARGEBACK_REASON = 'Cardholder disputes the transaction';

export function applyChargeback(tx: SimTransaction, input: { amount: number | null; partial: boolean; reason?: string }, now: Date): Move {
  if (tx.payment_type !== 'credit_card') return { ok: false, reason: `chargebacks apply to credit_card, not ${tx.payment_type}` };
  if (!DISPUTABLE.includes(tx.transaction_status)) return { ok: false, reason: `cannot charge back a transaction in status ${tx.transaction_status}` };
  const remaining = tx.gross_amount - refundedAmount(tx) - chargedBackAmount(tx);
  const amount = input.amount ?? (input.partial ? null : remaining);
  if (amount === null) return { ok: false, reason: 'a partial chargeback needs an amount' };
  if (input.partial ? amount < 1 || amount >= remaining : amount !== remaining) {
    const range = input.partial ? `between 1 and ${remaining - 1} (a chargeback takes all ${remaining})` : `${remaining}, all that is left`;
    return { ok: false, reason: `chargeback amount must be ${range}` };
  }
  tx.chargebacks.push({
    refund_chargeback_id: tx.refunds.length + tx.chargebacks.length + 1,
    refund_chargeback_uuid: newId(),
    chargeback_amount: amount,
    created_at: now,
    reason: input.reason ?? DEFAULT_CHARGEBACK_REASON,
  });
  setStatus(tx, input.partial ? 'partial_chargeback' : 'chargeback', tx.fraud_status, now);
  return { ok: true };
}
