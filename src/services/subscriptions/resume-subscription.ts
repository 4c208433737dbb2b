import type { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { subscriptionData } from '../notifications/payloads.js';
import { findOwnSubscription, loadSubscription } from './find-subscription.js';
import { shiftFundsPastPause } from '../subscription-rules/period-funds.js';
import { retryingTransaction } from '../common/retrying-transaction.js';

const later = (d: Date | null, ms: number): Date | null => (d ? new Date(d.getTime() + ms) : null);

/**
 * Resumes a paused subscription (`invalid_state` otherwise).
 *
 * NOTE: the paused time is not billed: the current period and the next billing date move
 * later by exactly the time spent paused, and so does what the period's payments pay for.
 */
export async function resumeSubscription(ctx: DataContext, user: User, id: string): Promise<Subscription> {
  await retryingTransaction(ctx.em, async (em) => {
    const sub = await findOwnSubscription(em, user, id, { lock: true });
    const at = ctx.clock.now();
    const pausedFor = sub.pausedAt ? Math.max(0, at.getTime() - sub.pausedAt.getTime()) : 0;
    if (sub.pausedAt) await shiftFundsPastPause({ ...ctx, em }, sub, sub.pausedAt, at);
    subscriptionStates.apply(sub, 'resume', at);
    sub.currentPeriodEnd = later(sub.currentPeriodEnd, pausedFor);
    sub.nextBillingDate = later(sub.nextBillingDate, pausedFor);
    // Renewals are counted from the anchor, so it moves too, or the next renewal would undo this.
    sub.billingAnchor = later(sub.billingAnchor, pausedFor);
    notify({ ...ctx, em }, sub.user, 'subscription_resumed', { ...subscriptionData(sub), paused_ms: pausedFor });
  });
  return loadSubscription(ctx.em, id);
}
