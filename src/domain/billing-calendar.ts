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
