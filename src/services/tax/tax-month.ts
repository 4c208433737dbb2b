/*
 * NOTE: a tax period (masa pajak) is a calendar month in BILLING_TIMEZONE, and a faktur's date
 * is the local date of its payment (UU PPN Pasal 13(1a), docs/tax.md): a payment at 18:30 UTC
 * on 31 March is 1 April in Jakarta, and belongs to April's export.
 */
import { localDate } from '../../domain/billing-calendar.js';

/** A month as `billing-admin tax … --month` names it. */
export interface TaxMonth {
  year: number;
  /** 1 to 12 */
  month: number;
  /** YYYY-MM */
  label: string;
}

/** `YYYY-MM` (2026-03), or null for anything else. */
export function parseTaxMonth(text: string): TaxMonth | null {
  const match = /^(\d{4})-(\d{2})$/.exec(text.trim());
  if (!match) return null;
  const year = Number(match[1]);
  const month = Number(match[2]);
  if (year < 2000 || month < 1 || month > 12) return null;
  return { year, month, label: `${match[1]}-${match[2]}` };
}

/** The calendar date (YYYY-MM-DD) of an instant in a time zone: the one rule, in the billing calendar. */
export { localDate };

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * A UTC range that holds every instant whose local date falls in the month, in any time zone
 * (offsets run from −12 to +14 hours): the database narrows by it, localDate decides.
 */
export function searchWindow(month: TaxMonth): { from: Date; to: Date } {
  return {
    from: new Date(Date.UTC(month.year, month.month - 1, 1) - DAY_MS),
    to: new Date(Date.UTC(month.year, month.month, 1) + DAY_MS),
  };
}

export function isInMonth(at: Date, month: TaxMonth, timeZone: string): boolean {
  return localDate(at, timeZone).startsWith(`${month.label}-`);
}

/** The upload deadline of a month's fakturs: the 20th of the next month (PER-11/PJ/2025 Pasal 44). */
export function uploadDeadline(month: TaxMonth): string {
  const next = month.month === 12 ? { year: month.year + 1, month: 1 } : { year: month.year, month: month.month + 1 };
  return `${next.year}-${String(next.month).padStart(2, '0')}-20`;
}
