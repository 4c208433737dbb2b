import { Payment } from '../../db/entities/payment.js';
import { GatewayError } from '../../gateway/errors.js';
import type { ServiceContext } from '../context.js';
import { applyStatusAnswer } from '../gateway-events/gateway-answers.js';

/**
 * NOTE: a charge whose answer was lost (a timeout, a dropped connection, a 5xx) may have moved
 * the customer's money (DECISIONS §9). Before the subscription is charged again, the gateway is
 * asked what became of each such order and its answer applied like a notification: when the
 * earlier order settled, the invoice is paid and the new charge finds nothing due (409
 * `nothing_due`) instead of charging twice. An order the gateway does not know was never made,
 * and the new charge withdraws it as usual. When the gateway cannot be asked, nothing is charged.
 */
export async function resolveUnknownCharges(ctx: ServiceContext, subscriptionId: string): Promise<void> {
  const unknown = await ctx.em.fork().find(Payment, { subscription: subscriptionId, status: 'pending', outcomeUnknown: true }, { orderBy: { createdAt: 'asc' } });
  for (const payment of unknown) {
    let tx;
    try {
      tx = await ctx.gateway.status(payment.orderId);
    } catch (err) {
      if (err instanceof GatewayError && err.kind === 'not_found') continue;
      throw err;
    }
    await applyStatusAnswer(ctx, payment.id, tx);
  }
}

/**
 * NOTE: an earlier order of an open invoice may have been paid with its notification still
 * unheard. Before the customer is charged again, each such order is canceled at the gateway;
 * the gateway refuses to cancel what has settled, and then its status is asked and applied like
 * a notification: a paid order pays the invoice, and the new charge finds nothing due (409
 * `nothing_due`) instead of charging twice (docs/gateway.md, "Charges whose outcome is
 * unknown"). A cancel the gateway accepted is applied too, so the order is not canceled again
 * after the new payment is opened. An order the gateway does not know was never made. When
 * neither the cancel nor the status can be had, nothing is charged (the gateway's error).
 */
export async function cancelEarlierOrders(ctx: ServiceContext, subscriptionId: string): Promise<void> {
  const earlier = await ctx.em.fork().find(
    Payment,
    { subscription: subscriptionId, status: 'pending', paymentType: { $ne: 'wallet' }, invoice: { status: 'open' } },
    { orderBy: { createdAt: 'asc' } },
  );
  for (const payment of earlier) {
    let answer;
    try {
      answer = await ctx.gateway.cancel(payment.orderId);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      if (err.kind === 'not_found') continue;
      try {
        answer = await ctx.gateway.status(payment.orderId);
      } catch (statusErr) {
        if (statusErr instanceof GatewayError && statusErr.kind === 'not_found') continue;
        throw statusErr;
      }
    }
    await applyStatusAnswer(ctx, payment.id, answer);
  }
}
