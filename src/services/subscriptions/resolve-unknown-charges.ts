import { Payment } from '../../db/entities/payment.js';
import { GatewayError } from '../../gateway/errors.js';
import type { GatewayTransaction } from '../../gateway/types.js';
import type { ServiceContext } from '../context.js';
import { applyStatusAnswer } from '../gateway-events/gateway-answers.js';
import type { User } from '../../db/entities/user.js';
import { findOwnSubscription } from './find-subscription.js';

/**
 * NOTE: a charge whose answer was lost (a timeout, a dropped connection, a 5xx) may have moved
 * the customer's money (docs/gateway.md). Before the subscription is charged again, the gateway is
 * asked what became of each such order and its answer applied like a notification: when the
 * earlier order settled, the invoice is paid and the new charge finds nothing due (409
 * `nothing_due`) instead of charging twice. An order the gateway does not know was never made,
 * and the new charge withdraws it as usual. When the gateway cannot be asked, nothing is charged.
 */
export async function resolveUnknownCharges(ctx: ServiceContext, subscriptionId: string): Promise<void> {
  // A usage invoice's payments name no subscription (isUsageInvoice): they are found by their invoice.
  const unknown = await ctx.em.fork().find(
    Payment,
    { $or: [{ subscription: subscriptionId }, { invoice: { subscription: subscriptionId } }], status: 'pending', outcomeUnknown: true },
    { orderBy: { createdAt: 'asc' } },
  );
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
 * The same for one of the user's subscriptions (not found for anyone else's): called first by
 * every operation that charges it (paying again, a plan or seat change), so that a request
 * retried after a lost answer finds the earlier order's money instead of voiding it and
 * charging again.
 */
export async function resolveOwnUnknownCharges(ctx: ServiceContext, user: User, subscriptionId: string): Promise<void> {
  await findOwnSubscription(ctx.em.fork(), user, subscriptionId);
  await resolveUnknownCharges(ctx, subscriptionId);
}

/**
 * NOTE: an order we withdrew may have been paid with its notification still unheard. Each one
 * is canceled at the gateway before the customer is charged again; the gateway refuses to
 * cancel what has settled, and then its status is asked and applied like a notification: a paid
 * order pays the invoice (a settlement after our withdrawal still buys what it paid for), and
 * the new charge finds nothing due (409 `nothing_due`) instead of charging twice
 * (docs/gateway.md, "Facts out of order"). An order the gateway does not know was never made.
 * When neither the cancel nor the status can be had, the order is flagged for `payments sync`,
 * as any cancel whose answer was lost.
 */
export async function cancelOrAskGateway(ctx: ServiceContext, orderIds: string[]): Promise<void> {
  for (const orderId of orderIds) {
    // Marked ours before it is asked: the gateway's `cancel` notification can be heard before
    // the caller records the withdrawal, and must read as our own cancel, not a failure.
    await ctx.em.fork().nativeUpdate(Payment, { orderId, cancelRequestedAt: null }, { cancelRequestedAt: ctx.clock.now() });
    let answer;
    try {
      answer = await ctx.gateway.cancel(orderId);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      if (err.kind === 'not_found') continue;
      answer = await askStatus(ctx, orderId);
      if (answer === undefined) continue;
    }
    const payment = await ctx.em.fork().findOne(Payment, { orderId }, { fields: ['id'] });
    if (!payment) continue;
    if (answer.transactionStatus === 'cancel') {
      // What the gateway now says of the order we withdrew: canceled there too. Stamped first, so
      // that a card charge's answer applied after it buys nothing (apply-to-payment.ts).
      await ctx.em.fork().nativeUpdate(Payment, { id: payment.id }, { gatewayStatus: answer.transactionStatus });
      // NOTE: a card capture is voided by a cancel: when its charge's answer was applied here
      // before the cancel went through (two charges of one invoice at once), the money counted
      // as paid went back to the card, and the void is a reversal (docs/gateway.md).
      const now = await ctx.em.fork().findOne(Payment, { id: payment.id }, { fields: ['status', 'paymentType'] });
      if (now?.paymentType === 'credit_card' && ['settled', 'partially_refunded'].includes(now.status)) await applyStatusAnswer(ctx, payment.id, answer);
    } else if (answer.transactionStatus === 'pending') {
      // The cancel failed and the order is still payable there: flagged, `payments sync` (and
      // each billing pass) cancels it, as any withdrawn order whose cancel did not go through.
      await ctx.em.fork().nativeUpdate(Payment, { id: payment.id }, { gatewayStatus: 'pending', outcomeUnknown: true });
    } else {
      await applyStatusAnswer(ctx, payment.id, answer);
    }
  }
}

/** The order's status, or undefined when the gateway does not know it or cannot answer (then flagged for payments sync). */
async function askStatus(ctx: ServiceContext, orderId: string): Promise<GatewayTransaction | undefined> {
  try {
    return await ctx.gateway.status(orderId);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    if (err.kind !== 'not_found') await ctx.em.fork().nativeUpdate(Payment, { orderId }, { outcomeUnknown: true });
    return undefined;
  }
}
