import type { ServiceContext } from '../context.js';
import { lockSubscriptionThenPayment } from '../payments/lock-payment.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import { applyGatewayEvent } from './apply-gateway-event.js';

/**
 * NOTE: how many gateway timeouts must pass after a payment was made before the gateway's "no
 * such order" (404 on status) is believed: a charge still on its way (a live process waiting for
 * its answer) could otherwise be closed under it. After that, nobody will send it any more.
 */
export const NEVER_REACHED_MARGIN = 3;

export const NEVER_REACHED_GATEWAY = 'never_reached_gateway';

/** Whether a payment the gateway does not know is old enough to be closed. */
export function isPastReach(ctx: Pick<ServiceContext, 'config' | 'clock'>, createdAt: Date): boolean {
  return ctx.clock.now().getTime() - createdAt.getTime() > ctx.config.gateway.timeoutMs * NEVER_REACHED_MARGIN;
}

/**
 * Closes a pending payment whose charge never reached the gateway (its process died first, or
 * the request was lost before it): `failed` with reason `never_reached_gateway`, through the same
 * effects as a refusal (the invoice stays open to be paid, a first subscription falls past due,
 * the customer is told). Returns what changed; nothing when the payment is no longer pending.
 */
export async function closeUnsentPayment(ctx: ServiceContext, paymentId: string): Promise<string[]> {
  return retryingTransaction(ctx.em, async (em) => {
    const payment = await lockSubscriptionThenPayment(em, { id: paymentId });
    if (payment?.status !== 'pending') return [];
    const outcome = await applyGatewayEvent(
      { em, config: ctx.config, clock: ctx.clock },
      {
        orderId: payment.orderId,
        transactionStatus: 'failure',
        fraudStatus: null,
        statusCode: null,
        grossAmount: null,
        transactionId: null,
        paymentType: payment.paymentType,
        refundAmount: null,
        refunds: [],
        raw: { order_id: payment.orderId, transaction_status: 'failure', status_message: NEVER_REACHED_GATEWAY },
      },
    );
    payment.failureReason = NEVER_REACHED_GATEWAY;
    // Not what the gateway said (it said nothing): no gateway status is recorded.
    payment.gatewayStatus = null;
    return [`payment failed: ${NEVER_REACHED_GATEWAY}`, ...outcome.changes];
  });
}
