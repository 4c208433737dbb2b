import { Decimal } from 'decimal.js';
import type { Invoice, InvoiceLine } from '../../db/entities/invoice.js';
import { isWholeUnitCurrency } from '../../domain/money.js';
import type { FakturValue } from '../../domain/tax.js';
import type { LineWords } from '../documents/line-words.js';
import { unitOfPeriod, type FakturLine } from './coretax-xml.js';

/*
 * NOTE: a faktur's lines (docs/tax.md, "What each faktur holds"): one GoodService per invoice
 * line that charges, so that the plan's price, each usage charge and each seat change reach the
 * tax office with their own name, period, quantity, unit, price and discount. What the faktur
 * holds (its DPP, DPP Nilai Lain and PPN) is decided for the whole faktur, as the invoice's are;
 * the lines share it out so that they add up to it exactly:
 *
 * - a line's DPP is its share of the faktur's DPP, in proportion to what the line charged after
 *   its discount, in whole rupiah, the leftover rupiah going to the lines with the largest
 *   fractions (the earlier line on a tie);
 * - when the faktur holds less than the lines charged (a credit line on the invoice, such as a
 *   plan change's unused time, or a credit note before the export), every line gives back the
 *   same share: its price and its discount shrink in that proportion. A credit is never shown as
 *   a discount: the discount stays the one the invoice gave, in proportion;
 * - a line's DPP Nilai Lain is 11/12 of its DPP to the cent, and its PPN 12 % of that, each
 *   rounded up or down so that the lines add up to the faktur's (computed on the faktur's whole
 *   DPP, as the invoice's are): no line is more than a cent (DPP Nilai Lain) or a rupiah (PPN) off
 *   its own exact figure;
 * - Coretax checks Price × Qty − TotalDiscount = TaxBase on each line: a unit price that cannot be
 *   written to the cent is rounded up to it, and the cents (fewer than the quantity) go to the
 *   discount.
 */

const D = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP });

type LineFields = Pick<InvoiceLine, 'position' | 'kind' | 'quantity' | 'amount' | 'discountAmount' | 'periodStart' | 'periodEnd' | 'subject' | 'description'>;

/**
 * Shares `total` out over `weights` in steps of `unit`: each gets its proportional share rounded
 * down, and the steps left over go to the largest fractions (the earlier one on a tie). The
 * result adds up to `total` exactly.
 */
export function shareOut(total: Decimal, weights: Decimal[], unit: Decimal): Decimal[] {
  const sum = weights.reduce((s, w) => s.plus(w), new D(0));
  if (sum.isZero()) return weights.map((_, i) => (i === 0 ? total : new D(0)));
  const exact = weights.map((w) => total.times(w).dividedBy(sum));
  return roundToTotal(total, exact, unit);
}

/**
 * Rounds each of `exact` down to a multiple of `unit`, then up for the largest fractions until
 * they add up to `total` (down again for the smallest ones if the sum overshoots).
 */
export function roundToTotal(total: Decimal, exact: Decimal[], unit: Decimal): Decimal[] {
  const floors = exact.map((e) => e.dividedBy(unit).floor().times(unit));
  let left = total.minus(floors.reduce((s, f) => s.plus(f), new D(0))).dividedBy(unit).round().toNumber();
  const byFraction = exact.map((e, i) => ({ i, fraction: e.minus(floors[i]) })).sort((a, b) => b.fraction.comparedTo(a.fraction) || a.i - b.i);
  const result = [...floors];
  for (let k = 0; left > 0 && byFraction.length > 0; k = (k + 1) % byFraction.length, left--) result[byFraction[k].i] = result[byFraction[k].i].plus(unit);
  for (let k = byFraction.length - 1; left < 0 && k >= 0; k--) {
    const i = byFraction[k].i;
    if (result[i].greaterThanOrEqualTo(unit)) {
      result[i] = result[i].minus(unit);
      left++;
    }
  }
  return result;
}

/**
 * The GoodService lines of a faktur holding `value` (the invoice's DPP less the credits before its
 * export), from the invoice's lines: one per line that charges, in the invoice's order.
 */
export function fakturLines(invoice: Pick<Invoice, 'currency'>, lines: LineFields[], value: FakturValue, words: LineWords): FakturLine[] {
  const charged = [...lines].sort((a, b) => a.position - b.position).filter((l) => new D(l.amount).greaterThan(0));
  if (charged.length === 0) return [];
  const unit = new D(isWholeUnitCurrency(invoice.currency) ? 1 : '0.01');
  const cent = new D('0.01');
  // What each line charged after its discount, in the invoice's own terms (PPN inside for an inclusive price).
  const nets = charged.map((l) => Decimal.max(new D(l.amount).minus(l.discountAmount), 0));
  const netSum = nets.reduce((s, n) => s.plus(n), new D(0));
  const taxBases = shareOut(new D(value.taxBase), nets, unit);
  // The share of what the lines charged that the faktur holds, in DPP: discounts shrink with it.
  const share = netSum.isZero() ? new D(0) : new D(value.taxBase).dividedBy(netSum);
  const otherTaxBases = roundToTotal(new D(value.otherTaxBase), taxBases.map((b) => b.times(11).dividedBy(12)), cent);
  const vats = roundToTotal(new D(value.taxAmount), otherTaxBases.map((o) => o.times(12).dividedBy(100)), unit);
  return charged.map((line, i) => {
    const taxBase = taxBases[i];
    const before = taxBase.plus(new D(line.discountAmount).times(share).toDecimalPlaces(2, Decimal.ROUND_HALF_UP));
    const quantity = Math.max(line.quantity, 1);
    const price = before.dividedBy(quantity).toDecimalPlaces(2, Decimal.ROUND_UP);
    return {
      name: words.withPeriod(line),
      unit: unitOfPeriod(line.kind, line.periodStart, line.periodEnd),
      price: price.toFixed(2),
      quantity,
      discount: price.times(quantity).minus(taxBase).toFixed(2),
      taxBase: taxBase.toFixed(2),
      otherTaxBase: otherTaxBases[i].toFixed(2),
      vat: vats[i].toFixed(2),
    };
  });
}

