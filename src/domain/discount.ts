import type { SubscriptionDiscount } from '../db/entities/subscription.js';
import { compare, isPositive, minimum, money, multiplyAndRound, subtract, ZERO, type Money } from './money.js';

/*
 * NOTE: the one home of discount arithmetic (docs/pricing.md). A discount covers the lines of a
 * subscription's own price (its periods, and the charge of a plan or quantity change), never a
 * credit. A percentage takes that share of each covered line, rounded half up to what the
 * currency is paid in; an amount comes off the invoice once, spread over its covered lines in
 * order. Neither ever takes a line below zero. PPN is computed on what is left (the DPP).
 */

/** A percentage as whole hundredths ("25.5" → 2550), read without floating point. */
export function percentHundredths(percent: string): number {
  const [whole, fraction = ''] = percent.split('.');
  return Number(whole) * 100 + Number((fraction + '00').slice(0, 2));
}

/**
 * Whether the discount covers `plan`'s price from the instant `at`: the start of a period being
 * billed, or the moment of a plan or quantity change (which lies inside the last covered period
 * when the discount's count has run out but its period has not).
 */
export function discountCovers(discount: SubscriptionDiscount | null | undefined, plan: { slug: string; currency: string }, at: Date): discount is SubscriptionDiscount {
  if (!discount) return false;
  // A code redeemed with a change scheduled for the renewal starts covering at that renewal.
  if (at.getTime() < Date.parse(discount.starts_at)) return false;
  if (discount.ends_at !== null) {
    if (at.getTime() >= Date.parse(discount.ends_at)) return false;
  } else if (discount.cycles_left !== null && discount.cycles_left <= 0) return false;
  if (discount.plans && !discount.plans.includes(plan.slug)) return false;
  if (discount.amount_off !== null && discount.currency !== plan.currency) return false;
  return true;
}

/**
 * Whether the discount pays part of a new billed period starting at `periodStart` (a renewal, a
 * first period, the period a change across intervals starts): it covers the plan then and still
 * has a period to count. A discount whose count ran out covers no new period, even while its
 * last covered period (its `ends_at`) has not ended.
 */
export function discountCoversNewPeriod(discount: SubscriptionDiscount | null | undefined, plan: { slug: string; currency: string }, periodStart: Date): discount is SubscriptionDiscount {
  return discountCovers(discount, plan, periodStart) && discount.ends_at === null;
}

/**
 * The discount once the running period is cut short at `at` by a change that starts a new
 * period: a discount whose count ran out ends there, with the period it last covered, so no
 * later change inside the new period is priced as if that period were still covered.
 */
export function cutAt(discount: SubscriptionDiscount | null, at: Date): SubscriptionDiscount | null {
  if (!discount || discount.ends_at === null || Date.parse(discount.ends_at) <= at.getTime()) return discount;
  return { ...discount, ends_at: at.toISOString() };
}

/**
 * The discount of each line: `covered[i]` says whether line i is one the discount applies to.
 * Lines not covered, and lines of zero or less, get "0.00".
 */
export function lineDiscounts(discount: Pick<SubscriptionDiscount, 'percent_off' | 'amount_off'> | null | undefined, amounts: Money[], covered: boolean[], currency: string): Money[] {
  const out = amounts.map(() => ZERO);
  if (!discount) return out;
  let left = discount.amount_off !== null ? money(discount.amount_off) : null;
  amounts.forEach((amount, i) => {
    if (!covered[i] || !isPositive(amount)) return;
    if (discount.percent_off !== null) {
      out[i] = minimum(multiplyAndRound(amount, percentHundredths(discount.percent_off), 10000, currency), amount);
    } else if (left !== null && isPositive(left)) {
      out[i] = minimum(left, amount);
      left = subtract(left, out[i]);
    }
  });
  return out;
}

/** A price (one covered line alone) after the discount: never below zero. */
export function discountedPrice(discount: SubscriptionDiscount | null | undefined, plan: { slug: string; currency: string }, amount: Money, at: Date): Money {
  if (!discountCovers(discount, plan, at)) return money(amount);
  const [off] = lineDiscounts(discount, [amount], [true], plan.currency);
  const net = subtract(amount, off);
  return compare(net, ZERO) < 0 ? ZERO : net;
}

/**
 * The discount after one more billed period it covered, which ends at `periodEnd`: a `once` or
 * `repeating` discount counts down, and ends with that period when none is left.
 */
export function afterCoveredPeriod(discount: SubscriptionDiscount, periodEnd: Date): SubscriptionDiscount {
  if (discount.cycles_left === null) return discount;
  // Never below zero: a discount is counted only for a period it covers (discountCoversNewPeriod).
  const cyclesLeft = Math.max(0, discount.cycles_left - 1);
  return { ...discount, cycles_left: cyclesLeft, ends_at: cyclesLeft <= 0 ? periodEnd.toISOString() : null };
}
