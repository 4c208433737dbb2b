import { money, multiplyAndRound, ZERO, type Money } from './money.js';

/**
 * NOTE: the unused share of money paid for the span [start, end) at time `at`, by the
 * milliseconds left, rounded half up to what the currency can be charged in: all of it before
 * the span starts, nothing once it has ended. The one measure of credit on a plan change and of
 * what a customer may get back by a refund.
 */
export function unusedShare(amount: Money, start: Date, end: Date, at: Date, currency: string): Money {
  const total = end.getTime() - start.getTime();
  if (at.getTime() >= end.getTime() || total <= 0) return ZERO;
  if (at.getTime() <= start.getTime()) return money(amount);
  return multiplyAndRound(amount, end.getTime() - at.getTime(), total, currency);
}

/**
 * NOTE: what `units` units at `unitPrice` cost for what is left of [start, end) at `at`: units ×
 * price × the share left, rounded once. Rounding one unit's share and then multiplying would
 * miss by up to half a unit of money per unit (three seats could cost a rupiah less than three
 * seats' worth of time). The one proration of a plan change and of a change of units.
 */
export function proratedPrice(unitPrice: Money, units: number, start: Date, end: Date, at: Date, currency: string): Money {
  return unusedShare(multiplyAndRound(unitPrice, units, 1, currency), start, end, at, currency);
}
