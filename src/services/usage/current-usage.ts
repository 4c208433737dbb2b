import type { Subscription } from '../../db/entities/subscription.js';
import { LIVE_SUBSCRIPTION_STATUSES } from '../../domain/states/subscription-states.js';
import { add, type Money } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { usageOf, usageOpenFrom, type UsageChargeAmount } from './usage-charges.js';

/** A subscription's open usage window as the coming invoice will bill it (GET /subscriptions/{id}/usage/, the portal). */
export interface CurrentUsage {
  subscription: Subscription;
  currency: string;
  /** The window's start (usageOpenFrom); null before the subscription starts. */
  from: Date | null;
  /** Where the window ends and is invoiced: the running period's end; null when no period runs. */
  to: Date | null;
  /** Per charge of the plan, counted from `from` up to now (never past `to`); [] for a plan without charges. */
  charges: UsageChargeAmount[];
  /** The charges' total so far, before PPN. */
  amount: Money;
}

/**
 * The usage so far of `sub` (its plan loaded) under its current plan: the window opens at
 * usageOpenFrom and ends at the period's end, when it is invoiced. A live subscription's period
 * that has ended (billed, the next one waiting for its payment) runs no window end yet: `to` is
 * null and units count up to now. Nothing is counted before the subscription starts.
 */
export async function currentUsage(ctx: Pick<DataContext, 'em' | 'clock'>, sub: Subscription): Promise<CurrentUsage> {
  const plan = sub.plan;
  const from = usageOpenFrom(sub);
  const live = LIVE_SUBSCRIPTION_STATUSES.includes(sub.status);
  const end = sub.currentPeriodEnd;
  const to = live && from !== null && end !== null && end > from ? end : null;
  const now = ctx.clock.now();
  const upTo = to !== null && to < now ? to : now;
  const charges = from === null ? await usageOf(ctx, sub, plan, now, now) : await usageOf(ctx, sub, plan, from, upTo);
  return {
    subscription: sub,
    currency: plan.currency,
    from,
    to,
    charges,
    amount: add(...charges.map((c) => c.amount)),
  };
}
