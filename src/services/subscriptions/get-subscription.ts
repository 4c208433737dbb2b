import { Plan } from '../../db/entities/plan.js';
import { Subscription } from '../../db/entities/subscription.js';
import { findOneRaw, findRaw } from '../../db/hot-reads.js';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import { ACCESS_GRANTING_STATUSES } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';
import { findOwnSubscription } from './find-subscription.js';

/** One of the user's subscriptions. */
export async function getSubscription(ctx: Pick<DataContext, 'em'>, user: User, id: string): Promise<Subscription> {
  return findOwnSubscription(ctx.em, user, id);
}

/**
 * The user's subscription that grants access (active or trialing), with its plan and scheduled
 * plan; not found when there is none. A hot read (every client polls it): fixed SQL, see findRaw.
 */
export async function getActiveSubscription(ctx: Pick<DataContext, 'em'>, user: User): Promise<Subscription> {
  const statuses = [...ACCESS_GRANTING_STATUSES];
  const sub = await findOneRaw(
    ctx.em,
    Subscription,
    `select * from subscriptions where user_id = ? and status in (${statuses.map(() => '?').join(', ')}) order by created_at desc limit 1`,
    [user.id, ...statuses],
  );
  if (!sub) throw new NotFoundError('Active subscription');
  // Mapped into the same identity map, the plans initialise the subscription's references.
  await findRaw(ctx.em, Plan, 'select * from plans where id in (?, ?, ?)', [
    sub.plan.id,
    sub.pendingPlan?.id ?? sub.plan.id,
    sub.pendingChangePlan?.id ?? sub.plan.id,
  ]);
  return sub;
}
