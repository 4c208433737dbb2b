import { CliFailure, EXIT } from '../runtime.js';

/*
 * Option parsing shared by `billing-admin coupons` and `billing-admin promotion-codes`. Values
 * go to the use cases as the API's body would carry them, so that the same checks refuse the
 * same input with the same field named.
 */

/** A whole number as typed becomes a number; anything else goes on as text, for the use case to refuse by name. */
export function numberOption(value: string | undefined): number | string | undefined {
  if (value === undefined) return undefined;
  return /^\d{1,15}$/.test(value.trim()) ? Number(value.trim()) : value;
}

/** --page and --page-size, checked as every list command checks them. */
export function pageOptions(opts: { page: string; pageSize: string }): { page: number; pageSize: number } {
  const page = Number(opts.page);
  const pageSize = Number(opts.pageSize);
  if (!Number.isSafeInteger(page) || page < 1 || !Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > 100) {
    throw new CliFailure('--page must be a whole number from 1, --page-size from 1 to 100', EXIT.usage);
  }
  return { page, pageSize };
}

/** --active and --inactive (or --archived) as one filter; both at once is a usage error. */
export function activeFilter(active: boolean | undefined, inactive: boolean | undefined, inactiveName: string): boolean | undefined {
  if (active && inactive) throw new CliFailure(`give --active or ${inactiveName}, not both`, EXIT.usage);
  return active ? true : inactive ? false : undefined;
}

/** Repeated options collect into a list. */
export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** How much a coupon takes off, for a table: "25.00%" or "50000.00 IDR". */
export function offText(c: { percent_off: string | null; amount_off: string | null; currency: string | null }): string {
  return c.percent_off !== null ? `${c.percent_off}%` : `${c.amount_off} ${c.currency}`;
}

/** Redemptions so far and the limit: "3/100", or "3" without one. */
export const redeemedText = (o: { times_redeemed: number; max_redemptions: number | null }) => (o.max_redemptions === null ? String(o.times_redeemed) : `${o.times_redeemed}/${o.max_redemptions}`);
