/*
 * Billable metrics' aggregations and usage units (docs/usage.md). Units are exact decimals with at
 * most six places, carried as text and stored as integer micro-units (× 1,000,000), so that sums
 * are exact on both databases (SQLite has no exact decimal type): never a float.
 */

export type MetricAggregation = 'count' | 'sum' | 'max' | 'unique_count' | 'latest';
export const METRIC_AGGREGATIONS: readonly MetricAggregation[] = ['count', 'sum', 'max', 'unique_count', 'latest'];

/** Aggregations that read a numeric `field` of the event's properties. */
export const NUMERIC_AGGREGATIONS: readonly MetricAggregation[] = ['sum', 'max', 'latest'];

export const MICRO = 1_000_000n;
/**
 * The largest magnitude an event's value may have: 10^12 units. NOTE: sums are kept in micro-units;
 * PostgreSQL sums them as numeric, SQLite as a 64-bit integer, which holds about 9.2 × 10^12 units
 * in one subscription's hour of one metric (docs/scaling.md says so); no real meter comes near.
 */
export const MAX_EVENT_VALUE_MICRO = 1_000_000_000_000n * MICRO;

const UNITS = /^(-?)(\d{1,19})(?:\.(\d{1,6}))?$/;

/** Why an event's value was refused: not a number, more than six decimal places, or past the largest value. */
export type UnitsRefusal = 'not_a_number' | 'too_many_decimals' | 'too_large';

/** The largest magnitude of an event's value, as people read it in a message. */
export const MAX_EVENT_VALUE_TEXT = '1000000000000 (10^12)';

/**
 * An event property as micro-units: a JSON number or a decimal string with at most six decimal
 * places (1e3 and other exponents are refused), at most MAX_EVENT_VALUE_MICRO in magnitude; or
 * why it is not one, so that the message names what is wrong (10^13 is too large, not a matter
 * of decimal places).
 */
export function readUnits(value: unknown): { micro: bigint } | { refused: UnitsRefusal } {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return { refused: 'not_a_number' };
    text = String(value);
  } else if (typeof value === 'string') {
    text = value.trim();
  } else {
    return { refused: 'not_a_number' };
  }
  const decimal = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!decimal) return { refused: /^-?\d+(\.\d+)?e\+?\d+$/i.test(text) && Number(text) >= 1e12 ? 'too_large' : 'not_a_number' };
  const m = UNITS.exec(text);
  if (decimal[3] !== undefined && decimal[3].length > 6) return { refused: 'too_many_decimals' };
  if (!m) return { refused: 'too_large' };
  const micro = BigInt(m[2]) * MICRO + BigInt((m[3] ?? '').padEnd(6, '0') || '0');
  if (micro > MAX_EVENT_VALUE_MICRO) return { refused: 'too_large' };
  return { micro: m[1] === '-' ? -micro : micro };
}

/** readUnits' micro-units, or null when the value is refused. */
export function parseUnits(value: unknown): bigint | null {
  const read = readUnits(value);
  return 'micro' in read ? read.micro : null;
}

/** Micro-units as the shortest exact decimal text ("1250.5", "3", "-0.000001"). */
export function formatUnits(micro: bigint): string {
  const negative = micro < 0n;
  const abs = negative ? -micro : micro;
  const whole = abs / MICRO;
  const fraction = (abs % MICRO).toString().padStart(6, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

/** Whether an event's properties pass a metric's filters (every key's value, as text, listed). */
export function matchesFilters(filters: Record<string, string[]> | null, properties: Record<string, unknown>): boolean {
  if (!filters) return true;
  for (const [key, allowed] of Object.entries(filters)) {
    const value = properties[key];
    if (value === undefined || value === null || typeof value === 'object') return false;
    if (!allowed.includes(String(value))) return false;
  }
  return true;
}
