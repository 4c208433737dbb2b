import type { Payment, PaymentStatus } from '../../db/entities/payment.js';
import { StateMachine } from './state-machine.js';

export type PaymentEvent = 'settle' | 'fail' | 'cancel' | 'withdraw' | 'expire' | 'refund_partially' | 'refund_fully' | 'reverse' | 'charge_back';

/** Final statuses: the gateway will not move them any more (except refunds and chargebacks of settled ones). */
export const FINAL_PAYMENT_STATUSES: readonly PaymentStatus[] = ['settled', 'failed', 'canceled', 'expired', 'refunded', 'partially_refunded', 'reversed', 'charged_back'];

/**
 * NOTE: a payment never moves backwards — a late pending or expire after a settlement changes
 * nothing. A settlement after a failure, cancel or expiry is accepted: the money arrived. The one
 * way back: a `deny` or `cancel` after `settlement` is the gateway reversing it (docs/gateway.md,
 * 'Reversals after a refund to the wallet'), and the payment becomes `reversed`; a `chargeback` is
 * the same with its own status, `charged_back` (docs/gateway.md, 'Chargebacks'; a partial one
 * leaves the status as it is).
 */
export const paymentStates = new StateMachine<PaymentStatus, PaymentEvent, Payment>('payment', {
  settle: { from: ['pending', 'failed', 'canceled', 'expired'], to: 'settled', stamp: (p, at) => (p.paidAt ??= at) },
  fail: { from: ['pending'], to: 'failed' },
  cancel: { from: ['pending'], to: 'canceled' },
  // We cancel it ourselves (a replaced or ended invoice): remembered, so that the gateway's echo
  // of our cancel request is never read as a reversal (reverse-payment.ts isReversal).
  withdraw: { from: ['pending'], to: 'canceled', stamp: (p, at) => (p.cancelRequestedAt ??= at) },
  expire: { from: ['pending'], to: 'expired' },
  refund_partially: { from: ['settled', 'partially_refunded'], to: 'partially_refunded' },
  refund_fully: { from: ['settled', 'partially_refunded'], to: 'refunded' },
  // A payment refunded to the wallet (no refund API for its method) can still be reversed.
  reverse: { from: ['settled', 'partially_refunded', 'refunded'], to: 'reversed' },
  charge_back: { from: ['settled', 'partially_refunded'], to: 'charged_back' },
});
