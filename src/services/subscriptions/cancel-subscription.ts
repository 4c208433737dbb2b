import type { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { subscriptionActions } from '../../domain/states/subscription-actions.js';
import type { ServiceContext } from '../context.js';
import { cancelAtGateway, endSubscriptionNow, wasNeverPaid } from '../subscription-rules/end-subscription.js';
import { collectUsageInvoices, submitUsagePayments } from './collect-usage-invoices.js';
import { findOwnSubscription, loadSubscription } from './find-subscription.js';
import { retryingTransaction } from '../common/retrying-transaction.js';

export interface CancelSubscriptionInput {
  reason?: string;
  /** True ends it now; false (default) at the end of the current period. */
  immediate?: boolean;
}

/**
 * Cancels a subscription: a never-paid one ends now in either mode; `immediate`
 * ends a live one now; otherwise an active or trialing one is canceled at the period end.
 * Payments left pending are canceled at the gateway after the commit.
 */
export async function cancelSubscription(ctx: ServiceContext, user: User, id: string, input: CancelSubscriptionInput): Promise<Subscription> {
  const reason = input.reason?.trim() || null;
  const ended = await retryingTransaction(ctx.em, async (em) => {
    const tctx = { ...ctx, em };
    const since = ctx.clock.now();
    const sub = await findOwnSubscription(em, user, id, { lock: true });
    if (input.immediate || (await wasNeverPaid(tctx, sub))) {
      // Ending now bills the usage so far; its payment goes out after the commit.
      const cancelOrderIds = await endSubscriptionNow(tctx, sub, reason);
      return { cancelOrderIds, usage: (await collectUsageInvoices(tctx, sub, since)).submits };
    }
    subscriptionActions.assert(sub, 'cancel_at_period_end');
    sub.cancelAtPeriodEnd = true;
    sub.cancelReason = reason;
    return { cancelOrderIds: [], usage: [] };
  });
  await cancelAtGateway(ctx, ended.cancelOrderIds);
  await submitUsagePayments(ctx, ended.usage);
  return loadSubscription(ctx.em, id);
}
