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
