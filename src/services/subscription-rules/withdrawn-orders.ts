import { Payment } from '../../db/entities/payment.js';
import type { ServiceContext } from '../context.js';
import { cancelAtGateway } from './end-subscription.js';

/** Orders canceled at the gateway per call: a backlog drains over passes, none blocks one. */
const BATCH = 200;

/**
 * Cancels at the gateway the orders we withdrew inside a transaction that could not call the
 * gateway itself (a paid plan change that replaced an open renewal invoice, settled by a
 * notification), and those whose cancel failed: payments we withdrew (`cancelRequestedAt`)
 * while the gateway last said `pending`. Every order we stop waiting for is canceled at the
 * gateway; a late payment of one is an unusable settlement, credited to the
 * wallet. Run by each billing pass, and after a change for its own subscription.
 */
export async function cancelWithdrawnOrders(ctx: ServiceContext, opts: { subscriptionId?: string } = {}): Promise<number> {
  const withdrawn = await ctx.em.fork().find(
    Payment,
    {
      status: 'canceled',
      cancelRequestedAt: { $ne: null },
      gatewayStatus: 'pending',
      paymentType: { $ne: 'wallet' },
      ...(opts.subscriptionId ? { subscription: opts.subscriptionId } : {}),
    },
    { fields: ['id', 'orderId'], limit: BATCH, orderBy: { cancelRequestedAt: 'asc' } },
  );
  await cancelAtGateway(ctx, withdrawn.map((p) => p.orderId));
  return withdrawn.length;
}
