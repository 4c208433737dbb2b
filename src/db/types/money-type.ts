import { Type, type EntityProperty, type Platform } from '@mikro-orm/core';
import { Decimal } from 'decimal.js';
import { dialectOfPlatform } from '../dialect.js';

const isSqlite = (platform: Platform) => dialectOfPlatform(platform) === 'sqlite';

/**
 * Money columns. MikroORM's decimal type stores REAL on SQLite and compares as floats,
 * so amounts are stored as integer minor units on SQLite (exact, and ORDER BY / SUM work) and as
 * numeric(20,2) on PostgreSQL. In JavaScript they are always two-place decimal strings.
 */
export class MoneyType extends Type<string, string | number> {
  override convertToDatabaseValue(value: string, platform: Platform): string | number {
    if (value === null || value === undefined) return value;
    const d = new Decimal(value);
    if (isSqlite(platform)) return d.times(100).toDecimalPlaces(0, Decimal.ROUND_HALF_UP).toNumber();
    return d.toFixed(2);
  }

  override convertToJSValue(value: string | number, platform: Platform): string {
    if (value === null || value === undefined) return value as unknown as string;
    if (isSqlite(platform)) return new Decimal(value).dividedBy(100).toFixed(2);
    return new Decimal(value).toFixed(2);
  }

  override compareAsType(): string {
    return 'string';
  }

  override compareValues(a: string | number, b: string | number): boolean {
    return String(a) === String(b);
  }

  override ensureComparable(): boolean {
    return true;
  }

  override getColumnType(_prop: EntityProperty, platform: Platform): string {
    return isSqlite(platform) ? 'integer' : 'numeric(20,2)';
  }
}
