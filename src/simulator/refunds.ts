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
  /** Refuse ShopeePay refunds in its quiet hours (SimulatorOptions.shopeePayQuietHours). */
  shopeePayQuietHours?: boolean;
}

const DAY_MS = 86_400_000;

/**
 * How long after its settlement a payment can be refunded (docs/gateway.md, 'How the simulator
 * behaves'): GoPay deeplink and QRIS on-us 45 days (the simulator's QRIS is GoPay's own),
 * ShopeePay 365; cards have no documented window. NOTE: Midtrans does not document the code of
 * a closed window; 412 "cannot modify" is the simulator's choice.
 */
const REFUND_WINDOW_DAYS: Partial<Record<string, number>> = { gopay: 45, qris: 45, shopeepay: 365 };

/** Payment types refunded in full only (OVO too, which the simulator does not offer). */
const FULL_REFUND_ONLY = new Set(['shopeepay']);

/** ShopeePay refuses refunds from 23:55 to 06:00 GMT+7. */
function inShopeePayQuietHours(now: Date): boolean {
  const minutes = (now.getUTCHours() * 60 + now.getUTCMinutes() + 7 * 60) % (24 * 60);
  return minutes >= 23 * 60 + 55 || minutes < 6 * 60;
}

/** Why the gateway refuses this refund, as it answers (status_code, message); null when it takes it. */
function refusal(tx: SimTransaction, amount: number, remaining: number, now: Date, quietHours: boolean): { statusCode: '412' | '414'; message: string } | null {
  if (tx.transaction_status !== 'settlement' && tx.transaction_status !== 'partial_refund') {
    return { statusCode: '412', message: 'Merchant cannot modify the status of the transaction' };
  }
  // Bank transfers and Mandiri bills have no refund API at Midtrans.
  if (tx.payment_type === 'bank_transfer' || tx.payment_type === 'echannel') {
    return { statusCode: '412', message: `Refund is not supported for payment type ${tx.payment_type}` };
  }
  const windowDays = REFUND_WINDOW_DAYS[tx.payment_type];
  const settledAt = tx.settlement_time ?? tx.transaction_time;
  if (windowDays !== undefined && now.getTime() - settledAt.getTime() > windowDays * DAY_MS) {
    return { statusCode: '412', message: `The refund window of ${windowDays} days for ${tx.payment_type} has passed` };
  }
  if (quietHours && tx.payment_type === 'shopeepay' && inShopeePayQuietHours(now)) {
    return { statusCode: '412', message: 'ShopeePay does not accept refunds between 23:55 and 06:00 (GMT+7)' };
  }
  if (amount < 1 || amount > remaining) {
    return { statusCode: '414', message: `Refund amount must be between 1 and ${remaining}` };
  }
  if (FULL_REFUND_ONLY.has(tx.payment_type) && amount !== tx.gross_amount) {
    return { statusCode: '414', message: 'ShopeePay supports only full refunds' };
  }
  return null;
}

/** Records a refund; status becomes refund when nothing is left, partial_refund otherwise. */
export function applyRefund(tx: SimTransaction, input: RefundInput, now: Date): RefundOutcome {
  const remaining = tx.gross_amount - refundedAmount(tx);
  const amount = input.amount ?? remaining;
  const refused = refusal(tx, amount, remaining, now, input.shopeePayQuietHours === true);
  if (refused) return { ok: false, ...refused };
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
