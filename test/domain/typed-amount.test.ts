import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTypedAmount, type TypedAmountLanguage } from '../../src/domain/typed-amount.js';
import { pageFormat } from '../../src/http/hosted/language.js';

const read = (text: string, lang: TypedAmountLanguage) => parseTypedAmount(text, lang);
const amount = (text: string, lang: TypedAmountLanguage) => {
  const result = read(text, lang);
  return result.ok ? result.amount : `refused: ${result.reason}`;
};

/** Whole rupiah, small and large. */
const rupiah = fc.oneof(fc.bigInt({ min: 0n, max: 10_000_000n }), fc.bigInt({ min: 0n, max: 999_999_999_999_999n }));
/** Thousands grouped the English way, apart from any formatter: 1234567 → "1,234,567". */
/** A decimal part as people write it: one or two digits. */
const cents = fc.oneof(fc.integer({ min: 0, max: 9 }).map(String), fc.integer({ min: 0, max: 99 }).map((c) => String(c).padStart(2, '0')));
const grouped = (n: bigint, separator: string) => n.toString().replace(/\B(?=(\d{3})+$)/g, separator);

describe('typed amounts (src/domain/typed-amount.ts)', () => {
  it('Bahasa: dots group thousands; digits alone, "Rp" and spaces are fine', () => {
    expect(amount('100.000', 'id')).toBe('100000.00');
    expect(amount('100000', 'id')).toBe('100000.00');
    expect(amount(' Rp 1.250.000 ', 'id')).toBe('1250000.00');
    expect(amount('Rp\u00a0100.000', 'id')).toBe('100000.00');
    expect(amount('rp100000', 'id')).toBe('100000.00');
  });

  it('English: commas group thousands', () => {
    expect(amount('100,000', 'en')).toBe('100000.00');
    expect(amount('100000', 'en')).toBe('100000.00');
    expect(amount('Rp 1,250,000', 'en')).toBe('1250000.00');
  });

  it.each<[string, TypedAmountLanguage, string]>([
    ['100000.00', 'id', 'decimal'],
    ['100.000,00', 'id', 'decimal'],
    ['100,000', 'id', 'decimal'],
    ['10.00', 'id', 'decimal'],
    ['100000.00', 'en', 'decimal'],
    ['100.000', 'en', 'decimal'],
    ['1,000.50', 'en', 'decimal'],
    ['1.0000', 'id', 'grouping'],
    ['10.00.000', 'id', 'grouping'],
    ['0.100', 'id', 'grouping'],
    ['1,0000', 'en', 'grouping'],
    ['', 'id', 'empty'],
    ['   ', 'en', 'empty'],
    ['Rp', 'id', 'empty'],
    ['-50000', 'id', 'negative'],
    ['−50.000', 'id', 'negative'],
    ['seratus ribu', 'id', 'not_a_number'],
    ['1e5', 'en', 'not_a_number'],
    ['100k', 'en', 'not_a_number'],
    ['...', 'id', 'not_a_number'],
    ['+100000', 'id', 'not_a_number'],
    ['1234567890123456', 'id', 'too_long'],
  ])('refuses %j in %s (%s)', (text, lang, reason) => {
    expect(read(text, lang)).toEqual({ ok: false, reason });
  });

  it('gives back any whole amount formatted the way the Bahasa page shows it, and as digits alone', () => {
    const format = pageFormat('id', 'Asia/Jakarta');
    fc.assert(
      fc.property(rupiah, (n) => {
        const expected = `${n}.00`;
        expect(amount(format.money(expected, 'IDR'), 'id')).toBe(expected);
        expect(amount(n.toString(), 'id')).toBe(expected);
        expect(amount(n.toString(), 'en')).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('gives back any whole amount grouped in either language\'s way', () => {
    fc.assert(
      fc.property(rupiah, fc.constantFrom<TypedAmountLanguage>('id', 'en'), (n, lang) => {
        const separator = lang === 'id' ? '.' : ',';
        expect(amount(`Rp ${grouped(n, separator)}`, lang)).toBe(`${n}.00`);
      }),
      { numRuns: 500 },
    );
  });

  it('never reads an amount with a decimal part, in either writing, as an amount', () => {
    fc.assert(
      fc.property(rupiah, cents, fc.boolean(), fc.constantFrom('.', ','), fc.constantFrom<TypedAmountLanguage>('id', 'en'), (n, fraction, grouping, mark, lang) => {
        const whole = grouping ? grouped(n, mark === '.' ? ',' : '.') : n.toString();
        const text = `${whole}${mark}${fraction}`;
        expect(read(text, lang).ok).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('whatever is typed, an amount it reads has exactly the digits typed (no separator is ever read as a decimal point or dropped from one)', () => {
    const typed = fc.string({ unit: fc.constantFrom('0', '1', '5', '9', '.', ',', ' ', '-', 'R', 'p', 'x'), maxLength: 16 });
    fc.assert(
      fc.property(typed, fc.constantFrom<TypedAmountLanguage>('id', 'en'), (text, lang) => {
        const result = read(text, lang);
        if (!result.ok) return;
        const digits = text.replace(/^\s*Rp/i, '').replace(/[^0-9]/g, '').replace(/^0+(?=\d)/, '');
        expect(result.amount).toBe(`${digits}.00`);
        // What was read is one of the accepted writings: digits alone or grouped by threes.
        // "Rp." is how Bahasa abbreviates the rupiah ("Rp. 100.000"): its dot is the prefix's.
        const body = text.replace(/^\s*Rp\.?\s*/i, '').trim();
        const separator = lang === 'id' ? '.' : ',';
        expect(body === digits || /^0+\d*$/.test(body) || body === grouped(BigInt(digits), separator)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});
