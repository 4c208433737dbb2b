import type { EntityManager } from '@mikro-orm/knex';
import { isLockContention } from '../../db/database-failure.js';

const ATTEMPTS = 4;

let attempts = ATTEMPTS;

/**
 * Test-only: how many times a deadlock victim runs (1 turns retries off), so a test can prove
 * that every path takes its locks in one order and needs no retry. Returns the undo.
 */
export function setDeadlockAttemptsForTests(n: number): () => void {
  const before = attempts;
  attempts = Math.max(1, Math.floor(n));
  return () => {
    attempts = before;
  };
}

/**
 * Runs `work` in a transaction on a fresh fork, and runs it again from the start when the
 * database chose it as a deadlock victim: a use case that locks a subscription and then its
 * payments can meet a webhook that locks a payment and then its subscription. `work` must
 * therefore keep its results in what it returns, not in outer variables. A victim still chosen
 * on the last attempt is thrown on, and classified as the database unavailable (503, exit 5).
 * Inside a caller's transaction it runs once, as part of it.
 */
export async function retryingTransaction<T>(em: EntityManager, work: (em: EntityManager) => Promise<T>): Promise<T> {
  // Called inside a transaction (a dry run's rehearsal): a savepoint of it. A transaction of its
  // own would commit beside the rehearsal on PostgreSQL and wait forever on SQLite for the one
  // connection the rehearsal holds; a retry is then the outer transaction's to make.
  if (em.isInTransaction()) return em.fork({ keepTransactionContext: true }).transactional(work);
  for (let attempt = 1; ; attempt++) {
    try {
      return await em.fork().transactional(work);
    } catch (err) {
      if (!isLockContention(err) || attempt >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, 10 * attempt + Math.floor(Math.random() * 20)));
    }
  }
}
