import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll } from 'vitest';
import type { DatabaseKind } from './database.js';
import { startTestServer, type TestServer } from './server.js';

/** What `billing-admin` needs to reach a test server and its database. */
export function cliEnv(server: TestServer): Record<string, string> {
  // The server's PUBLIC_URL and SESSION_SECRET, as a deployment gives both: links the CLI prints (an invoice's hosted_url) are the server's.
  return { DATABASE_URL: server.db.url, BILLING_URL: server.url, SESSION_SECRET: 'test-session-secret', PUBLIC_URL: server.url };
}

export interface CliStage {
  server: TestServer;
  /** The environment for runCli (cliEnv of the server). */
  env: Record<string, string>;
  /** A fresh EntityManager on the server's database, to read what a command stored. */
  em(): EntityManager;
}

/**
 * A test server for the enclosing describe block (the fields are filled before its first test)
 * and the environment `billing-admin` runs in against it; stopped after the block.
 */
export function serverForCli(kind: DatabaseKind): CliStage {
  const stage = { em: () => stage.server.running.billing.orm.em.fork() as EntityManager } as CliStage;
  beforeAll(async () => {
    stage.server = await startTestServer(kind);
    stage.env = cliEnv(stage.server);
  });
  afterAll(() => stage.server?.stop());
  return stage;
}
