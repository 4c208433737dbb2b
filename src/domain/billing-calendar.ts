import type { IntervalUnit } from '../db/entities/plan.js';

const DAY_MS = 24 * 60 * 60 * 1000;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

/**
 * The boundary `cycles` billing cycles after `anchor`, in UTC.
 *
 * NOTE: months are counted from the anchor, not from the previous boundary, and clamp to the
 * month's last day: a subscription started on 31 January renews on 28 (or 29) February, then on
 * 31 March — the day never drifts down to 28 for good.
 */
export function cycleBoundary(anchor: Date, interval: number, unit: IntervalUnit, cycles: number): Date {
  const steps = interval * cycles;
  if (unit === 'day') return new Date(anchor.getTime() + steps * DAY_MS);
  if (unit === 'week') return new Date(anchor.getTime() + steps * 7 * DAY_MS);
  const monthIndex = anchor.getUTCMonth() + steps;
  const year = anchor.getUTCFullYear() + Math.floor(monthIndex / 12);
  const month = ((monthIndex % 12) + 12) % 12;
  const day = Math.min(anchor.getUTCDate(), daysInMonth(year, month));
  return new Date(
    Date.UTC(year, month, day, anchor.getUTCHours(), anchor.getUTCMinutes(), anchor.getUTCSeconds(), anchor.getUTCMilliseconds()),
  );
}

export function addDays(at: Date, days: number): Date {
  return new Date(at.getTime() + days * DAY_MS);
}

/** `YYYY-MM-DD` of an instant in UTC. */
export function isoDate(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/**
 * NOTE: the calendar day of `at` where the seller is (BILLING_TIMEZONE): an invoice made at
 * 18:30 UTC on 31 March is dated 1 April in Jakarta, and belongs to April's tax period.
 */
export function localDate(at: Date, timeZone: string): string {
  let format = dayFormats.get(timeZone);
  if (!format) {
    // en-CA formats a date as YYYY-MM-DD.
    format = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
    dayFormats.set(timeZone, format);
  }
  return format.format(at);
}

/**
 * NOTE: one formatter per time zone, made once: constructing one costs about 100 µs, and the
 * billing run dates every invoice it issues (made per call, it halved the batched run's speed).
 */
const dayFormats = new Map<string, Intl.DateTimeFormat>();

/**
 * The first cycle boundary strictly after `at`, counted from `anchor` (never before the first
 * boundary, `cycles` = 1). A renewal's period ends here: computed from the anchor rather than by
 * adding a month to the previous end, so month-end clamping never drifts (31 Jan → 29 Feb →
 * 31 Mar), and a period that moved (resume after a pause moves the anchor too) stays on its grid.
 */
export function boundaryAfter(anchor: Date, interval: number, unit: IntervalUnit, at: Date): Date {
  if (!Number.isSafeInteger(interval) || interval < 1) throw new RangeError(`interval must be a positive whole number, got ${interval}`);
  let cycles: number;
  if (unit === 'month') {
    const months = (at.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + (at.getUTCMonth() - anchor.getUTCMonth());
    cycles = Math.max(1, Math.floor(months / interval) - 1);
  } else {
    const step = interval * (unit === 'week' ? 7 : 1) * DAY_MS;
    cycles = Math.max(1, Math.floor((at.getTime() - anchor.getTime()) / step));
  }
  while (cycles > 1 && cycleBoundary(anchor, interval, unit, cycles - 1).getTime() > at.getTime()) cycles -= 1;
  while (cycleBoundary(anchor, interval, unit, cycles).getTime() <= at.getTime()) cycles += 1;
  return cycleBoundary(anchor, interval, unit, cycles);
}
