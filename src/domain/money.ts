import { Decimal } from 'decimal.js';
import { ValidationError } from './errors.js';

/**
 * Money is a decimal string with two places ("150000.00") on the wire and in storage, and a
 * Decimal in arithmetic — never a float. This module is the one home of money arithmetic.
 */
export type Money = string;

const MoneyDecimal = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP });

/** Currencies whose gateway amounts are whole units (Midtrans takes IDR as an integer). */
const WHOLE_UNIT_CURRENCIES = new Set(['IDR', 'JPY', 'KRW', 'VND']);

export function isWholeUnitCurrency(currency: string): boolean {
  return WHOLE_UNIT_CURRENCIES.has(currency.toUpperCase());
}

function dec(value: Money | number | Decimal): Decimal {
  return new MoneyDecimal(value);
}

export function money(value: Money | number | Decimal): Money {
  return dec(value).toFixed(2);
}

export const ZERO: Money = '0.00';

export function add(...values: Money[]): Money {
  return values.reduce<Decimal>((sum, v) => sum.plus(dec(v)), dec(0)).toFixed(2);
}

export function subtract(a: Money, b: Money): Money {
  return dec(a).minus(dec(b)).toFixed(2);
}

/** A plain decimal number as text ("150000", "150000.00", "-1.5"): no exponent, sign or spaces. */
export function isDecimalText(text: string): boolean {
  return /^-?\d{1,30}(\.\d{1,30})?$/.test(text);
}

/** Compares exactly: no rounding to two places first ("150000.001" is more than "150000.00"). */
export function compare(a: Money, b: Money): -1 | 0 | 1 {
  return dec(a).comparedTo(dec(b)) as -1 | 0 | 1;
}

export function isZero(a: Money): boolean {
  return dec(a).isZero();
}

export function isPositive(a: Money): boolean {
  return dec(a).greaterThan(0);
}

export function negate(a: Money): Money {
  return dec(a).negated().toFixed(2);
}

export function minimum(a: Money, b: Money): Money {
  return compare(a, b) <= 0 ? money(a) : money(b);
}

/**
 * NOTE: proration multiplies a price by a fraction of a period and rounds half up to what the
 * currency can be charged in (whole rupiah for IDR), so a prorated charge is always payable.
 */
export function multiplyAndRound(amount: Money, numerator: number | bigint, denominator: number | bigint, currency: string): Money {
  const exact = dec(amount).times(String(numerator)).dividedBy(String(denominator));
  const places = isWholeUnitCurrency(currency) ? 0 : 2;
  return exact.toDecimalPlaces(places, Decimal.ROUND_HALF_UP).toFixed(2);
}

/** The integer the gateway expects for a whole-unit currency; throws when it has a fraction. */
export function toGatewayInteger(amount: Money): number {
  const d = dec(amount);
  if (!d.isInteger()) throw new ValidationError([{ field: 'amount', message: 'the gateway takes whole units only' }]);
  return d.toNumber();
}

const MAX_INPUT_LENGTH = 20;

/**
 * NOTE: in Indonesia a dot groups thousands ("50.000" is fifty thousand rupiah), while an amount
 * here is a plain decimal ("50.000" would be fifty). Rupiah have no sen, so an IDR amount with a
 * fraction can only be a misreading: it is refused with the way to write it, never guessed. Two
 * decimals of zeros ("150000.00", the form every answer uses) are the one fraction an IDR amount
 * may carry; three or more decimals are refused in every currency.
 */
const GROUPED = /^[1-9]\d{0,2}([.,]\d{3})+$/;

/** Whether `text` reads as thousands grouped by dots or commas ("50.000", "1.000.000", "50,000"). */
export function looksThousandsGrouped(text: string): boolean {
  return GROUPED.test(text.trim());
}

/** "whole rupiah" for IDR, "whole JPY" for another whole-unit currency. */
function wholeUnits(currency: string): string {
  return currency.toUpperCase() === 'IDR' ? 'whole rupiah' : `whole ${currency.toUpperCase()}`;
}

/** Why `text` is refused when it has separators or decimals the currency does not take (see the NOTE above). */
function misreadMessage(text: string, currency: string): string {
  if (GROUPED.test(text)) {
    const digits = text.replace(/[.,]/g, '');
    const how = isWholeUnitCurrency(currency) ? `in ${wholeUnits(currency)} without thousands separators` : 'without thousands separators (whole rupiah for IDR)';
    return `must be written ${how} ("${text}" is not ${digits} here); write ${digits}`;
  }
  if (isWholeUnitCurrency(currency)) return `must be written in ${wholeUnits(currency)}: ${currency.toUpperCase()} has no fraction ("${text}")`;
  return 'may have at most two decimal places';
}

/**
 * The one reader of amounts typed into the API and the CLI (a JSON number or a decimal string;
 * staff's amounts too): a positive amount with at most two decimal places, and none but zeros
 * for a whole-unit currency such as IDR. Anything else is a validation error naming `field`.
 */
export function parseAmountInput(value: unknown, currency: string, field = 'amount'): Money {
  const fail = (message: string): never => {
    throw new ValidationError([{ field, message }]);
  };
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) fail('must be a finite number');
    // Request bodies are parsed exactly (src/domain/exact-json.ts): a number that reaches here
    // is the one written, and a double's shortest decimal form gives its digits back.
    text = String(value);
    if (/e/i.test(text)) fail('is out of range');
  } else if (typeof value === 'string') {
    text = value.trim();
  } else {
    return fail('must be a number or a decimal string');
  }
  if (text.length > MAX_INPUT_LENGTH) fail('is too long');
  if (GROUPED.test(text)) fail(misreadMessage(text, currency));
  if (!/^-?\d+(\.\d+)?$/.test(text)) fail('must be a decimal number');
  const [, fraction = ''] = text.split('.');
  if (fraction.length > 2 || (isWholeUnitCurrency(currency) && /[1-9]/.test(fraction))) fail(misreadMessage(text, currency));
  if (dec(text).lessThanOrEqualTo(0)) fail('must be greater than zero');
  return money(text);
}
