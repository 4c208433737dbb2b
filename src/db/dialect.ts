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
