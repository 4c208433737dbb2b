import type { EntityName, EntityProperty } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { dialectOfPlatform } from './dialect.js';

/**
 * Hot reads without entities: rows read by fixed SQL become plain objects with the entity's
 * property names and JavaScript types, so the serialisers in src/http/serializers.ts take them
 * exactly as they take entities (one wire mapping per resource; test/http/row-serializers.test.ts
 * compares the two paths on both databases).
 *
 * Columns and conversions come from the ORM's own metadata, not from a second list of names:
 * a relation becomes `{ id }`, a custom type (money) goes through its own convertToJSValue, and
 * the drivers' differences are evened out here: SQLite gives dates as epoch milliseconds,
 * booleans as 0/1 and JSON as text; PostgreSQL gives Date, boolean and parsed JSON (and bigint
 * and numeric as strings, which the money type already handles). Hydrating entities costs 5-7
 * times the query on these paths (bench/README.md); this costs a property copy.
 */

type Row = Record<string, unknown>;
type Convert = (value: unknown) => unknown;

export interface RowReader<T> {
  /** `alias.column as "<prefix>column", …` for a select list. */
  readonly columns: string;
  read(row: Row): T;
}

/**
 * A date column's value as a Date: SQLite stores epoch milliseconds; MikroORM's PostgreSQL
 * driver hands timestamptz over as text ('2026-11-24 03:29:16.322+00'), which Date parses.
 */
export function toDate(v: unknown): Date | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v;
  return new Date(typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : (v as number | string));
}
const toBoolean: Convert = (v) => (v === null || v === undefined ? v : v === true || v === 1 || v === '1' || v === 't' || v === 'true');
const toJson: Convert = (v) => (typeof v === 'string' ? JSON.parse(v) : (v ?? null));
const toInteger: Convert = (v) => (v === null || v === undefined ? v : Number(v));
const toReference: Convert = (v) => (v === null || v === undefined ? null : { id: String(v) });
const asIs: Convert = (v) => (v === undefined ? null : v);

function converterOf(prop: EntityProperty, em: EntityManager): Convert {
  if (prop.kind === 'm:1' || prop.kind === '1:1') return toReference;
  const platform = em.getPlatform();
  const type = String(prop.type).toLowerCase();
  if (type === 'date' || type === 'datetime') return toDate;
  if (type === 'boolean') return toBoolean;
  if (type === 'json' || prop.customType?.constructor.name === 'JsonType') return toJson;
  if (type === 'integer' || type === 'number' || type === 'smallint') return toInteger;
  if (prop.customType) {
    const custom = prop.customType;
    return (v) => (v === null || v === undefined ? null : custom.convertToJSValue(v, platform));
  }
  return asIs;
}

const readers = new Map<string, RowReader<unknown>>();

/**
 * A reader of `props` of `entity` from rows selected with `reader.columns` (table alias
 * `alias`, column aliases prefixed with `prefix` so that several tables fit one row). Built
 * once per dialect, entity, alias and prefix.
 */
export function rowReader<Out extends object>(
  em: EntityManager,
  entity: EntityName<object>,
  props: readonly (keyof Out & string)[],
  alias: string,
  prefix = '',
): RowReader<Out> {
  const meta = em.getMetadata().find(entity);
  if (!meta) throw new Error(`no metadata for ${String(entity)}`);
  const key = `${dialectOfPlatform(em.getPlatform())}|${meta.className}|${alias}|${prefix}|${props.join(',')}`;
  let reader = readers.get(key);
  if (!reader) {
    const fields = props.map((name) => {
      const prop = (meta.properties as Record<string, EntityProperty | undefined>)[name];
      if (!prop) throw new Error(`${meta.className} has no property ${name}`);
      const column = prop.fieldNames[0];
      return { name, column, as: `${prefix}${column}`, convert: converterOf(prop, em) };
    });
    const columns = fields.map((f) => `${alias}.${quote(em, f.column)} as ${quote(em, f.as)}`).join(', ');
    reader = {
      columns,
      read(row: Row) {
        const out: Row = {};
        for (const f of fields) out[f.name] = f.convert(row[f.as]);
        return out;
      },
    };
    readers.set(key, reader);
  }
  return reader as RowReader<never>;
}

function quote(em: EntityManager, name: string): string {
  return dialectOfPlatform(em.getPlatform()) === 'sqlite' ? `\`${name}\`` : `"${name}"`;
}
