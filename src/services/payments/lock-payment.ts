import { LockMode, type AutoPath, type Loaded } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { Payment } from '../../db/entities/payment.js';
import { Subscription } from '../../db/entities/subscription.js';

/** What names a payment for good: its id (and owner), or its order id. */
export type PaymentKey = { id: string } | { id: string; user: string } | { orderId: string };

/**
 * NOTE: the one lock order (docs/architecture.md): a subscription first, then its payments, then
 * what they change (refunds, invoices, the wallet); a top-up, then the wallet. Subscription use
 * cases lock the subscription before they touch its payments, so code that starts from a payment
 * (a gateway event, a refund, a charge answer) reads the payment's subscription without a lock,
 * locks that subscription, and only then locks the payment: two orders would deadlock where one
 * order only waits.
 *
 * Returns the locked payment (its subscription, when it has one, locked too), or null when no
 * payment matches. `where` names the payment by what never changes; the caller re-checks its
 * status under the lock. Must run inside a transaction.
 */
export async function lockSubscriptionThenPayment<const P extends string = never>(
  em: EntityManager,
  where: PaymentKey,
  /**
   * What to load with the locked rows, each joined into its locking query (only the subscription
   * and the payment rows are locked): the subscription's plan and user, the payment's own relations.
   */
  load: { subscription?: readonly ('plan' | 'user')[]; payment?: readonly AutoPath<Payment, P>[] } = {},
): Promise<Loaded<Payment, P> | null> {
  // A raw read: no entity enters the identity map before its row is locked.
  const seen = (await em.createQueryBuilder(Payment, 'p').select(['p.id', 'p.subscription']).where(where).limit(1).execute('get')) as
    | { id: string; subscription: string | null }
    | undefined;
  if (!seen) return null;
  // NOTE: FOR UPDATE OF the locked table alone: the plan row, which every subscription of that plan
  // shares, is never locked (that serialised every settlement of a plan). Two statements, not one
  // join over both: SQLite cannot flatten a left join into a nested inner join and scanned every
  // subscription for each settlement.
  if (seen.subscription) {
    await em.findOne(Subscription, { id: seen.subscription }, {
      lockMode: LockMode.PESSIMISTIC_WRITE,
      lockTableAliases: ['s0'],
      populate: (load.subscription ?? []) as never,
      strategy: 'joined',
    });
  }
  const payment = await em.findOne(Payment, { id: seen.id }, {
    lockMode: LockMode.PESSIMISTIC_WRITE,
    lockTableAliases: ['p0'],
    populate: (load.payment ?? []) as never,
    strategy: 'joined',
  });
  if (!payment) return null;
  // A payment never changes subscription; this would mean the lock above was the wrong one.
  if ((payment.subscription?.id ?? null) !== (seen.subscription ?? null)) throw new Error(`payment ${payment.id} changed subscription while being locked`);
  return payment as Loaded<Payment, P>;
}
