import type { EntityClass, EntityProperty, RequiredEntityData } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import type { Knex } from 'knex';
import { isPostgres } from './dialect.js';
import { hotWrite } from './hot-sql.js';

/*
 * Set-based writes (the batched billing run, the webhook's plain settlement), with bound
 * parameters, run by hot-sql.ts (SQLite statements prepared once per connection). MikroORM's insertMany
 * inlines every value into the SQL text (formatQuery), which at a thousand rows a statement cost
 * more than the database's own work; here each value is converted by its property's type (money
 * in minor units on SQLite, JSON as text…) and bound. PostgreSQL gets one array a column
 * (INSERT … SELECT FROM unnest(…), any number of rows); SQLite multi-row VALUES in slices under
 * its limit of bound variables.
 */

/** SQLite's default SQLITE_MAX_VARIABLE_NUMBER is 32766. */
const SQLITE_MAX_PARAMS = 32000;

interface Column {
  name: string;
  prop: EntityProperty;
  /** PostgreSQL type of the column, for the array cast. */
  pgType: string;
}

function inTransaction(em: EntityManager): void {
  if (!em.getTransactionContext<Knex.Transaction>()) throw new Error('bulk writes must run inside a transaction');
}

function columnsOf(em: EntityManager, entity: EntityClass<object>, properties: string[]): Column[] {
  const meta = em.getMetadata().get(entity.name);
  return properties.map((p) => {
    const prop = meta.properties[p as never] as EntityProperty;
    if (!prop) throw new Error(`${entity.name} has no property ${p}`);
    const pgType = prop.columnTypes?.[0] ?? prop.type;
    return { name: prop.fieldNames[0], prop, pgType };
  });
}

/** A value as the column stores it, ready to bind. */
function toColumn(em: EntityManager, prop: EntityProperty, value: unknown, sqlite: boolean): unknown {
  if (value === null || value === undefined) return null;
  const converted = prop.customType ? prop.customType.convertToDatabaseValue(value, em.getPlatform(), { mode: 'query-data' }) : value;
  if (sqlite && converted instanceof Date) return converted.getTime();
  if (sqlite && typeof converted === 'boolean') return converted ? 1 : 0;
  return converted;
}

/**
 * A value read by raw SQL, as the entity would hold it: money through MoneyType, dates from
 * SQLite's epoch milliseconds, booleans from SQLite's integers.
 */
export function fromColumn(em: EntityManager, entity: EntityClass<object>, property: string, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  const prop = em.getMetadata().get(entity.name).properties[property as never] as EntityProperty;
  if (prop.customType) return prop.customType.convertToJSValue(value, em.getPlatform());
  if (prop.runtimeType === 'Date') return value instanceof Date ? value : new Date(typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : (value as number | string));
  if (prop.runtimeType === 'boolean') return Boolean(value);
  return value;
}

/** The table, its column list and each row's values as the columns store them. */
function insertShape<T extends object>(em: EntityManager, entity: EntityClass<T>, rows: RequiredEntityData<T>[], sqlite: boolean) {
  const properties = Object.keys(rows[0]);
  const columns = columnsOf(em, entity as EntityClass<object>, properties);
  const table = em.getMetadata().get(entity.name).tableName;
  const names = columns.map((c) => c.name).join(', ');
  const values = (row: RequiredEntityData<T>) => columns.map((c, i) => toColumn(em, c.prop, (row as Record<string, unknown>)[properties[i]], sqlite));
  return { columns, table, names, values };
}

/**
 * PostgreSQL: the INSERT of `rows` (at least one, all with the same properties) as one
 * statement with one array a column, whatever their number: the same text for any count, so
 * it can be prepared, and it can stand in a WITH of a larger statement.
 */
export function pgInsertStatement<T extends object>(em: EntityManager, entity: EntityClass<T>, rows: RequiredEntityData<T>[]): { sql: string; params: unknown[] } {
  const { columns, table, names, values } = insertShape(em, entity, rows, false);
  const arrays = columns.map(() => [] as unknown[]);
  for (const row of rows) values(row).forEach((v, i) => arrays[i].push(v));
  const casts = columns.map((c) => `?::${c.pgType}[]`).join(', ');
  return { sql: `insert into ${table} (${names}) select * from unnest(${casts})`, params: arrays };
}

/** INSERTs `rows` (all with the same properties; relations by id) into the entity's table, in the caller's transaction. */
export async function insertRows<T extends object>(em: EntityManager, entity: EntityClass<T>, rows: RequiredEntityData<T>[]): Promise<void> {
  if (rows.length === 0) return;
  inTransaction(em);
  if (isPostgres(em)) {
    const { sql, params } = pgInsertStatement(em, entity, rows);
    await hotWrite(em, sql, params);
    return;
  }
  const { columns, table, names, values } = insertShape(em, entity, rows, true);
  const perStatement = Math.max(1, Math.floor(SQLITE_MAX_PARAMS / columns.length));
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  for (let from = 0; from < rows.length; from += perStatement) {
    const slice = rows.slice(from, from + perStatement);
    await hotWrite(em, `insert into ${table} (${names}) values ${slice.map(() => tuple).join(', ')}`, slice.flatMap(values));
  }
}

/**
 * One UPDATE setting `properties` of each row by id (`rows`: id first, then the values in the
 * order of `properties`), plus `also` for every row (e.g. `updated_at = ?`). Fails unless every
 * row was there to update.
 */
export async function updateRows<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  properties: string[],
  rows: unknown[][],
  also: { sql: string; params: unknown[] },
): Promise<void> {
  if (rows.length === 0) return;
  inTransaction(em);
  const sqlite = !isPostgres(em);
  const columns = columnsOf(em, entity as EntityClass<object>, properties);
  const table = em.getMetadata().get(entity.name).tableName;
  // NOTE: `also` stands in the SET list: its parameters come after the VALUES on SQLite (the CTE
  // is first) and before the arrays on PostgreSQL (FROM unnest comes after SET).
  const sets = [...columns.map((c) => `${c.name} = v.${c.name}`), also.sql].join(', ');
  const converted = rows.map(([id, ...rest]) => [id, ...rest.map((v, i) => toColumn(em, columns[i].prop, v, sqlite))]);
  const names = ['id', ...columns.map((c) => c.name)];
  let affected: number;
  if (!sqlite) {
    const arrays = names.map((_, i) => converted.map((r) => r[i]));
    const casts = ['?::uuid[]', ...columns.map((c) => `?::${c.pgType}[]`)].join(', ');
    affected = await hotWrite(
      em,
      `update ${table} set ${sets} from unnest(${casts}) as v (${names.join(', ')}) where ${table}.id = v.id`,
      [...also.params, ...arrays],
    );
  } else {
    // NOTE: one statement: SQLite's UPDATE … FROM (3.33+) over a VALUES table; rows × columns stays
    // far under the bound-variable limit for the page sizes the run uses.
    const tuple = `(${names.map(() => '?').join(', ')})`;
    affected = await hotWrite(
      em,
      `with v (${names.join(', ')}) as (values ${converted.map(() => tuple).join(', ')}) update ${table} set ${sets} from v where ${table}.id = v.id`,
      [...converted.flat(), ...also.params],
    );
  }
  if (affected !== rows.length) throw new Error(`${table}: ${affected} of ${rows.length} rows updated`);
}
