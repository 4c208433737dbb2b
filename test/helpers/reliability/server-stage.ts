import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, expect } from 'vitest';
import { openOrm, type Orm } from '../../../src/db/orm.js';
import { createTestDatabase, type DatabaseKind, type TestDatabase } from '../database.js';
import { prepareDatabase, type Account } from './accounts.js';
import { call, startServerProcess, type ServerProcess } from './server-process.js';

/*
 * A server process with the simulator mounted, on a fresh database of its own, with the test's own
 * ORM beside it to read what the server stored: the stage of the tests that make the gateway
 * misbehave and then look at both ends.
 */

export interface ServerStage {
  db: TestDatabase;
  server: ServerProcess;
  orm: Orm;
  accounts: Record<string, Account>;
  em(): EntityManager;
  /** One account's credentials, as `call` takes them. */
  as(name: string): { basic: Account };
  /**
   * Makes the gateway's next call of one of `operations` go wrong in `mode`; with `when: 'after'`
   * the gateway does the work first and only the answer is lost.
   */
  fault(mode: string, operations: string[], when?: 'after'): Promise<void>;
  /** The gateway's record of an order, or null when the gateway does not know it. */
  gatewayTransaction(orderId: string): Promise<any>;
}

/** The stage for the enclosing describe block (filled before its first test), torn down after it. */
export function serverStage(kind: DatabaseKind, usernames: string[], env: Record<string, string>): ServerStage {
  const stage = {
    em: () => stage.orm.em.fork() as EntityManager,
    as: (name: string) => ({ basic: stage.accounts[name] }),
    async fault(mode, operations, when) {
      const res = await call(stage.server.url, 'POST', '/_simulator/faults', { body: { mode, when, count: 1, operations } });
      expect(res.status).toBe(200);
    },
    async gatewayTransaction(orderId) {
      const res = await call(stage.server.url, 'GET', `/_simulator/transactions/${orderId}`);
      return res.status === 200 ? res.body : null;
    },
  } as ServerStage;
  beforeAll(async () => {
    stage.db = await createTestDatabase(kind);
    stage.accounts = await prepareDatabase(stage.db.url, usernames);
    stage.server = await startServerProcess({ databaseUrl: stage.db.url, env });
    stage.orm = await openOrm(stage.db.url);
  });
  afterAll(async () => {
    await stage.orm?.close(true);
    await stage.server?.stop();
    await stage.db?.drop();
  });
  return stage;
}
