import { Decimal } from 'decimal.js';
import type { FieldError } from '../../domain/errors.js';
import { compare, parseAmountInput, type Money } from '../../domain/money.js';
import { ValidationError } from '../../domain/errors.js';

/*
 * The checks coupons and promotion codes share, beyond what the contract states (the CLI calls
 * the use cases without the contract, so the shapes are checked here as well).
 */

/** What a coupon's and a promotion code's code may be: letters, digits, _ and -, at most 64. */
export const CODE = /^[A-Za-z0-9_-]{1,64}$/;

/** The most a coupon may take off or a code may require: far above any price, and within what every money column stores exactly. */
const MAX_AMOUNT: Money = '1000000000000.00';

/** The largest redemption limit (the contract's). */
export const MAX_REDEMPTIONS = 100_000_000;

/** Pushes the error and gives undefined, so that a check reads as one expression. */
export function refuse(errors: FieldError[], field: string, message: string): undefined {
  errors.push({ field, message });
  return undefined;
}

/** A positive amount in `currency` (its decimals), at most MAX_AMOUNT, or undefined with the error pushed. */
export function amountIn(errors: FieldError[], value: unknown, currency: string, field: string): Money | undefined {
  try {
    const amount = parseAmountInput(value, currency, field);
    if (compare(amount, MAX_AMOUNT) > 0) return refuse(errors, field, `must be at most ${MAX_AMOUNT}`);
    return amount;
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    errors.push(...err.errors);
    return undefined;
  }
}

/** A percentage above 0 and at most 100 with up to two decimals, stored as "25.00". */
export function percentage(errors: FieldError[], value: unknown, field = 'percent_off'): string | undefined {
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : '';
  if (!/^\d{1,3}(\.\d{1,2})?$/.test(text)) return refuse(errors, field, 'must be a percentage with at most two decimals, like 25 or 12.5');
  const pct = new Decimal(text);
  if (pct.lessThanOrEqualTo(0) || pct.greaterThan(100)) return refuse(errors, field, 'must be above 0 and at most 100');
  return pct.toFixed(2);
}

/** A whole number within [min, max], or undefined with the error pushed. */
export function wholeNumber(errors: FieldError[], value: unknown, field: string, min: number, max: number): number | undefined {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) return refuse(errors, field, `must be a whole number from ${min} to ${max}`);
  return value;
}

/** An instant after `now` (a Date or an ISO 8601 date-time with its offset), or undefined with the error pushed. */
export function futureInstant(errors: FieldError[], value: unknown, now: Date, field: string): Date | undefined {
  const at = value instanceof Date ? value : typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i.test(value.trim()) ? new Date(value.trim()) : null;
  if (!at || Number.isNaN(at.getTime())) return refuse(errors, field, 'must be a date and time with its offset, like 2027-01-31T23:59:59+07:00');
  if (at.getTime() <= now.getTime()) return refuse(errors, field, 'must be in the future');
  return at;
}
