import type { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { InvalidStateError } from '../../domain/errors.js';
import { subscriptionActions } from '../../domain/states/subscription-actions.js';
import type { DataContext } from '../context.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import { findOwnSubscription, loadSubscription } from './find-subscription.js';

/**
 * True once the period a cancel was set for has ended: the billing run cancels the subscription
 * at `next_billing_date`, and from that instant the cancel has taken effect whether or not a run
 * has written it yet. A paused subscription's period is stopped (resuming moves its dates), so
 * it has not ended.
 */
export function scheduledCancelTookEffect(sub: Pick<Subscription, 'status' | 'nextBillingDate'>, now: Date): boolean {
  if (sub.status === 'paused') return false;
  return sub.nextBillingDate !== null && sub.nextBillingDate.getTime() <= now.getTime();
}

/**
 * Takes back a cancel at the period end (docs/billing.md, 'Cancelling and changing one's mind'):
 * the subscription renews as if it had never been canceled. A live subscription with no cancel
 * set is answered as it is, so a retry after a lost answer is safe; one whose period has ended,
 * or that has ended or never started, answers `invalid_state`.
 */
export async function undoCancelSubscription(ctx: DataContext, user: User, id: string): Promise<Subscription> {
  await retryingTransaction(ctx.em, async (em) => {
    const sub = await findOwnSubscription(em, user, id, { lock: true });
    if (sub.status === 'canceled' || sub.status === 'expired') {
      throw new InvalidStateError(`This subscription is ${sub.status}; it can no longer be kept. Subscribe again.`);
    }
    subscriptionActions.assert(sub, 'undo_cancel');
    if (!sub.cancelAtPeriodEnd) return;
    if (scheduledCancelTookEffect(sub, ctx.clock.now())) {
      throw new InvalidStateError(`The period this subscription was set to cancel at ended on ${sub.nextBillingDate!.toISOString()}; it can no longer be kept. Subscribe again.`);
    }
    sub.cancelAtPeriodEnd = false;
    sub.cancelReason = null;
  });
  return loadSubscription(ctx.em, id);
}
