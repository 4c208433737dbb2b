import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { creditNoteTax, ppnOf, taxActionFor, taxBaseCovering, taxInvoice, type TaxBehavior } from '../../src/domain/tax.js';

/*
 * The reference formula, computed apart from src/domain/tax.ts with integers of cents (BigInt):
 * DPP Nilai Lain = DPP × 11/12 to the cent, PPN = 12 % of it rounded half-up to the rupiah
 * (PMK 131/2024, PER-11/PJ/2025). Amounts are IDR, whole rupiah.
 */
const CENT = 100n;
/** a / b rounded half-up, for non-negative integers. */
const halfUp = (a: bigint, b: bigint) => (2n * a + b) / (2n * b);
const cents = (money: string) => {
  const [whole, fraction = '00'] = money.replace('-', '').split('.');
  const value = BigInt(whole) * CENT + BigInt(fraction.padEnd(2, '0'));
  return money.startsWith('-') ? -value : value;
};
const text = (c: bigint) => `${c < 0n ? '-' : ''}${(c < 0n ? -c : c) / CENT}.${String((c < 0n ? -c : c) % CENT).padStart(2, '0')}`;
function referencePpn(dppCents: bigint): { otherTaxBase: bigint; ppn: bigint } {
  const otherTaxBase = halfUp(dppCents * 11n, 12n);
  const ppnCents = halfUp(otherTaxBase * 12n, 100n);
  const ppn = halfUp(ppnCents, CENT) * CENT;
  return { otherTaxBase, ppn };
}

// Small amounts too: the half-rupiah cases live there.
const rupiah = fc.oneof(fc.bigInt({ min: 1n, max: 2_000_000n }), fc.bigInt({ min: 1n, max: 10_000_000_000n })).map((r) => r * CENT);

describe('PPN (src/domain/tax.ts)', () => {
  it("docs/tax.md's example: an exclusive 150,000 plan gives DPP 150,000, DPP Nilai Lain 137,500, PPN 16,500, total 166,500", () => {
    expect(taxInvoice('150000.00', 'exclusive', 'IDR', true)).toEqual({
      taxBehavior: 'exclusive', taxRate: '12.00', taxBase: '150000.00', otherTaxBase: '137500.00', taxAmount: '16500.00', taxRounding: '0.00', total: '166500.00',
    });
  });

  it('rounds half-up to the rupiah, with DPP Nilai Lain kept to the cent (DPP 32 gives PPN 4, not 3)', () => {
    expect(ppnOf('32.00', 'IDR')).toEqual({ otherTaxBase: '29.33', taxAmount: '4.00' });
    // DPP 50: DPP Nilai Lain 45.83, PPN 5.4996 → 5.50 to the cent → 6 (half-up), as 11 % of 50.
    expect(ppnOf('50.00', 'IDR')).toEqual({ otherTaxBase: '45.83', taxAmount: '6.00' });
  });

  it('an inclusive Rp15.000 splits into DPP 13.514 and PPN 1.487 with a rupiah of rounding (docs/tax.md)', () => {
    const tax = taxInvoice('15000.00', 'inclusive', 'IDR', true);
    expect(tax).toMatchObject({ taxBase: '13514.00', taxAmount: '1487.00', taxRounding: '-1.00', total: '15000.00' });
    expect(taxInvoice('111000.00', 'inclusive', 'IDR', true)).toMatchObject({ taxBase: '100000.00', taxAmount: '11000.00', taxRounding: '0.00' });
  });

  it('no PPN when the seller is not a PKP, the plan says none, or nothing is owed', () => {
    for (const [amount, behavior, pkp] of [['150000.00', 'exclusive', false], ['150000.00', 'none', true], ['0.00', 'exclusive', true], ['-5000.00', 'inclusive', true]] as const) {
      expect(taxInvoice(amount, behavior, 'IDR', pkp)).toEqual({
        taxBehavior: 'none', taxRate: '0.00', taxBase: '0.00', otherTaxBase: '0.00', taxAmount: '0.00', taxRounding: '0.00', total: amount,
      });
    }
  });

  it('exclusive: for every amount, the PPN is the reference formula and subtotal + PPN = total (property)', () => {
    // Exhaustively for the first 20,000 rupiah, then by search.
    for (let dpp = 1n; dpp <= 20_000n; dpp++) expect(ppnOf(text(dpp * CENT), 'IDR').taxAmount).toBe(text(referencePpn(dpp * CENT).ppn));
    fc.assert(
      fc.property(rupiah, (dpp) => {
        const tax = taxInvoice(text(dpp), 'exclusive', 'IDR', true);
        const ref = referencePpn(dpp);
        expect(tax.taxBase).toBe(text(dpp));
        expect(tax.otherTaxBase).toBe(text(ref.otherTaxBase));
        expect(tax.taxAmount).toBe(text(ref.ppn));
        expect(cents(tax.total)).toBe(dpp + ref.ppn);
        // What the 11/12 base is for: PPN is 11 % of the DPP, rounded half-up.
        expect(ref.ppn).toBe(halfUp(dpp * 11n, 100n * CENT) * CENT);
      }),
    );
  });

  it('inclusive: the price is DPP + PPN (+ at most a rupiah of rounding, and none when an exact split exists), the PPN the reference formula on that DPP (property)', () => {
    fc.assert(
      fc.property(rupiah, (price) => {
        const tax = taxInvoice(text(price), 'inclusive', 'IDR', true);
        const base = cents(tax.taxBase);
        const ref = referencePpn(base);
        expect(tax.taxAmount).toBe(text(ref.ppn));
        expect(tax.otherTaxBase).toBe(text(ref.otherTaxBase));
        expect(base % CENT).toBe(0n);
        expect(base + ref.ppn + cents(tax.taxRounding)).toBe(price);
        expect(cents(tax.total)).toBe(price);
        const rounding = cents(tax.taxRounding);
        expect(rounding >= -CENT && rounding <= CENT).toBe(true);
        if (rounding !== 0n) {
          // No whole-rupiah DPP near the price adds up to it exactly.
          const guess = halfUp(price * 100n, 111n * CENT) * CENT;
          for (let d = guess - 3n * CENT; d <= guess + 3n * CENT; d += CENT) expect(d + referencePpn(d).ppn).not.toBe(price);
        }
      }),
    );
  });

  /**
   * Credits of whole rupiah on an invoice of `price` (exclusive or inclusive), applied one after
   * another as issue-credit-note.ts does: the faktur stands at the invoice's DPP less what the
   * notes so far took off, and at its total less their amounts.
   */
  function creditAll(price: bigint, behavior: TaxBehavior, credits: bigint[]) {
    const invoice = taxInvoice(text(price), behavior, 'IDR', true);
    let taxBase = cents(invoice.taxBase);
    let gross = cents(invoice.total);
    const notes = [];
    for (const credit of credits) {
      if (credit <= 0n || credit > gross) continue;
      const note = creditNoteTax({ taxBase: text(taxBase), gross: text(gross) }, text(credit), 'IDR');
      notes.push({ credit, note, standing: { taxBase, gross } });
      taxBase -= cents(note.taxBase);
      gross -= credit;
    }
    return { invoice, notes, taxBase, gross };
  }

  it("a credit note's PPN is PPN(DPP before) − PPN(DPP after) as Coretax computes each; tax_base + tax_amount + tax_rounding = amount, rounding at most one rupiah (property, exclusive and inclusive)", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 50_000_000n }),
        fc.constantFrom<TaxBehavior>('exclusive', 'inclusive'),
        fc.array(fc.bigInt({ min: 1n, max: 50_000_000n }), { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        (price, behavior, raw, creditTheRest) => {
          const total = cents(taxInvoice(text(price * CENT), behavior, 'IDR', true).total) / CENT;
          const credits = raw.map((c) => ((c - 1n) % total) + 1n);
          const { notes, taxBase, gross } = creditAll(price * CENT, behavior, credits.map((c) => c * CENT));
          for (const { credit, note, standing } of notes) {
            // Before and after are each what Coretax computes on that DPP.
            expect(cents(note.before.taxBase)).toBe(standing.taxBase);
            expect(cents(note.before.taxAmount)).toBe(referencePpn(standing.taxBase).ppn);
            expect(cents(note.after.taxAmount)).toBe(referencePpn(cents(note.after.taxBase)).ppn);
            expect(cents(note.after.otherTaxBase)).toBe(referencePpn(cents(note.after.taxBase)).otherTaxBase);
            expect(cents(note.taxAmount)).toBe(cents(note.before.taxAmount) - cents(note.after.taxAmount));
            expect(cents(note.taxBase)).toBe(standing.taxBase - cents(note.after.taxBase));
            expect(cents(note.taxBase) + cents(note.taxAmount) + cents(note.taxRounding)).toBe(credit);
            expect(cents(note.taxRounding) >= -CENT && cents(note.taxRounding) <= CENT, `rounding ${note.taxRounding}`).toBe(true);
            expect(cents(note.taxBase) >= 0n && cents(note.taxAmount) >= 0n).toBe(true);
            // The faktur after stays within a rupiah of the money still held for it.
            const left = standing.gross - credit;
            const after = cents(note.after.taxBase) + cents(note.after.taxAmount);
            expect(left - after >= -CENT && left - after <= CENT, `left ${left}, faktur ${after}`).toBe(true);
          }
          if (creditTheRest && gross > 0n) {
            const last = creditNoteTax({ taxBase: text(taxBase), gross: text(gross) }, text(gross), 'IDR');
            expect(last.after).toEqual({ taxBase: '0.00', otherTaxBase: '0.00', taxAmount: '0.00' });
            expect(taxActionFor(last)).toBe('buyer_cancellation_note');
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a Rp5,000 refund on a 166,500 invoice: DPP 150,000 to 145,495, PPN 16,500 to 16,004, as Coretax recomputes it', () => {
    const note = creditNoteTax({ taxBase: '150000.00', gross: '166500.00' }, '5000.00', 'IDR');
    expect(note).toMatchObject({ taxBase: '4505.00', taxAmount: '496.00', taxRounding: '-1.00' });
    expect(note.after).toEqual({ taxBase: '145495.00', otherTaxBase: '133370.42', taxAmount: '16004.00' });
    expect(ppnOf(note.after.taxBase, 'IDR').taxAmount).toBe(note.after.taxAmount);
    expect(taxActionFor(note)).toBe('amendment');
  });

  it('the Coretax action: none when no DPP is taken off, a buyer cancellation note for the whole faktur, an amendment for part of it', () => {
    const zero = { taxBase: '0.00', otherTaxBase: '0.00', taxAmount: '0.00' };
    expect(taxActionFor({ taxBase: '0.00', after: { ...zero, taxBase: '150000.00' } })).toBe('none');
    expect(taxActionFor({ taxBase: '150000.00', after: zero })).toBe('buyer_cancellation_note');
    expect(taxActionFor({ taxBase: '75000.00', after: { ...zero, taxBase: '75000.00' } })).toBe('amendment');
  });

  it('taxBaseCovering: the smallest DPP whose total reaches the amount (property)', () => {
    fc.assert(
      fc.property(rupiah, (gross) => {
        const base = cents(taxBaseCovering(text(gross), 'IDR'));
        expect(base + referencePpn(base).ppn >= gross).toBe(true);
        expect(base + referencePpn(base).ppn - gross <= CENT).toBe(true);
        if (base > 0n) expect(base - CENT + referencePpn(base - CENT).ppn < gross).toBe(true);
      }),
    );
  });
});
