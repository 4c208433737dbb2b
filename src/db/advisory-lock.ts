import type { EntityManager } from '@mikro-orm/knex';
import { isPostgres } from './dialect.js';

/** What knex's pool hands out on PostgreSQL (a pg Client), and the pool itself. */
interface PgConnection {
  query(text: string, values: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
  end(): Promise<void>;
}
interface Pool {
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): unknown;
}

export type LockedRun<T> = { acquired: true; value: T } | { acquired: false };

/**
 * Runs `fn` while this process holds the PostgreSQL advisory lock `key`, or not at all when
 * another session holds it (`acquired: false`, at once, no waiting; with `wait`, after that
 * session lets it go). On SQLite, which one process serves, it just runs `fn`.
 *
 * NOTE: a session-level lock, taken and released on one connection this function holds for the
 * whole run: `fn` itself uses many transactions on other connections of the pool, so a
 * transaction-level lock would have to stay idle in a transaction all along, and MikroORM's pool
 * could hand a plain unlock to another connection than the one that locked. Should the unlock
 * fail, the connection is closed, which ends its session and so the lock; a process that dies
 * loses its connection and the lock with it.
 */
export async function withAdvisoryLock<T>(em: EntityManager, key: bigint, fn: () => Promise<T>, opts: { wait?: boolean } = {}): Promise<LockedRun<T>> {
  if (!isPostgres(em)) return { acquired: true, value: await fn() };
  const pool = em.getConnection().getKnex().client as unknown as Pool;
  const connection = (await pool.acquireConnection()) as PgConnection;
  let locked = false;
  try {
    // `wait`: queue behind the session that holds it (pg_advisory_lock) instead of giving up.
    const { rows } = await connection.query(
      opts.wait ? 'select pg_advisory_lock($1::bigint) is not null as locked' : 'select pg_try_advisory_lock($1::bigint) as locked',
      [key.toString()],
    );
    locked = rows[0]?.locked === true;
    if (!locked) return { acquired: false };
    return { acquired: true, value: await fn() };
  } finally {
    if (locked) {
      try {
        await connection.query('select pg_advisory_unlock($1::bigint)', [key.toString()]);
      } catch {
        // knex marks an ended connection as disposed: the pool drops it instead of reusing it.
        await connection.end().catch(() => undefined);
      }
    }
    await pool.releaseConnection(connection);
  }
}
