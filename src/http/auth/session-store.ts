import type { Orm } from '../../db/orm.js';
import { Session } from '../../db/entities/infrastructure.js';
import type { EntityManager } from '@mikro-orm/knex';
import type { Context } from 'koa';
import type { AccessCache } from './access-cache.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * koa-session's external store on the database, so sessions are shared by every server process
 * and can be revoked (logout deletes the row). Uses its own forked entity manager. Reads go
 * through the access cache: a session seen before costs one version lookup (see AccessCache).
 */
export function databaseSessionStore(orm: Orm, cache: AccessCache) {
  return {
    async get(key: string, _maxAge?: unknown, opts?: { ctx?: Context }): Promise<Record<string, unknown> | undefined> {
      // A hot statement on the pool: no identity map, so no forked entity manager (src/db/hot-sql.ts).
      return cache.session(orm.em as EntityManager, key, opts?.ctx);
    },
    async set(key: string, sess: Record<string, unknown>, maxAge: number | 'session' | undefined): Promise<void> {
      cache.forgetSession(key);
      const em = orm.em.fork();
      const ttl = typeof maxAge === 'number' ? maxAge : DAY_MS;
      await em.upsert(Session, { id: key, data: JSON.stringify(sess), expiresAt: new Date(Date.now() + ttl) });
    },
    async destroy(key: string): Promise<void> {
      cache.forgetSession(key);
      await orm.em.fork().nativeDelete(Session, { id: key });
    },
  };
}

/** Deletes expired sessions; called periodically by the server. */
export async function deleteExpiredSessions(orm: Orm): Promise<number> {
  return orm.em.fork().nativeDelete(Session, { expiresAt: { $lte: new Date() } });
}
