import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKey } from '../../src/db/entities/api-key.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf } from '../helpers/subscriptions.js';

/*
 * An operator revokes a leaked key on SQLite while another process holds the database's write
 * lock (a billing run writing its renewals). The command waits for the lock, up to
 * SQLITE_BUSY_TIMEOUT_MS, instead of failing at once with "database is locked" and leaving the
 * key live.
 */
describe('a CLI change on SQLite while another process writes', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
  });
  afterAll(() => server?.stop());

  it('waits for the write lock and then revokes the key; with a busy timeout shorter than the lock it fails clearly and changes nothing', async () => {
    const env = cliEnv(server);
    const made = await runCli(['--json', 'api-keys', 'create', '--name', 'leaked', '--scope', 'write', '--reason', 'for the lock test'], env);
    expect(made.code, made.stderr).toBe(0);
    const file = server.db.url.slice('sqlite:'.length);

    // Another process holds the write lock for 3 seconds, as a long billing run does.
    const holder = new Database(file);
    holder.pragma('busy_timeout = 10000');
    const holdFor = (ms: number) => {
      holder.exec('BEGIN IMMEDIATE');
      return new Promise<void>((resolve) => setTimeout(() => { holder.exec('COMMIT'); resolve(); }, ms));
    };
    try {
      const impatient = holdFor(3000);
      const refused = await runCli(['--json', 'api-keys', 'revoke', made.json.id, '--reason', 'leaked in a chat'], { ...env, SQLITE_BUSY_TIMEOUT_MS: '200' });
      await impatient;
      expect(refused.code).not.toBe(0);
      expect(refused.code).not.toBe(70);
      expect((await dbOf(server).findOneOrFail(ApiKey, made.json.id)).revokedAt).toBeNull();

      const held = holdFor(3000);
      const revoked = await runCli(['--json', 'api-keys', 'revoke', made.json.id, '--reason', 'leaked in a chat'], env);
      await held;
      expect(revoked.code, revoked.stderr).toBe(0);
      expect((await dbOf(server).findOneOrFail(ApiKey, made.json.id)).revokedAt).not.toBeNull();
      const refusedKey = await server.api('GET', '/admin/customers/', { headers: { authorization: `Bearer ${made.json.key}` } });
      expect(refusedKey.status).toBe(401);
    } finally {
      if (holder.inTransaction) holder.exec('ROLLBACK');
      holder.close();
    }
  });
});
