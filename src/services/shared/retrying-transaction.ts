import { DeadlockException, LockWaitTimeoutException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';

const ATTEMPTS = 4;

/**
 * Runs `work` in a transaction on a fresh fork, and runs it again from the start when the
 * database chose it as a deadlock victim: a use case that locks a subscription and then its
 * payments can meet a webhook that locks a payment and then its subscription. `work` must
 * therefore keep its results in what it returns, not in outer variables.
 */
export async function retryingTransaction<T>(em: EntityManager, work: (em: EntityManager) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await em.fork().transactional(work);
    } catch (err) {
      const retryable = err instanceof DeadlockException || err instanceof LockWaitTimeoutException;
      if (!retryable || attempt >= ATTEMPTS) throw err;
      await new Promise((resolve) => setTimeout(resolve, 10 * attempt + Math.floor(Math.random() * 20)));
    }
  }
}
