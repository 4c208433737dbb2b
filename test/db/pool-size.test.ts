import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/*
 * DATABASE_POOL_MAX (docs/configuration.md): the most PostgreSQL connections one server process
 * holds. Forty requests at once against a pool of 3 are all answered, and the database never sees
 * more than 3 connections from the process (each test server has a database of its own).
 */

describe('DATABASE_POOL_MAX', () => {
  it('is a whole number from 1 to 1000, 10 when unset', () => {
    expect(loadConfig({}).databasePoolMax).toBe(10);
    expect(loadConfig({ DATABASE_POOL_MAX: '25' }).databasePoolMax).toBe(25);
    for (const bad of ['0', '-1', '2.5', 'ten', '1001']) {
      expect(() => loadConfig({ DATABASE_POOL_MAX: bad }), bad).toThrow(ConfigError);
    }
    expect(() => loadConfig({ DATABASE_POOL_MAX: '0' })).toThrow(/DATABASE_POOL_MAX must be at least 1, got 0/);
  });
});

describe.runIf(process.env.TEST_DATABASE_URL)('DATABASE_POOL_MAX on PostgreSQL', () => {
  let server: TestServer;
  let watcher: pg.Client;

  beforeAll(async () => {
    server = await startTestServer('postgresql', { env: { DATABASE_POOL_MAX: '3' }, config: { planCacheSeconds: 0 } });
    watcher = new pg.Client({ connectionString: server.db.url });
    await watcher.connect();
  });
  afterAll(async () => {
    await watcher?.end();
    await server?.stop();
  });

  it('forty requests at once are all answered over at most 3 connections', async () => {
    const user = await server.createUser();
    const backends = async () =>
      Number((await watcher.query("select count(*) as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()")).rows[0].n);
    let most = 0;
    let running = true;
    const watching = (async () => {
      while (running) {
        most = Math.max(most, await backends());
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? server.api('GET', '/plans/') : server.api('GET', '/payments/', { auth: user }))));
    running = false;
    await watching;
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(3);
  });
});
