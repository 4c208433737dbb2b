import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { IntervalUnit } from '../../src/db/entities/plan.js';
import { addDays, boundaryAfter, cycleBoundary, isoDate } from '../../src/domain/billing-calendar.js';

const d = (iso: string) => new Date(iso);
const iso = (at: Date) => at.toISOString();
const monthly = (anchor: string, cycles: number) => iso(cycleBoundary(d(anchor), 1, 'month', cycles));

describe('cycleBoundary', () => {
  it('clamps to the last day of shorter months and comes back to the anchor day (31 Jan → 28 Feb → 31 Mar)', () => {
    const anchor = '2025-01-31T09:30:00.000Z';
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map((n) => monthly(anchor, n))).toEqual([
      '2025-02-28T09:30:00.000Z',
      '2025-03-31T09:30:00.000Z',
      '2025-04-30T09:30:00.000Z',
      '2025-05-31T09:30:00.000Z',
      '2025-06-30T09:30:00.000Z',
      '2025-07-31T09:30:00.000Z',
      '2025-08-31T09:30:00.000Z',
      '2025-09-30T09:30:00.000Z',
      '2025-10-31T09:30:00.000Z',
      '2025-11-30T09:30:00.000Z',
      '2025-12-31T09:30:00.000Z',
      '2026-01-31T09:30:00.000Z',
    ]);
  });

  it('gives 29 February in leap years and 28 in others', () => {
    expect(monthly('2024-01-31T00:00:00.000Z', 1)).toBe('2024-02-29T00:00:00.000Z');
    expect(monthly('2023-01-31T00:00:00.000Z', 1)).toBe('2023-02-28T00:00:00.000Z');
    expect(monthly('2100-01-31T00:00:00.000Z', 1)).toBe('2100-02-28T00:00:00.000Z'); // not a leap year
    expect(monthly('2000-01-30T00:00:00.000Z', 1)).toBe('2000-02-29T00:00:00.000Z'); // a leap year
    expect(monthly('2023-12-29T00:00:00.000Z', 2)).toBe('2024-02-29T00:00:00.000Z');
  });

  it('keeps an anchor of 29 February on the 29th, falling back to the 28th in common years', () => {
    const anchor = '2024-02-29T12:00:00.000Z';
    expect(monthly(anchor, 1)).toBe('2024-03-29T12:00:00.000Z');
    expect(monthly(anchor, 12)).toBe('2025-02-28T12:00:00.000Z');
    expect(monthly(anchor, 13)).toBe('2025-03-29T12:00:00.000Z');
    expect(monthly(anchor, 48)).toBe('2028-02-29T12:00:00.000Z');
    expect(iso(cycleBoundary(d(anchor), 12, 'month', 1))).toBe('2025-02-28T12:00:00.000Z');
    expect(iso(cycleBoundary(d(anchor), 12, 'month', 4))).toBe('2028-02-29T12:00:00.000Z');
  });

  it('crosses year ends with multi-month intervals', () => {
    expect(iso(cycleBoundary(d('2025-11-30T00:00:00.000Z'), 3, 'month', 1))).toBe('2026-02-28T00:00:00.000Z');
    expect(iso(cycleBoundary(d('2025-11-30T00:00:00.000Z'), 3, 'month', 2))).toBe('2026-05-30T00:00:00.000Z');
    expect(iso(cycleBoundary(d('2025-08-31T00:00:00.000Z'), 6, 'month', 1))).toBe('2026-02-28T00:00:00.000Z');
    expect(iso(cycleBoundary(d('2025-12-15T00:00:00.000Z'), 1, 'month', 25))).toBe('2028-01-15T00:00:00.000Z');
  });

  it('counts days and weeks as exact UTC days (no daylight saving in UTC), across 29 February', () => {
    expect(iso(cycleBoundary(d('2024-02-28T23:00:00.000Z'), 1, 'day', 1))).toBe('2024-02-29T23:00:00.000Z');
    expect(iso(cycleBoundary(d('2024-02-28T23:00:00.000Z'), 1, 'day', 2))).toBe('2024-03-01T23:00:00.000Z');
    expect(iso(cycleBoundary(d('2023-02-28T23:00:00.000Z'), 1, 'day', 1))).toBe('2023-03-01T23:00:00.000Z');
    expect(iso(cycleBoundary(d('2024-02-26T00:00:00.000Z'), 1, 'week', 1))).toBe('2024-03-04T00:00:00.000Z');
    expect(iso(cycleBoundary(d('2024-03-25T00:00:00.000Z'), 2, 'week', 1))).toBe('2024-04-08T00:00:00.000Z');
    expect(iso(cycleBoundary(d('2024-01-01T00:00:00.000Z'), 1, 'week', 52))).toBe('2024-12-30T00:00:00.000Z');
    expect(iso(cycleBoundary(d('2024-01-01T00:00:00.000Z'), 1, 'day', 366))).toBe('2025-01-01T00:00:00.000Z');
    expect(iso(cycleBoundary(d('2025-01-01T00:00:00.000Z'), 1, 'day', 365))).toBe('2026-01-01T00:00:00.000Z');
  });

  it('keeps the time of day of the anchor, to the millisecond', () => {
    expect(monthly('2025-03-31T23:59:59.999Z', 1)).toBe('2025-04-30T23:59:59.999Z');
  });
});

describe('boundaryAfter', () => {
  it('finds the end of the period that contains an instant', () => {
    const anchor = d('2025-01-31T09:30:00.000Z');
    expect(iso(boundaryAfter(anchor, 1, 'month', d('2025-01-31T09:30:00.000Z')))).toBe('2025-02-28T09:30:00.000Z');
    expect(iso(boundaryAfter(anchor, 1, 'month', d('2025-02-28T09:30:00.000Z')))).toBe('2025-03-31T09:30:00.000Z');
    expect(iso(boundaryAfter(anchor, 1, 'month', d('2025-02-28T09:29:59.999Z')))).toBe('2025-02-28T09:30:00.000Z');
    expect(iso(boundaryAfter(anchor, 1, 'month', d('2027-02-28T09:30:00.000Z')))).toBe('2027-03-31T09:30:00.000Z');
    expect(iso(boundaryAfter(d('2024-02-29T00:00:00.000Z'), 1, 'week', d('2024-03-07T00:00:00.000Z')))).toBe('2024-03-14T00:00:00.000Z');
  });

  it('never answers before the first boundary, even for an instant before the anchor', () => {
    const anchor = d('2025-05-10T00:00:00.000Z');
    expect(iso(boundaryAfter(anchor, 1, 'month', d('2025-01-01T00:00:00.000Z')))).toBe('2025-06-10T00:00:00.000Z');
    expect(iso(boundaryAfter(anchor, 2, 'day', d('2025-05-01T00:00:00.000Z')))).toBe('2025-05-12T00:00:00.000Z');
  });

  it('rejects a non-positive interval', () => {
    expect(() => boundaryAfter(d('2025-01-01T00:00:00.000Z'), 0, 'month', d('2025-02-01T00:00:00.000Z'))).toThrow(RangeError);
  });

  it('is the smallest boundary after the instant, for any anchor, interval and unit (property)', () => {
    const instant = fc.date({ min: d('1999-01-01T00:00:00.000Z'), max: d('2101-01-01T00:00:00.000Z'), noInvalidDate: true });
    fc.assert(
      fc.property(
        instant,
        fc.integer({ min: 1, max: 24 }),
        fc.constantFrom<IntervalUnit>('day', 'week', 'month'),
        fc.integer({ min: 0, max: 40_000 }),
        (anchor, interval, unit, daysLater) => {
          const at = addDays(anchor, daysLater);
          const end = boundaryAfter(anchor, interval, unit, at);
          expect(end.getTime()).toBeGreaterThan(at.getTime());
          // It is one of the anchor's boundaries, and the one before it is not after the instant.
          let n = 1;
          while (cycleBoundary(anchor, interval, unit, n).getTime() < end.getTime()) n += 1;
          expect(cycleBoundary(anchor, interval, unit, n).getTime()).toBe(end.getTime());
          if (n > 1) expect(cycleBoundary(anchor, interval, unit, n - 1).getTime()).toBeLessThanOrEqual(at.getTime());
        },
      ),
      { numRuns: 300 },
    );
  });

  it('walks a monthly subscription period by period without drift over four years (property over anchors)', () => {
    fc.assert(
      fc.property(fc.date({ min: d('2020-01-01T00:00:00.000Z'), max: d('2030-12-31T00:00:00.000Z'), noInvalidDate: true }), (anchor) => {
        let end = anchor;
        for (let n = 1; n <= 48; n += 1) {
          end = boundaryAfter(anchor, 1, 'month', end);
          expect(end.getTime()).toBe(cycleBoundary(anchor, 1, 'month', n).getTime());
          // Clamped only when the month is too short for the anchor's day.
          const lastDay = new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() + 1, 0)).getUTCDate();
          expect(end.getUTCDate()).toBe(Math.min(anchor.getUTCDate(), lastDay));
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe('addDays and isoDate', () => {
  it('adds whole UTC days and prints the UTC date', () => {
    expect(iso(addDays(d('2024-02-28T22:00:00.000Z'), 3))).toBe('2024-03-02T22:00:00.000Z');
    expect(isoDate(d('2024-02-29T23:59:59.999Z'))).toBe('2024-02-29');
    expect(isoDate(d('2024-03-01T00:00:00.000Z'))).toBe('2024-03-01');
  });
});
