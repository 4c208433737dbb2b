import { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import { ACCESS_GRANTING_STATUSES } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';
import { findOwnSubscription, SUBSCRIPTION_POPULATE } from './find-subscription.js';

/** One of the user's subscriptions. */
export async function getSubscription(ctx: Pick<DataContext, 'em'>, user: User, id: string): Promise<Subscription> {
  return findOwnSubscription(ctx.em, user, id);
}

/** The user's subscription that grants access (active or trialing); not found when there is none. */
export async function getActiveSubscription(ctx: Pick<DataContext, 'em'>, user: User): Promise<Subscription> {
  const sub = await ctx.em.findOne(
    Subscription,
    { user: user.id, status: { $in: [...ACCESS_GRANTING_STATUSES] } },
    { populate: SUBSCRIPTION_POPULATE, orderBy: { createdAt: 'desc' } },
  );
  if (!sub) throw new NotFoundError('Active subscription');
  return sub;
}
