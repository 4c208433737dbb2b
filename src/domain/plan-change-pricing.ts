import type { Plan } from '../db/entities/plan.js';
import type { SubscriptionDiscount } from '../db/entities/subscription.js';
import { cycleBoundary } from './billing-calendar.js';
import { discountCovers, discountCoversNewPeriod, lineDiscounts } from './discount.js';
import { add, isPositive, multiplyAndRound, subtract, ZERO, type Money } from './money.js';
import { taxBaseCovering, taxInvoice } from './tax.js';
import { proratedPrice } from './unused-share.js';

export interface PlanChangeTerms {
  /** The unused share of what was paid for the current period (never of a list price). */
  credit: Money;
  /**
   * What the new plan costs from the change to `periodEnd`, as money: after its discount, PPN
   * included, as the change's invoice states it (on an exclusive plan where no DPP gives the
   * exact amount, the one unit more that the invoice asks: see `net`).
   */
  charge: Money;
  /**
   * What the change's invoice asks now (positive), or what goes to the wallet (negative): always
   * charge − credit. NOTE: on an exclusive plan no DPP may give what is owed exactly (a DPP step
   * of one unit moves the total by one or two); the invoice then asks one unit more, and that
   * unit is part of what the period costs: it pays for the period with the rest, and is never
   * credited back (a remainder of rounding is no supply given back, so never a credit note).
   */
  net: Money;
  /** The period the subscription is in after the change. */
  periodStart: Date;
  periodEnd: Date;
  /** True when the change starts a new period (plans of different intervals). */
  resetsPeriod: boolean;
}

/**
 * The change's invoice lines, in the new plan's price terms: the charge at the plan's price
 * (× units), its discount, less the credit. On an exclusive plan the price is before PPN while
 * the credit is money already paid (PPN included), so the credit line is what makes the
 * invoice's total, discount taken and PPN added, come to what is owed (src/domain/tax.ts,
 * taxBaseCovering).
 */
export interface PlanChangeLines {
  /** The charge line's amount before its discount: unit × quantity, as the invoice line states it. */
  chargeLine: Money;
  chargeUnit: Money;
  chargeQuantity: number;
  /** The discount on the charge line (the invoice's lineDiscounts gives the same). */
  chargeDiscount: Money;
  creditLine: Money;
  /** The discount that covers the charge, to price the invoice with; null when none does. */
  discount: SubscriptionDiscount | null;
}

export function sameInterval(a: Plan, b: Plan): boolean {
  return a.interval === b.interval && a.intervalUnit === b.intervalUnit;
}

/** The units a subscription has on `plan`: its quantity on a per-unit plan, else 1. */
export function unitsOn(plan: Pick<Plan, 'perUnit'>, quantity: number): number {
  return plan.perUnit ? quantity : 1;
}

/**
 * NOTE: the price of an immediate plan change (docs/billing.md, 'Money rules'). Same interval: the new plan's
 * price (× units) for the unused fraction of the running period, less the credit; the period stays.
 * Different interval: the period restarts at the change, and the new plan's full price is due,
 * less the credit; the next billing date is the change plus the new interval.
 *
 * Both sides are discounted prices (docs/pricing.md): the credit is what was actually paid, and
 * the charge is taken after the discount that covers the new plan at the change
 * (discountCovers). The rest of a running period is the period the discount already covered
 * (a discount whose count ran out still covers it until its `ends_at`); a new period is a new
 * billed period, which only a discount with a period left to cover pays part of.
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
  /** The subscription's units (default 1): the new plan's price counts them when it is per unit. */
  quantity?: number;
  /** The subscription's discount from the change on (the one a code redeemed with it, or the one it has). */
  discount?: SubscriptionDiscount | null;
}): PlanChangeTerms & PlanChangeLines {
  const { oldPlan, newPlan, periodStart, periodEnd, at, credit } = input;
  const quantity = unitsOn(newPlan, input.quantity ?? 1);
  const currency = newPlan.currency;
  const priced = (chargeUnit: Money, chargeQuantity: number, resets: boolean) => {
    const chargeLine = multiplyAndRound(chargeUnit, chargeQuantity, 1, currency);
    const given = input.discount ?? null;
    const discount = (resets ? discountCoversNewPeriod(given, newPlan, at) : discountCovers(given, newPlan, at)) ? given : null;
    const [chargeDiscount = ZERO] = lineDiscounts(discount, [chargeLine], [true], currency);
    const discounted = subtract(chargeLine, chargeDiscount);
    const charge = taxInvoice(discounted, newPlan.taxBehavior, currency, input.pkp).total;
    let net = subtract(charge, credit);
    // A credit of at least the charge pays all of it on the invoice (its total 0, no PPN); the rest goes to the wallet.
    let creditLine = isPositive(net) ? credit : discounted;
    if (input.pkp && newPlan.taxBehavior === 'exclusive' && isPositive(net)) {
      // The DPP whose total (PPN added) reaches what is owed; the credit line brings the discounted charge down to it.
      const taxBase = taxBaseCovering(net, currency);
      creditLine = subtract(discounted, taxBase);
      net = taxInvoice(taxBase, 'exclusive', currency, true).total;
    }
    return { credit, charge: add(credit, net), net, chargeLine, chargeUnit, chargeQuantity, chargeDiscount, creditLine, discount };
  };
  if (periodStart && periodEnd && periodEnd.getTime() > at.getTime() && sameInterval(oldPlan, newPlan)) {
    return { ...priced(proratedPrice(newPlan.price, quantity, periodStart, periodEnd, at, currency), 1, false), periodStart, periodEnd, resetsPeriod: false };
  }
  const end = cycleBoundary(at, newPlan.interval, newPlan.intervalUnit, 1);
  return { ...priced(newPlan.price, quantity, true), periodStart: at, periodEnd: end, resetsPeriod: true };
}
