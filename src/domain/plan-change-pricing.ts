import type { Plan } from '../db/entities/plan.js';
import { cycleBoundary } from './billing-calendar.js';
import { subtract, type Money } from './money.js';
import { unusedShare } from './unused-share.js';

export interface PlanChangeTerms {
  /** The unused share of what was paid for the current period (never of a list price). */
  credit: Money;
  /** What the new plan costs from the change to `periodEnd`. */
  charge: Money;
  /** charge − credit: positive is owed now, negative goes to the wallet. */
  net: Money;
  /** The period the subscription is in after the change. */
  periodStart: Date;
  periodEnd: Date;
  /** True when the change starts a new period (plans of different intervals). */
  resetsPeriod: boolean;
}

export function sameInterval(a: Plan, b: Plan): boolean {
  return a.interval === b.interval && a.intervalUnit === b.intervalUnit;
}

/**
 * NOTE: the price of an immediate plan change (DECISIONS §4). Same interval: the new plan's
 * price for the unused fraction of the running period, less the credit; the period stays.
 * Different interval: the period restarts at the change, and the new plan's full price is due,
 * less the credit; the next billing date is the change plus the new interval.
 */
export function priceChange(input: {
  oldPlan: Plan;
  newPlan: Plan;
  periodStart: Date | null;
  periodEnd: Date | null;
  at: Date;
  credit: Money;
}): PlanChangeTerms {
  const { oldPlan, newPlan, periodStart, periodEnd, at, credit } = input;
  if (periodStart && periodEnd && periodEnd.getTime() > at.getTime() && sameInterval(oldPlan, newPlan)) {
    const charge = unusedShare(newPlan.price, periodStart, periodEnd, at, newPlan.currency);
    return { credit, charge, net: subtract(charge, credit), periodStart, periodEnd, resetsPeriod: false };
  }
  const end = cycleBoundary(at, newPlan.interval, newPlan.intervalUnit, 1);
  return { credit, charge: newPlan.price, net: subtract(newPlan.price, credit), periodStart: at, periodEnd: end, resetsPeriod: true };
}
