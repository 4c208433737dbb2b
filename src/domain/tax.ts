import { Decimal } from 'decimal.js';
import { isWholeUnitCurrency, type Money } from './money.js';

/*
 * NOTE: the one home of PPN arithmetic (DECISIONS §11, docs/tax.md). Ordinary services under
 * PMK 131/2024: the nominal rate is 12 %, charged on DPP Nilai Lain, which is 11/12 of the DPP
 * (the selling price after discounts) kept to the cent; the PPN is 12 % of it to the cent, then
 * rounded half-up to the whole rupiah (PER-11/PJ/2025 Pasal 129). Keeping DPP Nilai Lain at two places, not whole rupiah,
 * makes the PPN equal 11 % of the DPP for every whole-rupiah DPP (tax/CORETAX.md §6); rounding
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

/**
 * The PPN part of a credit of `amount` on an invoice whose earlier credit notes already gave
 * back `creditedBefore`: the share of the invoice's PPN that the running credit reaches, less
 * the share already credited. So the credit notes of an invoice never credit more PPN than it
 * charged, and crediting the whole invoice credits exactly its PPN.
 */
export function creditedTax(
  invoice: { totalAmount: Money; taxAmount: Money; currency: string },
  creditedBefore: Money,
  amount: Money,
): Money {
  const total = dec(invoice.totalAmount);
  if (total.lessThanOrEqualTo(0) || dec(invoice.taxAmount).isZero()) return '0.00';
  const share = (credited: Decimal) => toUnit(Decimal.min(credited, total).times(invoice.taxAmount).dividedBy(total), invoice.currency);
  const before = dec(creditedBefore);
  return share(before.plus(amount)).minus(share(before)).toFixed(2);
}

/**
 * The Coretax action a credit note needs: none without PPN; the whole invoice given back means
 * the service was cancelled, which the buyer documents with a Nota Pembatalan (PMK 81/2024
 * Pasal 289); part of it means the faktur's value was too high, amended by a Faktur Pajak
 * Pengganti. `cancel_and_reissue` is for a wrong buyer identity, which no credit note fixes.
 */
export function taxActionFor(taxAmount: Money, invoiceFullyCredited: boolean): TaxAction {
  if (dec(taxAmount).isZero()) return 'none';
  return invoiceFullyCredited ? 'buyer_cancellation_note' : 'amendment';
}
