import type { Payment, PaymentStatus } from '../../db/entities/payment.js';
import { StateMachine } from './state-machine.js';

export type PaymentEvent = 'settle' | 'fail' | 'cancel' | 'expire' | 'refund_partially' | 'refund_fully';

/** Final statuses: the gateway will not move them any more (except refunds of settled ones). */
export const FINAL_PAYMENT_STATUSES: readonly PaymentStatus[] = ['settled', 'failed', 'canceled', 'expired', 'refunded', 'partially_refunded'];

/**
 * NOTE: a payment never moves backwards — a late pending, deny or expire after a settlement
 * changes nothing. A settlement after a failure, cancel or expiry is accepted: the money arrived.
 */
export const paymentStates = new StateMachine<PaymentStatus, PaymentEvent, Payment>('payment', {
  settle: { from: ['pending', 'failed', 'canceled', 'expired'], to: 'settled', stamp: (p, at) => (p.paidAt ??= at) },
  fail: { from: ['pending'], to: 'failed' },
  cancel: { from: ['pending'], to: 'canceled' },
  expire: { from: ['pending'], to: 'expired' },
  refund_partially: { from: ['settled', 'partially_refunded'], to: 'partially_refunded' },
  refund_fully: { from: ['settled', 'partially_refunded'], to: 'refunded' },
});
