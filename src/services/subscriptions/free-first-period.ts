import type { PromotionCode } from '../../db/entities/coupon.js';
import type { Plan } from '../../db/entities/plan.js';
import { cycleBoundary } from '../../domain/billing-calendar.js';
import { discountCoversNewPeriod } from '../../domain/discount.js';
import { isPositive } from '../../domain/money.js';
import type { ServiceContext } from '../context.js';
import { discountOf } from '../coupons/redeem.js';
import { priceInvoice } from '../invoices/create-invoice.js';
import { periodLine } from '../invoices/subscription-lines.js';

/*
 * NOTE: a first period that costs nothing (a 100 % code, or an amount off of at least the price)
 * takes no money, so no charge ever saves the card the customer gave; the first full-price
 * renewal would then find none. Such a card is kept as a trial's card is (authorize-trial-card.ts):
 * pre-authorised for what that renewal will charge, saved, and the hold released.
 */

/** Whether the plan's first period, priced with the promotion code's discount, asks nothing. */
export function firstPeriodIsFree(ctx: Pick<ServiceContext, 'config'>, plan: Plan, quantity: number, promo: PromotionCode, at: Date): boolean {
  const discount = discountOf(promo.coupon, promo, at);
  if (!discountCoversNewPeriod(discount, plan, at)) return false;
  const periodEnd = cycleBoundary(at, plan.interval, plan.intervalUnit, 1);
  const priced = priceInvoice(ctx.config, { lines: [periodLine(plan, quantity, at, periodEnd)], currency: plan.currency, taxBehavior: plan.taxBehavior, discount });
  return !isPositive(priced.tax.total);
}
