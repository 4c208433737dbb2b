import type { Orm } from '../../db/orm.js';
import { Session } from '../../db/entities/infrastructure.js';
import { findOneRaw } from '../../db/hot-reads.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * koa-session's external store on the database, so sessions are shared by every server process
 * and can be revoked (logout deletes the row). Uses its own forked entity manager.
 */
export function databaseSessionStore(orm: Orm) {
  return {
    async get(key: string): Promise<Record<string, unknown> | undefined> {
      const row = await findOneRaw(orm.em.fork(), Session, 'select * from sessions where id = ?', [key]);
      if (!row || row.expiresAt.getTime() <= Date.now()) return undefined;
      return JSON.parse(row.data) as Record<string, unknown>;
    },
    async set(key: string, sess: Record<string, unknown>, maxAge: number | 'session' | undefined): Promise<void> {
      const em = orm.em.fork();
      const ttl = typeof maxAge === 'number' ? maxAge : DAY_MS;
      await em.upsert(Session, { id: key, data: JSON.stringify(sess), expiresAt: new Date(Date.now() + ttl) });
    },
    async destroy(key: string): Promise<void> {
      await orm.em.fork().nativeDelete(Session, { id: key });
    },
  };
}

/** Deletes expired sessions; called periodically by the server. */
export async function deleteExpiredSessions(orm: Orm): Promise<number> {
  return orm.em.fork().nativeDelete(Session, { expiresAt: { $lte: new Date() } });
}
