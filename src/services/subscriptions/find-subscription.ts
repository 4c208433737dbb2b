import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';

/** Relations the subscription's wire shape needs. */
export const SUBSCRIPTION_POPULATE = ['plan', 'pendingPlan', 'pendingChangePlan', 'user'] as const;

/**
 * One of the user's subscriptions (another user's is not found, never forbidden); locked for
 * update when asked, which needs a transaction.
 */
export async function findOwnSubscription(em: EntityManager, user: User, id: string, opts: { lock?: boolean } = {}): Promise<Subscription> {
  // Locked alone, then populated: PostgreSQL refuses FOR UPDATE across the outer join to pending_plan.
  const sub = await em.findOne(Subscription, { id, user: user.id }, opts.lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {});
  if (!sub) throw new NotFoundError('Subscription');
  await em.populate(sub, SUBSCRIPTION_POPULATE);
  return sub;
}

/** The subscription as the API shows it, read fresh after the use case's transactions committed. */
export async function loadSubscription(em: EntityManager, id: string): Promise<Subscription> {
  return em.fork().findOneOrFail(Subscription, id, { populate: SUBSCRIPTION_POPULATE });
}
