import { Decimal } from 'decimal.js';
import { isWholeUnitCurrency, type Money } from './money.js';

/*
 * NOTE: the one home of PPN arithmetic (docs/tax.md). Ordinary services under
 * PMK 131/2024: the nominal rate is 12 %, charged on DPP Nilai Lain, which is 11/12 of the DPP
 * (the selling price after discounts) kept to the cent; the PPN is 12 % of it to the cent, then
 * rounded half-up to the whole rupiah (PER-11/PJ/2025 Pasal 129). Keeping DPP Nilai Lain at two places, not whole rupiah,
 * makes the PPN equal 11 % of the DPP for every whole-rupiah DPP; rounding
 * it first is off by a rupiah in 2.7 % of amounts.
 */

export type TaxBehavior = 'none' | 'exclusive' | 'inclusive';
export const TAX_BEHAVIORS: readonly TaxBehavior[] = ['none', 'exclusive', 'inclusive'];

/** What the finance team must do in Coretax for a credit note (docs/tax.md, "Credit notes"). */
export type TaxAction = 'none' | 'buyer_cancellation_note' | 'amendment' | 'cancel_and_reissue';

/** The nominal PPN rate, as invoices print it. */
export const PPN_RATE = '12.00';

const TaxDecimal = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP });

function dec(value: Money | Decimal): Decimal {
  return new TaxDecimal(value);
}

/** Half-up to the currency's smallest payable unit: whole rupiah for IDR, cents otherwise. */
function toUnit(value: Decimal, currency: string): Decimal {
  return value.toDecimalPlaces(isWholeUnitCurrency(currency) ? 0 : 2, Decimal.ROUND_HALF_UP);
}

/** DPP Nilai Lain and PPN of a DPP. */
export function ppnOf(taxBase: Money, currency: string): { otherTaxBase: Money; taxAmount: Money } {
  const otherTaxBase = dec(taxBase).times(11).dividedBy(12).toDecimalPlaces(2, Decimal.ROUND_HALF_UP);
  // To the cent first, as the faktur states it (at most two places), then to the rupiah.
  const taxAmount = toUnit(otherTaxBase.times(12).dividedBy(100).toDecimalPlaces(2, Decimal.ROUND_HALF_UP), currency);
  return { otherTaxBase: otherTaxBase.toFixed(2), taxAmount: taxAmount.toFixed(2) };
}

/** The tax fields an invoice carries; all "0.00" and behaviour `none` when no PPN applies. */
export interface InvoiceTax {
  taxBehavior: TaxBehavior;
  taxRate: Money;
  taxBase: Money;
  otherTaxBase: Money;
  taxAmount: Money;
  /** Inclusive prices: what the price holds beyond DPP + PPN (−1, 0 or +1 rupiah). */
  taxRounding: Money;
  /** What the buyer pays: subtotal + PPN (exclusive), the subtotal itself otherwise. */
  total: Money;
}

function untaxed(subtotal: Money): InvoiceTax {
  return { taxBehavior: 'none', taxRate: '0.00', taxBase: '0.00', otherTaxBase: '0.00', taxAmount: '0.00', taxRounding: '0.00', total: dec(subtotal).toFixed(2) };
}

/**
 * The PPN of an invoice whose lines add up to `subtotal` (after proration credits and
 * discounts). `charged` is false when the seller is not a PKP: then no PPN, whatever the plan
 * says. A subtotal of zero or less carries no PPN (nothing is supplied for money).
 *
 * Exclusive: DPP = subtotal, total = DPP + PPN.
 * Inclusive: the subtotal holds the PPN. The DPP is the whole unit whose DPP + PPN comes
 * closest to the price (exactly, for nine prices in ten); what is left, a rupiah either way, is
 * the rounding, so DPP + PPN + rounding = total, and the PPN is always what the exclusive
 * formula gives on that DPP, which is what Coretax checks.
 */
export function taxInvoice(subtotal: Money, behavior: TaxBehavior, currency: string, charged: boolean): InvoiceTax {
  if (!charged || behavior === 'none' || dec(subtotal).lessThanOrEqualTo(0)) return untaxed(subtotal);
  if (behavior === 'exclusive') {
    const { otherTaxBase, taxAmount } = ppnOf(subtotal, currency);
    return {
      taxBehavior: 'exclusive', taxRate: PPN_RATE, taxBase: dec(subtotal).toFixed(2), otherTaxBase, taxAmount,
      taxRounding: '0.00', total: dec(subtotal).plus(taxAmount).toFixed(2),
    };
  }
  const price = dec(subtotal);
  const unit = isWholeUnitCurrency(currency) ? dec('1') : dec('0.01');
  const guess = toUnit(price.times(100).dividedBy(111), currency);
  const candidates = [guess, guess.minus(unit), guess.plus(unit)].filter((d) => d.greaterThan(0));
  const split = candidates
    .map((base) => {
      const { otherTaxBase, taxAmount } = ppnOf(base.toFixed(2), currency);
      return { base, otherTaxBase, taxAmount, rounding: price.minus(base).minus(taxAmount) };
    })
    // The exact split if there is one, else the nearest; the guess wins ties (it is first).
    .reduce((best, c) => (c.rounding.abs().lessThan(best.rounding.abs()) ? c : best));
  return {
    taxBehavior: 'inclusive', taxRate: PPN_RATE, taxBase: split.base.toFixed(2), otherTaxBase: split.otherTaxBase,
    taxAmount: split.taxAmount, taxRounding: split.rounding.toFixed(2), total: price.toFixed(2),
  };
}

/**
 * The smallest DPP whose exclusive total (DPP + PPN) reaches `gross`: how a plan change on an
 * exclusive plan states what is owed (money, PPN included) as a DPP. The total it gives is
 * `gross` or, for one amount in ten, one unit more.
 */
export function taxBaseCovering(gross: Money, currency: string): Money {
  const unit = isWholeUnitCurrency(currency) ? dec('1') : dec('0.01');
  let base = Decimal.max(toUnit(dec(gross).times(100).dividedBy(111), currency).minus(unit.times(2)), 0);
  while (base.plus(ppnOf(base.toFixed(2), currency).taxAmount).lessThan(gross)) base = base.plus(unit);
  return base.toFixed(2);
}

/** Where a faktur's value stands: its DPP, DPP Nilai Lain and PPN. */
export interface FakturValue {
  taxBase: Money;
  otherTaxBase: Money;
  taxAmount: Money;
}

/** The faktur value of a DPP, as Coretax computes it. */
export function fakturValueOf(taxBase: Money, currency: string): FakturValue {
  return { taxBase: dec(taxBase).toFixed(2), ...ppnOf(taxBase, currency) };
}

/** The tax parts of a credit note: tax_base + tax_amount + tax_rounding = amount for one that takes DPP off. */
export interface CreditNoteTax {
  taxBase: Money;
  taxAmount: Money;
  taxRounding: Money;
  /** The faktur's value before and after the note. */
  before: FakturValue;
  after: FakturValue;
}

/**
 * The tax parts of a credit of `amount` that gives back supply (docs/tax.md, "Credit notes"):
 * the faktur's DPP stands at `standing.taxBase` and the money still held for it at
 * `standing.gross` (the invoice's total less the earlier such credits). After the credit the
 * faktur's DPP is the one whose DPP + PPN comes closest to the gross left (none when nothing is
 * left), and the note's PPN is PPN(DPP before) − PPN(DPP after), each computed as Coretax computes
 * it: the amended faktur then matches Coretax to the rupiah. A gross cannot always be split
 * exactly (166,500 less 5,000 leaves 161,500, which no DPP + PPN makes), so what the split misses
 * is the note's `taxRounding`; the DPP after is chosen so that it is at most one unit either way,
 * as an inclusive invoice's rounding is.
 */
export function creditNoteTax(standing: { taxBase: Money; gross: Money }, amount: Money, currency: string): CreditNoteTax {
  const before = fakturValueOf(standing.taxBase, currency);
  const roundingBefore = dec(standing.gross).minus(before.taxBase).minus(before.taxAmount);
  const left = dec(standing.gross).minus(amount);
  let after = fakturValueOf('0.00', currency);
  if (left.greaterThan(0)) {
    const unit = isWholeUnitCurrency(currency) ? dec('1') : dec('0.01');
    const guess = toUnit(left.times(100).dividedBy(111), currency);
    const candidates = [0, -1, 1, -2, 2, -3, 3]
      .map((step) => guess.plus(unit.times(step)))
      .filter((base) => base.greaterThanOrEqualTo(0) && base.lessThanOrEqualTo(before.taxBase))
      .map((base) => {
        const value = fakturValueOf(base.toFixed(2), currency);
        const rounding = left.minus(value.taxBase).minus(value.taxAmount);
        return { value, rounding, note: roundingBefore.minus(rounding) };
      });
    // The note's own rounding within one unit; then the faktur after as exact as it can be.
    const fitting = candidates.filter((c) => c.note.abs().lessThanOrEqualTo(unit));
    const pool = fitting.length > 0 ? fitting : candidates;
    if (pool.length > 0) {
      after = pool.reduce((best, c) =>
        c.rounding.abs().lessThan(best.rounding.abs()) || (c.rounding.abs().equals(best.rounding.abs()) && c.note.abs().lessThan(best.note.abs())) ? c : best,
      ).value;
    }
  }
  const taxBase = dec(before.taxBase).minus(after.taxBase);
  const taxAmount = dec(before.taxAmount).minus(after.taxAmount);
  return {
    taxBase: taxBase.toFixed(2),
    taxAmount: taxAmount.toFixed(2),
    taxRounding: dec(amount).minus(taxBase).minus(taxAmount).toFixed(2),
    before,
    after,
  };
}

/**
 * The Coretax action a credit note needs: none when it takes no DPP off; the whole faktur given
 * back means the service was cancelled, which the buyer documents with a Nota Pembatalan; part
 * of it means the faktur's value was too high, amended by a Faktur Pajak Pengganti.
 * `cancel_and_reissue` is for a wrong buyer identity, which no credit note fixes.
 */
export function taxActionFor(tax: Pick<CreditNoteTax, 'taxBase' | 'after'>): TaxAction {
  if (dec(tax.taxBase).isZero()) return 'none';
  return dec(tax.after.taxBase).isZero() ? 'buyer_cancellation_note' : 'amendment';
}
