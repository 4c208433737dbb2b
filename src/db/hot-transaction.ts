import type { EntityManager } from '@mikro-orm/knex';
import type { Knex } from 'knex';
import { isPostgres } from './dialect.js';
import { HELD_CONNECTION } from './hot-sql.js';

/*
 * A PostgreSQL transaction for work made only of hot statements (hot-sql.ts): BEGIN, the work,
 * COMMIT on one connection of MikroORM's own pool, without knex's transaction.
 *
 * Why: knex builds a whole new knex instance for every transaction (its make-knex defines every
 * query method afresh on a new function), about 27 KB of garbage a transaction. On the webhook's
 * settlement, one transaction a request, that was an eighth of all the memory the request
 * churned, and PostgreSQL's webhook tail is the garbage collector's pauses (bench/README.md).
 *
 * The work's entity manager carries a transaction context that hot statements recognise (they
 * run on its connection, inside the transaction) and that the ORM cannot use: an ORM query on it
 * throws (knex asks the context's client for a runner, and it refuses), so nothing can run
 * beside the transaction on another connection unnoticed. Work that finds it needs the ORM
 * answers NOT_HERE before writing anything the caller wants to keep: everything is rolled back
 * and the caller runs its general path in an ORM transaction.
 */

/** What work answers when it cannot be done with hot statements alone: roll back, nothing kept. */
export const NOT_HERE: unique symbol = Symbol('not for a hot transaction');

interface PgConnection {
  query(sql: string): Promise<unknown>;
}
interface Pool {
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): unknown;
}

const REFUSAL =
  'Only hot statements (hot-sql.ts) may run in a hot transaction; this work needs the ORM: answer NOT_HERE first and let the caller use an ORM transaction.';

/**
 * A client for knex that is a transaction's (`transacting`, so that knex takes it as one rather
 * than warn and run the query elsewhere) and throws the refusal for anything else knex would ask
 * of it (a query compiler, a runner…). One for all hot transactions: it holds no state.
 */
const REFUSING_CLIENT = new Proxy({ transacting: true } as Record<PropertyKey, unknown>, {
  get(target, property) {
    if (property in target) return target[property];
    throw new Error(REFUSAL);
  },
});

/** The transaction context on the work's entity manager: hot statements find the connection on it (hot-sql.ts), knex the refusing client. */
function contextOf(connection: unknown): Knex.Transaction {
  return { client: REFUSING_CLIENT, [HELD_CONNECTION]: connection } as unknown as Knex.Transaction;
}

/**
 * PostgreSQL only: runs `work` on a fresh fork of `parent` inside BEGIN … COMMIT on one pooled
 * connection; ROLLBACK when it throws (the error is rethrown) or answers NOT_HERE (returned).
 * Resolves only once the work is committed. On SQLite it throws: there the commit groups
 * (commit-groups.ts) share one knex transaction among many units of work already.
 */
export async function inHotTransaction<T>(parent: EntityManager, work: (em: EntityManager) => Promise<T | typeof NOT_HERE>): Promise<T | typeof NOT_HERE> {
  if (!isPostgres(parent)) throw new Error('inHotTransaction is for PostgreSQL');
  const pool = parent.getConnection().getKnex().client as unknown as Pool;
  let connection: PgConnection;
  try {
    connection = (await pool.acquireConnection()) as PgConnection;
  } catch (error) {
    throw parent.getDriver().convertException(error as Error);
  }
  // BEGIN, COMMIT and ROLLBACK fail as any statement does: as MikroORM's exceptions.
  const control = (sql: string) => connection.query(sql).catch((error: Error) => Promise.reject(parent.getDriver().convertException(error)));
  const em = parent.fork() as EntityManager;
  em.setTransactionContext(contextOf(connection));
  let open = false;
  try {
    await control('begin');
    open = true;
    const value = await work(em);
    open = false;
    await control(value === NOT_HERE ? 'rollback' : 'commit');
    return value;
  } catch (error) {
    // NOTE: a failed ROLLBACK leaves nothing to undo: the server ends a transaction whose
    // connection broke, and knex's pool does not hand out a connection its driver saw fail.
    if (open) await connection.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    em.resetTransactionContext();
    await pool.releaseConnection(connection);
  }
}
