import { newId } from './random.js';
import { setStatus } from './transitions.js';
import type { SimRefund, SimTransaction } from './types.js';

export type RefundOutcome = { ok: true; refund: SimRefund } | { ok: false; statusCode: '412' | '414'; message: string };

export function refundedAmount(tx: SimTransaction): number {
  return tx.refunds.reduce((sum, r) => sum + r.refund_amount, 0);
}

export interface RefundInput {
  /** Integer IDR; null = everything not yet refunded. */
  amount: number | null;
  refundKey: string;
  reason: string;
  direct: boolean;
}

/** Records a refund; status becomes refund when nothing is left, partial_refund otherwise. */
export function applyRefund(tx: SimTransaction, input: RefundInput, now: Date): RefundOutcome {
  if (tx.transaction_status !== 'settlement' && tx.transaction_status !== 'partial_refund') {
    return { ok: false, statusCode: '412', message: 'Merchant cannot modify the status of the transaction' };
  }
  // Bank transfers and Mandiri bills have no refund API at Midtrans (MIDTRANS.md §5.1).
  if (tx.payment_type === 'bank_transfer' || tx.payment_type === 'echannel') {
    return { ok: false, statusCode: '412', message: `Refund is not supported for payment type ${tx.payment_type}` };
  }
  const remaining = tx.gross_amount - refundedAmount(tx);
  const amount = input.amount ?? remaining;
  if (amount < 1 || amount > remaining) {
    return { ok: false, statusCode: '414', message: `Refund amount must be between 1 and ${remaining}` };
  }
  if (tx.payment_type === 'shopeepay' && amount !== tx.gross_amount) {
    return { ok: false, statusCode: '414', message: 'ShopeePay supports only full refunds' };
  }
  const refund: SimRefund = {
    refund_chargeback_id: tx.refunds.length + 1,
    refund_chargeback_uuid: newId(),
    refund_amount: amount,
    created_at: now,
    reason: input.reason,
    refund_key: input.refundKey,
    refund_method: 'online',
    bank_confirmed_at: null,
    direct: input.direct,
  };
  tx.refunds.push(refund);
  setStatus(tx, refundedAmount(tx) === tx.gross_amount ? 'refund' : 'partial_refund', tx.fraud_status, now);
  return { ok: true, refund };
}
