import type { Subscription } from '../../db/entities/subscription.js';
import { TrialGrant } from '../../db/entities/trial-grant.js';
import { addDays } from '../../domain/billing-calendar.js';
import type { DataContext } from '../context.js';

/**
 * Starts the plan's trial now (the subscription already `trialing`): the trial is the current
 * period, paid periods are counted from its end, and the user's one trial of the plan is spent
 * (docs/billing.md). Inside the caller's transaction.
 */
export function beginTrial(ctx: DataContext, sub: Subscription, at: Date): void {
  sub.trialEnd = addDays(at, sub.plan.trialPeriodDays);
  sub.currentPeriodStart = at;
  sub.currentPeriodEnd = sub.trialEnd;
  sub.nextBillingDate = sub.trialEnd;
  sub.billingAnchor = sub.trialEnd;
  ctx.em.create(TrialGrant, { user: sub.user, plan: sub.plan, createdAt: at } as TrialGrant);
}
