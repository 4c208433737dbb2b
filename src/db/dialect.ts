import type { Platform } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';

/** The two databases the service runs on; the one place that tells them apart. */
export type Dialect = 'sqlite' | 'postgresql';

export function dialectOf(databaseUrl: string): Dialect {
  return databaseUrl.startsWith('sqlite:') ? 'sqlite' : 'postgresql';
}

export function dialectOfPlatform(platform: Platform): Dialect {
  return platform.constructor.name.includes('Sqlite') ? 'sqlite' : 'postgresql';
}

export function isPostgres(em: EntityManager): boolean {
  return dialectOfPlatform(em.getPlatform()) === 'postgresql';
}

/**
 * SQL for the user id inside a session row's JSON `data` (koa-session's store), or null when the
 * data is not JSON: sessions have no user column, and both the session cache and a password
 * change find a user's sessions by it.
 */
export function sessionUserIdSql(em: EntityManager, data: string): string {
  return isPostgres(em)
    ? `(case when ${data} like '{%' then ${data}::jsonb ->> 'userId' end)`
    : `(case when json_valid(${data}) then json_extract(${data}, '$.userId') end)`;
}

/**
 * SQLite: takes the database's one write lock now, by a write that changes no row, so that a
 * transaction that reads before it writes waits (up to the busy timeout) for another process's
 * write to end. NOTE: SQLite waits for the lock only when a transaction's first statement is a
 * write; one that read first and then finds the lock taken fails at once with "database is
 * locked" (waiting could deadlock two readers). Call it first in a write transaction on any table
 * the caller is about to write. PostgreSQL: nothing (row locks wait there).
 */
export async function takeSqliteWriteLock(em: EntityManager, table: string): Promise<void> {
  if (!isPostgres(em)) await em.execute(`delete from ${table} where 0`, [], 'run');
}
