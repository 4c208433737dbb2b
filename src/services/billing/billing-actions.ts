import { Invoice } from '../../db/entities/invoice.js';
import type { Plan } from '../../db/entities/plan.js';
import { Subscription } from '../../db/entities/subscription.js';
import { addDays } from '../../domain/billing-calendar.js';
import type { EntityManager } from '@mikro-orm/knex';
import { TRIAL_NOTICE_DAYS } from './dunning-schedule.js';

/** Statuses the billing run looks at; paused subscriptions are not billed (resume moves their dates). */
export const BILLED_STATUSES = ['trialing', 'active', 'past_due'] as const;

export type DueAction =
  | { kind: 'cancel_at_period_end' }
  | { kind: 'expire' }
  | { kind: 'renew'; planChange: Plan | null }
  | { kind: 'plan_change_blocked'; message: string }
  | { kind: 'collect'; invoice: Invoice }
  | { kind: 'trial_notice' };

/** The one open renewal invoice of a subscription, if any (the period advances only when it is paid). */
export async function openRenewalInvoice(em: EntityManager, sub: Subscription): Promise<Invoice | null> {
  return em.findOne(Invoice, { subscription: sub, billingReason: 'subscription_cycle', status: 'open' }, { orderBy: { createdAt: 'asc' } });
}

/** The plan the next cycle is billed under: a scheduled change takes effect at renewal. */
export function nextCyclePlan(sub: Subscription): Plan {
  return sub.pendingPlan ?? sub.plan;
}

/**
 * What the billing run must do for a subscription at `at`, first thing first; null when
 * nothing is due. Pure apart from the open renewal invoice the caller loaded, so a dry run
 * reports exactly what a real run would do.
 */
export function dueAction(sub: Subscription, openInvoice: Invoice | null, at: Date): DueAction | null {
  if (!(BILLED_STATUSES as readonly string[]).includes(sub.status)) return null;
  const periodOver = sub.nextBillingDate !== null && sub.nextBillingDate.getTime() <= at.getTime();
  if (periodOver && sub.cancelAtPeriodEnd) return { kind: 'cancel_at_period_end' };
  if (openInvoice) {
    return openInvoice.nextRetryAt && openInvoice.nextRetryAt.getTime() <= at.getTime() ? { kind: 'collect', invoice: openInvoice } : null;
  }
  if (periodOver) {
    const plan = nextCyclePlan(sub);
    // NOTE: max_cycles counts paid cycles (a trial is not one), on the plan that would bill the next cycle.
    if (plan.maxCycles > 0 && sub.cyclesCompleted >= plan.maxCycles && sub.status !== 'trialing') return { kind: 'expire' };
    const pending = sub.pendingPlan;
    if (pending && pending.currency !== sub.plan.currency) {
      return {
        kind: 'plan_change_blocked',
        message: `the scheduled plan ${pending.slug} is priced in ${pending.currency} but the subscription is billed in ${sub.plan.currency}; change or clear the scheduled plan`,
      };
    }
    return { kind: 'renew', planChange: pending && pending.id !== sub.plan.id ? pending : null };
  }
  if (
    sub.status === 'trialing' &&
    sub.trialEnd &&
    !sub.trialWillEndNotifiedAt &&
    sub.trialEnd.getTime() > at.getTime() &&
    addDays(at, TRIAL_NOTICE_DAYS).getTime() >= sub.trialEnd.getTime()
  ) {
    return { kind: 'trial_notice' };
  }
  return null;
}

/**
 * Ids of subscriptions with something due at `at`, in id order after `afterId` (keyset pages,
 * so a long run neither skips nor repeats one). Three cheap indexed queries; each answer is
 * checked again under the subscription's lock before anything is written.
 */
export async function dueSubscriptionIds(em: EntityManager, at: Date, afterId: string | null, limit: number): Promise<string[]> {
  const after = afterId ? { id: { $gt: afterId } } : {};
  const statuses = [...BILLED_STATUSES];
  // One after another: an entity manager (and SQLite's one connection) runs one query at a time.
  // NOTE: periods that ended with the renewal invoice not yet issued, and those ending in a
  // cancellation (open invoice or not), in one scan in id order that stops at `limit` rows: as
  // two queries, the cancellations' own scan read every due subscription on every page.
  const periodEnded = await em
      .createQueryBuilder(Subscription, 's')
      .select('s.id')
      .where({ status: { $in: statuses }, nextBillingDate: { $lte: at }, ...after })
      .andWhere(
        `(s.cancel_at_period_end = ? or not exists (select 1 from invoices i where i.subscription_id = s.id and i.billing_reason = 'subscription_cycle' and i.status = 'open'))`,
        [true],
      )
      .orderBy({ id: 'asc' })
      .limit(limit)
      .getResultList();
  const trialNotices = await em.find(
      Subscription,
      { status: 'trialing', trialWillEndNotifiedAt: null, trialEnd: { $gt: at, $lte: addDays(at, TRIAL_NOTICE_DAYS) }, ...after },
      { fields: ['id'], orderBy: { id: 'asc' }, limit },
    );
  const dunning = await em.find(
      Invoice,
      { status: 'open', billingReason: 'subscription_cycle', nextRetryAt: { $lte: at }, subscription: { status: { $in: statuses }, ...after } },
      { fields: ['subscription'], orderBy: { subscription: { id: 'asc' } }, limit },
    );
  const ids = new Set<string>();
  for (const s of [...periodEnded, ...trialNotices]) ids.add(s.id);
  for (const i of dunning) if (i.subscription) ids.add(i.subscription.id);
  return [...ids].sort().slice(0, limit);
}
