import type { EntityManager } from '@mikro-orm/knex';
import { dialectOfPlatform } from './dialect.js';

type Row = Record<string, unknown>;

/** What knex's pool hands out: a pg Client or a better-sqlite3 Database. */
interface PgClient {
  query(config: { name?: string; text: string; values: unknown[] }): Promise<{ rows: Row[] }>;
}
interface SqliteStatement {
  all(...params: unknown[]): Row[];
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

/** `?` placeholders as PostgreSQL's `$1, $2, …` (hot statements hold no `?` inside literals). */
const pgStatements = new Map<string, PgStatement>();
function pgStatement(sql: string, prepare: boolean): PgStatement {
  const key = `${prepare ? 'p' : 'u'}|${sql}`;
  let statement = pgStatements.get(key);
  if (statement === undefined) {
    let n = 0;
    const text = sql.replace(/\?/g, () => `$${++n}`);
    statement = prepare ? { text, name: `hot_${pgStatements.size}` } : { text };
    pgStatements.set(key, statement);
  }
  return statement;
}

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

/** SQLite statements prepared once per connection (knex prepares every statement anew). */
const prepared = new WeakMap<object, Map<string, SqliteStatement>>();
function sqliteStatement(db: SqliteDatabase, sql: string): SqliteStatement {
  let statements = prepared.get(db);
  if (!statements) prepared.set(db, (statements = new Map()));
  let statement = statements.get(sql);
  if (!statement) statements.set(sql, (statement = db.prepare(sql)));
  return statement;
}

/**
 * Rows of one fixed, parameterised SELECT on the hot read paths (authentication, the access
 * check, the active subscription, the payment list), run on a connection of MikroORM's own pool.
 *
 * NOTE: em.execute builds every statement anew through knex with the values inlined into the
 * text (MikroORM's formatQuery), so SQLite prepares each one afresh and the plan can never be
 * reused; that costs 0.03 ms (PostgreSQL) to 0.06 ms (SQLite) of CPU per statement over the
 * driver's own call (bench/README.md). Here the values are bound, SQLite statements are prepared
 * once per connection, and driver errors become MikroORM's exceptions exactly as em.execute's do
 * (a lost database still answers 503). Inside a transaction the statement joins it through
 * em.execute. The statements are not in MikroORM's query log.
 * Only for statements written in the code: `sql` must never be built from input (the prepared
 * statement cache is keyed by it).
 */
export async function hotRows<T extends object = Row>(em: EntityManager, sql: string, params: readonly unknown[], options: HotOptions = {}): Promise<T[]> {
  if (em.getTransactionContext()) return (await em.execute(sql, [...params], 'all')) as T[];
  const pool = em.getConnection().getKnex().client as unknown as PoolClient;
  const postgres = dialectOfPlatform(em.getPlatform()) === 'postgresql';
  let connection: unknown;
  try {
    connection = await pool.acquireConnection();
    if (postgres) return (await (connection as PgClient).query({ ...pgStatement(sql, options.prepare === true), values: [...params] })).rows as T[];
    return sqliteStatement(connection as SqliteDatabase, sql).all(...params) as T[];
  } catch (error) {
    throw em.getDriver().convertException(error as Error);
  } finally {
    if (connection !== undefined) pool.releaseConnection(connection);
  }
}
