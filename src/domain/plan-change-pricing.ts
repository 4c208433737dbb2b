import type { Plan } from '../db/entities/plan.js';
import { cycleBoundary } from './billing-calendar.js';
import { isPositive, subtract, type Money } from './money.js';
import { taxBaseCovering, taxInvoice } from './tax.js';
import { unusedShare } from './unused-share.js';

export interface PlanChangeTerms {
  /** The unused share of what was paid for the current period (never of a list price). */
  credit: Money;
  /** What the new plan costs from the change to `periodEnd`, as money: PPN included. */
  charge: Money;
  /** charge − credit: positive is owed now, negative goes to the wallet. */
  net: Money;
  /** The period the subscription is in after the change. */
  periodStart: Date;
  periodEnd: Date;
  /** True when the change starts a new period (plans of different intervals). */
  resetsPeriod: boolean;
}

/**
 * The change's invoice lines, in the new plan's price terms: the charge at the plan's price,
 * less the credit. On an exclusive plan the price is before PPN while the credit is money
 * already paid (PPN included), so the credit line is what makes the invoice's total, PPN added,
 * come to what is owed (src/domain/tax.ts, taxBaseCovering).
 */
export interface PlanChangeLines {
  chargeLine: Money;
  creditLine: Money;
}

export function sameInterval(a: Plan, b: Plan): boolean {
  return a.interval === b.interval && a.intervalUnit === b.intervalUnit;
}

/**
 * NOTE: the price of an immediate plan change (docs/billing.md, 'Money rules'). Same interval: the new plan's
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
  /** Whether the seller charges PPN (BILLING_PKP). */
  pkp: boolean;
}): PlanChangeTerms & PlanChangeLines {
  const { oldPlan, newPlan, periodStart, periodEnd, at, credit } = input;
  const priced = (chargeLine: Money) => {
    const charge = taxInvoice(chargeLine, newPlan.taxBehavior, newPlan.currency, input.pkp).total;
    const net = subtract(charge, credit);
    const exclusive = input.pkp && newPlan.taxBehavior === 'exclusive' && isPositive(net);
    const creditLine = exclusive ? subtract(chargeLine, taxBaseCovering(net, newPlan.currency)) : credit;
    return { credit, charge, net, chargeLine, creditLine };
  };
  if (periodStart && periodEnd && periodEnd.getTime() > at.getTime() && sameInterval(oldPlan, newPlan)) {
    const chargeLine = unusedShare(newPlan.price, periodStart, periodEnd, at, newPlan.currency);
    return { ...priced(chargeLine), periodStart, periodEnd, resetsPeriod: false };
  }
  const end = cycleBoundary(at, newPlan.interval, newPlan.intervalUnit, 1);
  return { ...priced(newPlan.price), periodStart: at, periodEnd: end, resetsPeriod: true };
}
