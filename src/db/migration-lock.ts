import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { EntityManager } from '@mikro-orm/knex';
import lockfile from 'proper-lockfile';
import { withAdvisoryLock } from './advisory-lock.js';
import { isPostgres } from './dialect.js';

/** The PostgreSQL advisory lock key of migrations ("migrate!" in ASCII). */
const MIGRATION_LOCK_KEY = 0x6d69677261746521n;

/** How long a second `db migrate` waits for the first before giving up (SQLite). */
const WAIT_MS = 10 * 60_000;

/**
 * Runs `fn` (applying migrations) while this process alone may migrate the database: two deploy
 * jobs that migrate at once take turns, and the second then finds nothing to do, instead of both
 * running the same migration and one failing on a duplicate table or row.
 *
 * PostgreSQL: the advisory lock of advisory-lock.ts, waited for (a dying process loses its
 * session and the lock with it).
 * SQLite: a lock directory beside the database file (proper-lockfile: an atomic mkdir, kept fresh
 * while held and taken over once stale, so a killed migration does not block the next forever).
 * SQLite's own write lock cannot serve: the migrator's connection would wait on the one holding it.
 */
export async function withMigrationLock<T>(em: EntityManager, sqliteFile: string | null, fn: () => Promise<T>): Promise<T> {
  if (isPostgres(em)) {
    const run = await withAdvisoryLock(em, MIGRATION_LOCK_KEY, fn, { wait: true });
    if (!run.acquired) throw new Error('the migration lock was not taken');
    return run.value;
  }
  if (sqliteFile === null || sqliteFile === ':memory:' || !existsSync(dirname(resolve(sqliteFile)))) return fn();
  const release = await lockfile.lock(resolve(sqliteFile), {
    realpath: false,
    lockfilePath: `${resolve(sqliteFile)}.migrate-lock`,
    stale: 30_000,
    update: 5_000,
    retries: { retries: Math.ceil(WAIT_MS / 1000), factor: 1, minTimeout: 250, maxTimeout: 1000 },
  });
  try {
    return await fn();
  } finally {
    await release().catch(() => undefined);
  }
}
