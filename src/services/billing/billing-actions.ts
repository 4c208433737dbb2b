import { Invoice } from '../../db/entities/invoice.js';
import type { Plan } from '../../db/entities/plan.js';
import type { Subscription } from '../../db/entities/subscription.js';
import type { EntityManager } from '@mikro-orm/knex';
import { OPEN_RENEWAL_INVOICE } from '../../domain/paid-access.js';
import { DUE, DUE_SCANS, holds, selectSubscriptionIds, type DueTime } from './due-rule.js';

export type DueAction =
  | { kind: 'cancel_at_period_end' }
  | { kind: 'expire' }
  | { kind: 'renew'; planChange: Plan | null }
  | { kind: 'plan_change_blocked'; message: string }
  | { kind: 'collect'; invoice: Invoice }
  | { kind: 'trial_notice' };

/** The one open renewal invoice of a subscription, if any (the period advances only when it is paid). */
export async function openRenewalInvoice(em: EntityManager, sub: Subscription): Promise<Invoice | null> {
  return em.findOne(Invoice, { subscription: sub, ...OPEN_RENEWAL_INVOICE }, { orderBy: { createdAt: 'asc' } });
}

/** The plan the next cycle is billed under: a scheduled change takes effect at renewal. */
export function nextCyclePlan(sub: Subscription): Plan {
  return sub.pendingPlan ?? sub.plan;
}

/**
 * What the billing run must do for a subscription at `at`, first thing first; null when
 * nothing is due. The clauses are due-rule.ts's DUE (the same the run's selection is written
 * from); pure apart from the open renewal invoice the caller loaded, so a dry run reports
 * exactly what a real run would do.
 */
export function dueAction(sub: Subscription, openInvoice: Invoice | null, at: DueTime): DueAction | null {
  const subject = { sub, openInvoice };
  if (holds(DUE.cancelAtPeriodEnd, subject, at)) return { kind: 'cancel_at_period_end' };
  if (openInvoice && holds(DUE.collect, subject, at)) return { kind: 'collect', invoice: openInvoice };
  if (holds(DUE.renewal, subject, at)) {
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
  if (holds(DUE.trialNotice, subject, at)) return { kind: 'trial_notice' };
  return null;
}

/**
 * Ids of subscriptions with something due at `at` (with the usage grace), in id order after `afterId` (keyset pages,
 * so a long run neither skips nor repeats one): one query per scan of due-rule.ts's DUE_SCANS,
 * one after another (an entity manager, and SQLite's one connection, runs one query at a time).
 * Each answer is checked again under the subscription's lock before anything is written.
 */
export async function dueSubscriptionIds(em: EntityManager, at: DueTime, afterId: string | null, limit: number): Promise<string[]> {
  const ids = new Set<string>();
  for (const scan of DUE_SCANS) for (const id of await selectSubscriptionIds(em, scan, at, afterId, limit)) ids.add(id);
  return [...ids].sort().slice(0, limit);
}
