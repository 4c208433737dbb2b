import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/domain/errors.js';
import { nikRefusal, parseTaxProfile } from '../../src/domain/tax-profile.js';

/*
 * A NIK as Dukcapil writes it: 16 digits; the province (digits 1-2) 11 to 94; the regency and
 * district (3-6); the birth date DDMMYY (7-12), the day 01-31, or 41-71 for a woman (day + 40),
 * the month 01-12; a serial (13-16).
 */

const two = (n: number) => String(n).padStart(2, '0');
const digits = (length: number) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: length, maxLength: length }).map((d) => d.join(''));

/** The parts of a valid NIK, each generated over its whole range. */
const validParts = fc.record({
  province: fc.integer({ min: 11, max: 94 }).map(two),
  place: digits(4),
  day: fc.oneof(fc.integer({ min: 1, max: 31 }), fc.integer({ min: 41, max: 71 })).map(two),
  month: fc.integer({ min: 1, max: 12 }).map(two),
  year: digits(2),
  serial: digits(4),
});
type Parts = typeof validParts extends fc.Arbitrary<infer T> ? T : never;
const nikOf = (p: Parts) => `${p.province}${p.place}${p.day}${p.month}${p.year}${p.serial}`;

describe('the NIK checker', () => {
  it('accepts every NIK written as Dukcapil writes it', () => {
    fc.assert(
      fc.property(validParts, (p) => {
        expect(nikRefusal(nikOf(p))).toBeNull();
      }),
      { numRuns: 500 },
    );
  });

  it('refuses a province outside 11 to 94', () => {
    const badProvince = fc.oneof(fc.integer({ min: 0, max: 10 }), fc.integer({ min: 95, max: 99 })).map(two);
    fc.assert(fc.property(validParts, badProvince, (p, province) => {
      expect(nikRefusal(nikOf({ ...p, province }))).toMatch(/province/);
    }));
  });

  it('refuses a birth day outside 01-31 and 41-71', () => {
    const badDay = fc.oneof(fc.constant(0), fc.integer({ min: 32, max: 40 }), fc.integer({ min: 72, max: 99 })).map(two);
    fc.assert(fc.property(validParts, badDay, (p, day) => {
      expect(nikRefusal(nikOf({ ...p, day }))).toMatch(/day/);
    }));
  });

  it('refuses a birth month outside 01-12', () => {
    const badMonth = fc.oneof(fc.constant(0), fc.integer({ min: 13, max: 99 })).map(two);
    fc.assert(fc.property(validParts, badMonth, (p, month) => {
      expect(nikRefusal(nikOf({ ...p, month }))).toMatch(/month/);
    }));
  });

  it('refuses anything but 16 digits', () => {
    fc.assert(fc.property(validParts, fc.integer({ min: 1, max: 15 }), (p, length) => {
      expect(nikRefusal(nikOf(p).slice(0, length))).toMatch(/16 digits/);
    }));
    expect(nikRefusal('31710141019000A1')).toMatch(/16 digits/);
  });

  it('refuses the impossible 3171019999990001 with a 400 naming nik; takes 3171014101900001 (a woman born 1 January 1990)', () => {
    const profile = (nik: string) => parseTaxProfile({ buyer_type: 'individual', nik, name: 'Siti', address: 'Jakarta' });
    expect(() => profile('3171019999990001')).toThrow(ValidationError);
    try {
      profile('3171019999990001');
    } catch (e) {
      expect((e as ValidationError).errors).toEqual([{ field: 'nik', message: expect.stringMatching(/day/) }]);
    }
    expect(profile('3171014101900001').nik).toBe('3171014101900001');
    expect(profile('31.71.01.410190.0001').nik).toBe('3171014101900001');
  });
});
