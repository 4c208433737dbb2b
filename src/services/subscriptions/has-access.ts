import { Subscription } from '../../db/entities/subscription.js';
import { ACCESS_GRANTING_STATUSES } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';

/** True when the user holds a subscription that grants access (active or trialing). */
export async function hasAccessGrantingSubscription(ctx: Pick<DataContext, 'em'>, userId: string): Promise<boolean> {
  const count = await ctx.em.count(Subscription, { user: userId, status: { $in: [...ACCESS_GRANTING_STATUSES] } });
  return count > 0;
}
