import type { EntityManager } from '@mikro-orm/knex';
import type { Knex } from 'knex';
import { isPostgres } from './dialect.js';
import { hotWrite } from './hot-sql.js';

/*
 * Group commit for SQLite's one writer. SQLite runs one write transaction at a time, and each
 * COMMIT writes its pages to the WAL and waits for the disk (synchronous=FULL): at 16 webhooks at
 * once that was a fifth of each settlement's CPU, spent while every other one waited. Here the
 * units of work that arrive while one transaction runs wait in a queue; the next transaction
 * takes all of them (up to MAX_MEMBERS), runs each in a SAVEPOINT of its own, and commits once.
 *
 * What each member sees is what it would see in a transaction of its own that ran right after
 * the previous member's: SQLite has one connection per process here, so they ran one after the
 * other already. A member that throws is rolled back to its savepoint alone and gets its error
 * after the COMMIT; the others keep their work. A member is answered only after the COMMIT that
 * holds its work: when BEGIN or the COMMIT fails, every member of the group gets that error and
 * none of their work is stored. PostgreSQL runs transactions side by side and commits them
 * concurrently on its own, so there each unit is its own transaction, as before.
 */

/** A group's bound: its first member waits for all the others' work before its answer. */
const MAX_MEMBERS = 32;

interface Member {
  work: (em: EntityManager) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

interface Queue {
  waiting: Member[];
  draining: boolean;
}

/** One queue per database (per ORM): its driver connection object is shared by all forks. */
const queues = new WeakMap<object, Queue>();

/** How many groups committed and how many members they held (tests prove grouping happened). */
export const commitGroupStats = { groups: 0, members: 0, largest: 0 };

/**
 * Runs `work` in a transaction on a fresh fork of `parent` (BEGIN, work, COMMIT; ROLLBACK when
 * it throws), grouped with concurrent callers on SQLite (see above). Resolves only once the
 * work is committed. `work` must not start anything that needs another connection of the pool
 * and waits for it: on SQLite the pool has one, and this transaction holds it.
 */
export function inCommitGroup<T>(parent: EntityManager, work: (em: EntityManager) => Promise<T>): Promise<T> {
  if (isPostgres(parent)) return inOwnTransaction(parent, work);
  const key = parent.getConnection() as object;
  let queue = queues.get(key);
  if (!queue) queues.set(key, (queue = { waiting: [], draining: false }));
  const joined = queue;
  return new Promise<T>((resolve, reject) => {
    joined.waiting.push({ work, resolve: resolve as (value: unknown) => void, reject });
    if (!joined.draining) void drain(parent, joined);
  });
}

/** BEGIN, work, COMMIT on a fresh fork: the connection's own transaction (see inCommitGroup). */
async function inOwnTransaction<T>(parent: EntityManager, work: (em: EntityManager) => Promise<T>): Promise<T> {
  const em = parent.fork() as EntityManager;
  return em.getConnection().transactional(async (trx: Knex.Transaction) => {
    em.setTransactionContext(trx);
    try {
      return await work(em);
    } finally {
      em.resetTransactionContext();
    }
  });
}

async function drain(parent: EntityManager, queue: Queue): Promise<void> {
  queue.draining = true;
  try {
    while (queue.waiting.length > 0) {
      // NOTE: one turn of the event loop first. A transaction's statements resolve as
      // microtasks, so without it a group would start and commit before node had read the
      // requests already waiting on their sockets, and every group would be one member.
      await new Promise((resolve) => setImmediate(resolve));
      await commitGroup(parent, queue.waiting.splice(0, MAX_MEMBERS));
    }
  } finally {
    queue.draining = false;
  }
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** One transaction for `members`, a savepoint each; each is answered after the COMMIT. Never throws. */
async function commitGroup(parent: EntityManager, members: Member[]): Promise<void> {
  const outcomes: Outcome[] = [];
  try {
    await inOwnTransaction(parent, async (trx) => {
      for (const member of members) outcomes.push(await inSavepoint(parent, trx, member.work));
    });
  } catch (error) {
    // BEGIN, a savepoint's own statements or the COMMIT failed: nothing of the group was stored.
    for (const member of members) member.reject(error);
    return;
  }
  commitGroupStats.groups += 1;
  commitGroupStats.members += members.length;
  commitGroupStats.largest = Math.max(commitGroupStats.largest, members.length);
  members.forEach((member, i) => {
    const outcome = outcomes[i];
    if (outcome.ok) member.resolve(outcome.value);
    else member.reject(outcome.error);
  });
}

/**
 * One member's work on a fork of its own (an empty identity map, as a transaction of its own
 * would have) inside the group's transaction. Its failure is rolled back to its savepoint and
 * returned; a failure of the savepoint statements themselves throws, and fails the group.
 */
async function inSavepoint(parent: EntityManager, group: EntityManager, work: Member['work']): Promise<Outcome> {
  const em = parent.fork() as EntityManager;
  em.setTransactionContext(group.getTransactionContext());
  try {
    await hotWrite(em, 'savepoint grouped', []);
    let outcome: Outcome;
    try {
      outcome = { ok: true, value: await work(em) };
    } catch (error) {
      await hotWrite(em, 'rollback to grouped', []);
      outcome = { ok: false, error };
    }
    await hotWrite(em, 'release grouped', []);
    return outcome;
  } finally {
    em.resetTransactionContext();
  }
}
