import { Refund, type Payment } from '../../db/entities/payment.js';
import { compare } from '../../domain/money.js';
import { InvalidStateError } from '../../domain/errors.js';
import { GatewayError } from '../../gateway/errors.js';
import type { ServiceContext } from '../context.js';
import { classifyRefundFailure, type GatewayRefundAnswer, type GatewayRefundOutcome } from './gateway-refund-answer.js';

/*
 * NOTE: a card payment is `capture` at the gateway until it settles, by default the next day
 * (docs/gateway.md, 'How the simulator behaves'); until then Midtrans refuses a refund
 * (412 "Merchant cannot modify…") and expects a cancel, which voids the whole capture. So a refund of a captured, unsettled card
 * payment is made by cancelling it, and it can only be the whole payment.
 */

/** Whether a refund of this payment must be a cancel (void) at the gateway. */
export function mustRefundByCancel(payment: Pick<Payment, 'paymentType' | 'gatewayStatus'>): boolean {
  return payment.paymentType === 'credit_card' && payment.gatewayStatus === 'capture';
}

/**
 * Whether the payment is still an unsettled capture at the gateway: our record says `capture`,
 * and the gateway confirms it (its settlement notification may have been lost). When the gateway
 * cannot be asked, our record decides.
 */
export async function isUnsettledCapture(ctx: ServiceContext, payment: Pick<Payment, 'orderId' | 'paymentType' | 'gatewayStatus'>): Promise<boolean> {
  if (!mustRefundByCancel(payment)) return false;
  try {
    return (await ctx.gateway.status(payment.orderId)).transactionStatus === 'capture';
  } catch (err) {
    if (err instanceof GatewayError) return true;
    throw err;
  }
}

/** A void returns everything: refuses a partial refund of an unsettled capture (409). */
export function assertFullVoid(payment: Pick<Payment, 'grossAmount' | 'refundedAmount'>, amount: string): void {
  if (compare(amount, payment.grossAmount) !== 0) {
    throw new InvalidStateError(
      'This card payment is captured but not settled yet (it settles the next day); until then it can only be refunded in full, by cancelling it at the gateway.',
    );
  }
}

/**
 * Sends a recorded refund-by-cancel to the gateway and settles it by the answer (`settle`, the
 * same as an ordinary refund's). A cancel the gateway refuses because the capture settled
 * meanwhile (412) falls back to an ordinary refund under the same refund_key (`fallback`). An
 * unreadable answer or a timeout leaves the refund pending for `payments sync` (the cancel
 * notification, or the status, confirms it).
 */
export async function refundByCancel(
  ctx: ServiceContext,
  recorded: { refundId: string; orderId: string },
  settle: (answer: GatewayRefundAnswer) => Promise<GatewayRefundOutcome>,
  fallback: () => Promise<GatewayRefundOutcome>,
): Promise<GatewayRefundOutcome> {
  try {
    await ctx.gateway.cancel(recorded.orderId);
  } catch (err) {
    if (err instanceof GatewayError && err.kind === 'cannot_modify') {
      await ctx.em.fork().nativeUpdate(Refund, { id: recorded.refundId, status: 'pending' }, { method: 'refund' });
      return fallback();
    }
    return settle(classifyRefundFailure(err));
  }
  return settle({ kind: 'accepted' });
}
