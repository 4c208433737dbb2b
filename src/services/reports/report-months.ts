import { Decimal } from 'decimal.js';
import { ValidationError } from '../../domain/errors.js';

/*
 * NOTE: a report month is a calendar month in BILLING_TIMEZONE (docs/reports.md), as a tax period
 * is: a payment settled at 18:30 UTC on 31 January is 1 February in Jakarta, and counts in
 * February. Each month is the half-open range of instants [first instant, next month's first).
 */

/** The months a report covers, as the request names them (`2026-01`). */
export interface ReportRange {
  from: string;
  to: string;
}

/** What every report answers before its rows. */
export interface ReportHeader {
  from: string;
  to: string;
  /** BILLING_TIMEZONE, the zone the months are cut in. */
  timezone: string;
  currency: string;
}

export interface ReportMonth {
  /** YYYY-MM */
  label: string;
  /** The month's first instant in the time zone. */
  start: Date;
  /** The next month's first instant (exclusive). */
  end: Date;
}

/** The most months one report answers (ten years). */
export const MAX_REPORT_MONTHS = 120;

function parseMonth(text: unknown, field: 'from' | 'to'): { year: number; month: number } {
  const match = typeof text === 'string' ? /^(\d{4})-(\d{2})$/.exec(text) : null;
  const year = match ? Number(match[1]) : 0;
  const month = match ? Number(match[2]) : 0;
  if (!match || year < 2000 || month < 1 || month > 12) {
    throw new ValidationError([{ field, message: 'must be a month as YYYY-MM (2026-03)' }]);
  }
  return { year, month };
}

const partsFormats = new Map<string, Intl.DateTimeFormat>();

/** How far the zone's wall clock is ahead of UTC at `at`, in milliseconds. */
function zoneOffset(at: number, timeZone: string): number {
  let format = partsFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    partsFormats.set(timeZone, format);
  }
  const p = Object.fromEntries(format.formatToParts(new Date(at)).map((x) => [x.type, Number(x.value)]));
  const wall = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return wall - (at - (((at % 1000) + 1000) % 1000));
}

/** The instant the month begins in the zone (its local midnight of the 1st). */
export function monthStart(year: number, month: number, timeZone: string): Date {
  const wall = Date.UTC(year, month - 1, 1);
  // Twice: the offset at the guess may differ from the offset at the answer (a DST change).
  let at = wall - zoneOffset(wall, timeZone);
  at = wall - zoneOffset(at, timeZone);
  return new Date(at);
}

/**
 * The months from `range.from` to `range.to` inclusive. Raised as a validation error naming the
 * field: a month not written YYYY-MM, `from` after `to`, or more than MAX_REPORT_MONTHS months.
 */
export function reportMonths(range: ReportRange, timeZone: string): ReportMonth[] {
  const from = parseMonth(range.from, 'from');
  const to = parseMonth(range.to, 'to');
  const count = (to.year - from.year) * 12 + (to.month - from.month) + 1;
  if (count < 1) throw new ValidationError([{ field: 'to', message: 'must not be before from' }]);
  if (count > MAX_REPORT_MONTHS) throw new ValidationError([{ field: 'to', message: `may be at most ${MAX_REPORT_MONTHS} months after from` }]);
  const months: ReportMonth[] = [];
  for (let i = 0; i < count; i += 1) {
    const index = from.month - 1 + i;
    const year = from.year + Math.floor(index / 12);
    const month = (index % 12) + 1;
    const nextYear = month === 12 ? year + 1 : year;
    const nextMonth = month === 12 ? 1 : month + 1;
    months.push({
      label: `${year}-${String(month).padStart(2, '0')}`,
      start: monthStart(year, month, timeZone),
      end: monthStart(nextYear, nextMonth, timeZone),
    });
  }
  return months;
}

/** The index of the month holding `at`, or -1 outside them (months are contiguous and sorted). */
export function monthIndexOf(months: ReportMonth[], at: Date): number {
  const t = at.getTime();
  if (months.length === 0 || t < months[0].start.getTime() || t >= months[months.length - 1].end.getTime()) return -1;
  let lo = 0;
  let hi = months.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (months[mid].start.getTime() <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** `part / whole` as a percentage with two places ("12.50"), half away from zero; null when `whole` is zero. */
export function percent(part: string | number, whole: string | number): string | null {
  const denominator = new Decimal(whole);
  if (denominator.isZero()) return null;
  return new Decimal(part).times(100).dividedBy(denominator).toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2);
}
