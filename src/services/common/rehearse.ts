import type { EntityManager } from '@mikro-orm/knex';
import { takeSqliteWriteLock } from '../../db/dialect.js';

/** Thrown at the end of a rehearsal to roll back everything it did. */
class RehearsalRollback extends Error {}

/**
 * A dry run: `work` in one transaction that is rolled back (inside the caller's, when there is
 * one), so each step sees what the steps before it would have done and nothing stays. Returns
 * what `work` returned.
 *
 * NOTE: on SQLite the rehearsal takes the write lock first (on `table`, which names what it will
 * write): it reads for a while before its first write, and any write of a live server in between
 * would otherwise fail it at once with "database is locked" (src/db/dialect.ts). So while it runs
 * it holds the locks the real run would take, and the server's writes wait for it.
 */
export async function rehearse<T>(em: EntityManager, table: string, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  let result: { value: T } | null = null;
  try {
    await em.fork({ keepTransactionContext: true }).transactional(async (tx: EntityManager) => {
      await takeSqliteWriteLock(tx, table);
      result = { value: await work(tx) };
      throw new RehearsalRollback();
    });
  } catch (err) {
    if (!(err instanceof RehearsalRollback)) throw err;
  }
  return result!.value;
}
