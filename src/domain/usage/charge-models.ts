import { Decimal } from 'decimal.js';
import type { FieldError } from '../errors.js';
import { isWholeUnitCurrency, looksThousandsGrouped, parseAmountInput, type Money } from '../money.js';
import { ValidationError } from '../errors.js';

/*
 * How a window's units of usage are priced (docs/usage.md, the models of Lago): the one home of
 * the arithmetic, for the invoice, the usage endpoint and the portal alike. Each piece is exact;
 * the charge's total is rounded once, half up, to what the currency is charged in (whole rupiah
 * for IDR). Usage below zero (a sum of negative values) costs nothing, as does no usage at all:
 * no flat amount is charged for an empty window.
 */

export type ChargeModel = 'standard' | 'graduated' | 'package' | 'volume';
export const CHARGE_MODELS: readonly ChargeModel[] = ['standard', 'graduated', 'package', 'volume'];

export interface ChargeTier {
  /** The tier's last unit, inclusive; null on the last tier. */
  up_to: string | null;
  /** The price of one unit, at most six decimal places. */
  unit_amount: string;
  /** Charged once when the tier holds any units (graduated), or when the total falls in it (volume). */
  flat_amount: Money;
}

export interface ChargeProperties {
  unit_amount?: string;
  amount?: Money;
  package_size?: number;
  free_units?: number;
  tiers?: ChargeTier[];
}

/** A plan's usage charge (`charges` in the plans file and the API). */
export interface PlanCharge {
  /** The billable metric's code. */
  metric: string;
  /** The metric's name, copied when the plans file is loaded (a metric's terms never change). */
  metric_name?: string;
  model: ChargeModel;
  properties: ChargeProperties;
}

const D = Decimal.clone({ precision: 60, rounding: Decimal.ROUND_HALF_UP });
const UNIT_PRICE = /^\d{1,15}(\.\d{1,6})?$/;
const UNITS = /^\d{1,19}(\.\d{1,6})?$/;
const MAX_TIERS = 20;

function exactAmount(charge: PlanCharge, units: Decimal): Decimal {
  const p = charge.properties;
  if (units.lessThanOrEqualTo(0)) return new D(0);
  switch (charge.model) {
    case 'standard':
      return units.times(p.unit_amount!);
    case 'package': {
      const billable = Decimal.max(0, units.minus(p.free_units ?? 0));
      return billable.dividedBy(p.package_size!).ceil().times(p.amount!);
    }
    case 'graduated': {
      let total = new D(0);
      let below = new D(0);
      for (const tier of p.tiers!) {
        const top = tier.up_to === null ? null : new D(tier.up_to);
        const inTier = Decimal.max(0, Decimal.min(units, top ?? units).minus(below));
        if (inTier.greaterThan(0)) total = total.plus(inTier.times(tier.unit_amount)).plus(tier.flat_amount);
        if (top === null || units.lessThanOrEqualTo(top)) break;
        below = top;
      }
      return total;
    }
    case 'volume': {
      const tier = p.tiers!.find((t) => t.up_to === null || units.lessThanOrEqualTo(t.up_to)) ?? p.tiers![p.tiers!.length - 1];
      return units.times(tier.unit_amount).plus(tier.flat_amount);
    }
  }
}

/** What `units` (exact decimal text) of usage cost under `charge`, rounded half up to the currency's unit. */
export function chargeAmount(charge: PlanCharge, units: string, currency: string): Money {
  const places = isWholeUnitCurrency(currency) ? 0 : 2;
  return exactAmount(charge, new D(units)).toDecimalPlaces(places, Decimal.ROUND_HALF_UP).toFixed(2);
}

function moneyErrors(value: unknown, currency: string, field: string, allowZero: boolean): FieldError[] {
  if (allowZero && (value === 0 || value === '0' || value === '0.00')) return [];
  try {
    parseAmountInput(value, currency, field);
    return [];
  } catch (e) {
    if (e instanceof ValidationError) return e.errors;
    throw e;
  }
}

/**
 * A charge as written in the plans file, checked field by field (`at` prefixes each field), and
 * returned normalised (amounts with two places, unit prices as written) when valid.
 */
export function checkCharge(value: unknown, currency: string, at: string): { charge: PlanCharge | null; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const err = (field: string, message: string) => errors.push({ field: `${at}.${field}`, message });
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { charge: null, errors: [{ field: at, message: 'must be an object' }] };
  const c = value as Record<string, unknown>;
  if (typeof c.metric !== 'string' || c.metric.length === 0) err('metric', "is required (a billable metric's code)");
  if (!CHARGE_MODELS.includes(c.model as ChargeModel)) err('model', `must be one of ${CHARGE_MODELS.join(', ')}`);
  const p = (c.properties ?? {}) as Record<string, unknown>;
  if (typeof p !== 'object' || p === null || Array.isArray(p)) return { charge: null, errors: [...errors, { field: `${at}.properties`, message: 'must be an object' }] };
  const unitPrice = (v: unknown, field: string) => {
    const text = typeof v === 'number' ? String(v) : v;
    if (typeof text !== 'string' || !UNIT_PRICE.test(text)) err(field, 'must be a price of at least 0 with at most six decimal places');
    // A unit price may have six decimals, so "1.500" could be one and a half rupiah or, in
    // Indonesian writing, fifteen hundred: it is refused rather than guessed.
    else if (looksThousandsGrouped(text)) err(field, `is ambiguous: "${text}" reads as thousands in Indonesian writing; write ${text.replace(/[.,]/g, '')} for that many rupiah, or ${text}0 for a fraction of one`);
  };
  const properties: ChargeProperties = {};
  switch (c.model) {
    case 'standard':
      unitPrice(p.unit_amount, 'properties.unit_amount');
      properties.unit_amount = String(p.unit_amount);
      break;
    case 'package':
      errors.push(...moneyErrors(p.amount, currency, `${at}.properties.amount`, false));
      if (!Number.isInteger(p.package_size) || (p.package_size as number) < 1) err('properties.package_size', 'must be a whole number of at least 1');
      if (p.free_units !== undefined && (!Number.isInteger(p.free_units) || (p.free_units as number) < 0)) err('properties.free_units', 'must be a whole number of at least 0');
      if (errors.length === 0) Object.assign(properties, { amount: new D(String(p.amount)).toFixed(2), package_size: p.package_size, free_units: p.free_units ?? 0 });
      break;
    case 'graduated':
    case 'volume': {
      const tiers = p.tiers;
      if (!Array.isArray(tiers) || tiers.length === 0 || tiers.length > MAX_TIERS) {
        err('properties.tiers', `must list 1 to ${MAX_TIERS} tiers`);
        break;
      }
      let previous: Decimal | null = null;
      properties.tiers = tiers.map((t: Record<string, unknown>, i) => {
        const f = `properties.tiers[${i}]`;
        if (typeof t !== 'object' || t === null) {
          err(f, 'must be an object');
          return { up_to: null, unit_amount: '0', flat_amount: '0.00' };
        }
        const last = i === tiers.length - 1;
        const upTo = typeof t.up_to === 'number' ? String(t.up_to) : t.up_to;
        if (last && upTo !== null && upTo !== undefined) err(`${f}.up_to`, 'must be null on the last tier');
        if (!last) {
          if (typeof upTo !== 'string' || !UNITS.test(upTo)) err(`${f}.up_to`, 'must be a number of units (at most six decimal places)');
          else if (previous !== null && new D(upTo).lessThanOrEqualTo(previous)) err(`${f}.up_to`, 'must be more than the previous tier\'s');
          else previous = new D(upTo);
        }
        unitPrice(t.unit_amount ?? '0', `${f}.unit_amount`);
        const flat = t.flat_amount ?? '0';
        errors.push(...moneyErrors(flat, currency, `${at}.${f}.flat_amount`, true));
        return {
          up_to: last ? null : String(upTo),
          unit_amount: String(t.unit_amount ?? '0'),
          flat_amount: /^\d+(\.\d+)?$/.test(String(flat)) ? new D(String(flat)).toFixed(2) : '0.00',
        };
      });
      break;
    }
  }
  if (errors.length > 0) return { charge: null, errors };
  return { charge: { metric: c.metric as string, model: c.model as ChargeModel, properties }, errors };
}
