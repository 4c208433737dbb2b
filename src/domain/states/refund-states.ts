import type { Refund, RefundStatus } from '../../db/entities/payment.js';
import { StateMachine } from './state-machine.js';

export type RefundEvent = 'succeed' | 'fail' | 'confirm_at_gateway';

/**
 * A refund is recorded `pending` before it is sent (a refund to the wallet succeeds in the same
 * transaction), and the gateway's answer or its notification settles it. NOTE: the gateway's own
 * refund list is the truth: a refund it lists under our refund_key happened, even one we marked
 * `failed` because its answer said no (`confirm_at_gateway`); an answer alone never revives it.
 */
export const refundStates = new StateMachine<RefundStatus, RefundEvent, Refund>('refund', {
  succeed: { from: ['pending'], to: 'succeeded' },
  fail: { from: ['pending'], to: 'failed' },
  confirm_at_gateway: { from: ['pending', 'failed'], to: 'succeeded' },
});
