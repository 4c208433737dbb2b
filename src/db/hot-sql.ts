import type { EntityDictionary, EntityName } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import type { Knex } from 'knex';
import { dialectOfPlatform } from './dialect.js';

type Row = Record<string, unknown>;

/** What knex's pool hands out: a pg Client or a better-sqlite3 Database. */
interface PgClient {
  query(config: { name?: string; text: string; values: unknown[] }): Promise<{ rows: Row[]; rowCount: number | null }>;
}
interface SqliteStatement {
  all(...params: unknown[]): Row[];
  run(...params: unknown[]): { changes: number };
}
interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
}
interface PoolClient {
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): unknown;
}

interface PgStatement {
  text: string;
  /** Set: a named prepared statement, parsed and planned once per connection. */
  name?: string;
}

/**
 * `?` placeholders as PostgreSQL's `$1, $2, …` (hot statements hold no `?` inside literals), one
 * cache for each kind so that the SQL text itself is the key (no key string built per call).
 */
const pgStatements = { prepared: new Map<string, PgStatement>(), unprepared: new Map<string, PgStatement>() };
function pgStatement(sql: string, prepare: boolean): PgStatement {
  const cache = prepare ? pgStatements.prepared : pgStatements.unprepared;
  let statement = cache.get(sql);
  if (statement === undefined) {
    let n = 0;
    const text = sql.replace(/\?/g, () => `$${++n}`);
    statement = prepare ? { text, name: `hot_${cache.size}` } : { text };
    cache.set(sql, statement);
  }
  return statement;
}

/**
 * Where a transaction that is not knex's (hot-transaction.ts) keeps its connection on its
 * context: statements run on it directly, without asking a pool for it and giving it back.
 */
export const HELD_CONNECTION: unique symbol = Symbol('held by a hot transaction');

export interface HotOptions {
  /**
   * PostgreSQL: keep the statement prepared on each connection (parsed and planned once), for
   * lookups by a key whose plan never depends on the values. NOTE: not for lists (after five
   * runs PostgreSQL may switch to a generic plan, which measured 20-30 % slower on the payment
   * page) nor for `select *` (a migration adding a column under a running process would make
   * the prepared form fail: "cached plan must not change result type").
   */
  prepare?: boolean;
}

/**
 * SQLite statements prepared once per connection (knex prepares every statement anew). At most
 * MAX_PREPARED a connection: the batched writes' texts vary with their row counts.
 */
const MAX_PREPARED = 500;
const prepared = new WeakMap<object, Map<string, SqliteStatement>>();
function sqliteStatement(db: SqliteDatabase, sql: string): SqliteStatement {
  let statements = prepared.get(db);
  if (!statements) prepared.set(db, (statements = new Map()));
  let statement = statements.get(sql);
  if (!statement) {
    if (statements.size >= MAX_PREPARED) statements.clear();
    statements.set(sql, (statement = db.prepare(sql)));
  }
  return statement;
}

/** better-sqlite3 binds numbers, strings, bigints, buffers and null: dates and booleans as knex's SQLite client stores them. */
const sqliteValue = (value: unknown): unknown => (value instanceof Date ? value.getTime() : typeof value === 'boolean' ? Number(value) : value);

/** The instants toISOString writes as PostgreSQL reads them: years 1 to 9999. */
const ISO_FIRST = Date.parse('0001-01-01T00:00:00.000Z');
const ISO_LAST = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * PostgreSQL: a Date as ISO text (every date column here is timestamptz, so the instant is
 * exact). NOTE: pg writes a Date in the process's local time field by field, which was 4 % of
 * the garbage a webhook settlement makes; dates outside those years are left to pg.
 */
const pgDate = (value: Date): unknown => {
  const t = value.getTime();
  return t >= ISO_FIRST && t <= ISO_LAST ? value.toISOString() : value;
};
/** A value as pg is handed it: dates as above, also inside an array (the INSERTs by unnest bind a column as one). */
const pgValue = (value: unknown): unknown => {
  if (value instanceof Date) return pgDate(value);
  if (Array.isArray(value) && value.some((v) => v instanceof Date)) return value.map((v: unknown) => (v instanceof Date ? pgDate(v) : v));
  return value;
};

type Outcome = { rows: Row[]; affected: number };

/**
 * Runs one statement on a connection of MikroORM's own pool, or, inside a transaction, on that
 * transaction's connection (knex's transaction client hands out exactly that one; a hot
 * transaction holds it on its context).
 */
async function run(em: EntityManager, sql: string, params: readonly unknown[], options: HotOptions, reads: boolean): Promise<Outcome> {
  const context = em.getTransactionContext<Knex.Transaction & { [HELD_CONNECTION]?: unknown }>();
  const held = context?.[HELD_CONNECTION];
  const pool = (held === undefined ? (context ?? em.getConnection().getKnex()).client : null) as PoolClient | null;
  let connection: unknown;
  try {
    connection = held ?? (await pool!.acquireConnection());
    if (dialectOfPlatform(em.getPlatform()) === 'postgresql') {
      const statement = pgStatement(sql, options.prepare === true);
      const result = await (connection as PgClient).query({ name: statement.name, text: statement.text, values: params.map(pgValue) });
      return { rows: result.rows, affected: result.rowCount ?? 0 };
    }
    const statement = sqliteStatement(connection as SqliteDatabase, sql);
    const values = params.map(sqliteValue);
    return reads ? { rows: statement.all(...values), affected: 0 } : { rows: [], affected: statement.run(...values).changes };
  } catch (error) {
    throw em.getDriver().convertException(error as Error);
  } finally {
    if (pool && connection !== undefined) await pool.releaseConnection(connection);
  }
}

/**
 * Rows of one fixed, parameterised SELECT on the hot paths (authentication, the access check,
 * the active subscription, the payment list, the webhook's plain settlement).
 *
 * NOTE: em.execute builds every statement anew through knex with the values inlined into the
 * text (MikroORM's formatQuery), so SQLite prepares each one afresh and the plan can never be
 * reused; that costs 0.03 ms (PostgreSQL) to 0.06 ms (SQLite) of CPU per statement over the
 * driver's own call (bench/README.md). Here the values are bound, SQLite statements are prepared
 * once per connection, and driver errors become MikroORM's exceptions exactly as em.execute's do
 * (a lost database still answers 503). Inside a transaction the statement runs on the
 * transaction's connection, so it sees and joins that transaction. The statements are not in
 * MikroORM's query log.
 * Only for statements written in the code: `sql` must never be built from input (the prepared
 * statement cache is keyed by it).
 */
export async function hotRows<T extends object = Row>(em: EntityManager, sql: string, params: readonly unknown[], options: HotOptions = {}): Promise<T[]> {
  return (await run(em, sql, params, options, true)).rows as T[];
}

/** One fixed, parameterised write (INSERT, UPDATE, DELETE) as hotRows runs a SELECT; returns how many rows it changed. */
export async function hotWrite(em: EntityManager, sql: string, params: readonly unknown[]): Promise<number> {
  return (await run(em, sql, params, {}, false)).affected;
}

/** The first row of a hotRows SELECT mapped by the ORM into `em`'s identity map, as `findOne` would give it; null when none. */
export async function findOneHot<T extends object>(em: EntityManager, entity: EntityName<T>, sql: string, params: readonly unknown[]): Promise<T | null> {
  const [row] = await hotRows<EntityDictionary<T>>(em, sql, params);
  return row ? em.map(entity, row) : null;
}
