import { Payment } from '../../db/entities/payment.js';
import { GatewayError } from '../../gateway/errors.js';
import type { ServiceContext } from '../context.js';
import { applyStatusAnswer } from '../gateway-events/gateway-answers.js';

/**
 * NOTE: a charge whose answer was lost (a timeout, a dropped connection, a 5xx) may have moved
 * the customer's money (docs/gateway.md). Before the subscription is charged again, the gateway is
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
 * `nothing_due`) instead of charging twice (docs/gateway.md, "Facts out of order"). An order the
 * gateway does not know was never made. When neither the cancel nor the status can be had,
 * nothing is charged (the gateway's error). Returns the orders the gateway canceled: the charge
 * withdraws them here without asking the gateway again.
 */
export async function cancelEarlierOrders(ctx: ServiceContext, subscriptionId: string): Promise<Set<string>> {
  const earlier = await ctx.em.fork().find(
    Payment,
    { subscription: subscriptionId, status: 'pending', paymentType: { $ne: 'wallet' }, invoice: { status: 'open' } },
    { orderBy: { createdAt: 'asc' } },
  );
  const canceled = new Set<string>();
  for (const payment of earlier) {
    try {
      const answer = await ctx.gateway.cancel(payment.orderId);
      if (answer.transactionStatus === 'cancel') {
        // Withdrawn by the charge that follows (no failure of the customer's): only the gateway's word is kept.
        await ctx.em.fork().nativeUpdate(Payment, { id: payment.id, status: 'pending' }, { gatewayStatus: 'cancel' });
        canceled.add(payment.orderId);
        continue;
      }
      await applyStatusAnswer(ctx, payment.id, answer);
      continue;
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      if (err.kind === 'not_found') continue;
    }
    let status;
    try {
      status = await ctx.gateway.status(payment.orderId);
    } catch (err) {
      if (err instanceof GatewayError && err.kind === 'not_found') continue;
      throw err;
    }
    await applyStatusAnswer(ctx, payment.id, status);
  }
  return canceled;
}
