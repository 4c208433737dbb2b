import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';

/*
 * `billing-admin db backup --out FILE`. The README's advice to copy ./data/billing.sqlite gave a
 * 4 KB file with no tables while 2.5 MB sat in the WAL: the command copies through SQLite's
 * backup API while the server runs and writes, checks the copy on its own, and never overwrites
 * a file. On PostgreSQL it says how to use pg_dump.
 */

describe('db backup on SQLite, while the server runs', { timeout: 120_000 }, () => {
  let server: TestServer;
  let dir: string;
  const usernames: string[] = [];

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    dir = mkdtempSync(join(tmpdir(), 'billing-backup-'));
    await server.seedPlans(STANDARD_PLANS);
    for (let i = 0; i < 3; i++) {
      const user = await server.createUser();
      usernames.push(user.username);
      const adjusted = await runCli(['wallet', 'adjust', user.username, '25000', '--reason', 'backup test credit'], { DATABASE_URL: server.db.url });
      expect(adjusted.code, adjusted.stderr).toBe(0);
    }
  });

  afterAll(async () => {
    await server?.stop();
    await server?.db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('copies while the server keeps writing; the copy is one file that passes integrity_check and wallet verify, reported as JSON with its size', async () => {
    const out = join(dir, 'billing-backup.sqlite');
    // The server's own writes go on during the copy.
    const [res] = await Promise.all([
      runCli(['db', 'backup', '--out', out, '--json'], { DATABASE_URL: server.db.url }),
      ...Array.from({ length: 5 }, () => server.createUser()),
    ]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.json).toMatchObject({
      dialect: 'sqlite',
      out,
      bytes: statSync(out).size,
      ok: true,
      checks: { integrity_check: 'ok', wallet_verify: { ok: true, wallets_checked: 3, entries_checked: 3, discrepancies: 0 }, migrations_pending: 0 },
    });
    expect(res.json.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(res.json.checks.migrations_applied).toBeGreaterThan(0);
    // Nothing left beside it: no log, no partial file.
    expect(existsSync(`${out}-wal`)).toBe(false);
    expect(readFileSync(out).length).toBe(res.json.bytes);

    // The file alone, copied elsewhere, has the data (the WAL was part of the copy).
    const alone = join(dir, 'alone.sqlite');
    copyFileSync(out, alone);
    const copy = new Database(alone, { readonly: true });
    try {
      const names = (copy.prepare('select username from users').all() as { username: string }[]).map((r) => r.username);
      for (const name of usernames) expect(names).toContain(name);
      expect((copy.prepare('select count(*) as n from wallet_transactions').get() as { n: number }).n).toBe(3);
      expect((copy.prepare('select count(*) as n from plans').get() as { n: number }).n).toBe(STANDARD_PLANS.length);
    } finally {
      copy.close();
    }
  });

  it('refuses to overwrite an existing file (exit 2, the file unchanged), and a folder that does not exist', async () => {
    const out = join(dir, 'taken.sqlite');
    writeFileSync(out, 'an older backup');
    const res = await runCli(['db', 'backup', '--out', out], { DATABASE_URL: server.db.url });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`${out} exists: a backup never overwrites a file`);
    expect(readFileSync(out, 'utf8')).toBe('an older backup');

    const json = await runCli(['--json', 'db', 'backup', '--out', out], { DATABASE_URL: server.db.url });
    expect(json.code).toBe(2);
    expect(json.json).toEqual({ error: { code: 'usage_error', message: expect.stringContaining('never overwrites') } });

    const nowhere = await runCli(['db', 'backup', '--out', join(dir, 'no-such-folder', 'b.sqlite')], { DATABASE_URL: server.db.url });
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toContain('does not exist');

    const missing = await runCli(['db', 'backup'], { DATABASE_URL: server.db.url });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--out');
  });

  it('a wallet that differs from its ledger in the database is reported in the copy: exit 1, the copy kept', async () => {
    const raw = new Database(server.db.url.slice('sqlite:'.length));
    try {
      raw.pragma('busy_timeout = 10000');
      raw.prepare("update wallets set balance = '999999.00' where id = (select id from wallets limit 1)").run();
    } finally {
      raw.close();
    }
    const out = join(dir, 'with-difference.sqlite');
    const res = await runCli(['db', 'backup', '--out', out, '--json'], { DATABASE_URL: server.db.url });
    expect(res.code).toBe(1);
    expect(res.json).toMatchObject({ ok: false, checks: { integrity_check: 'ok', wallet_verify: { ok: false, discrepancies: 1 } } });
    expect(res.stderr).toContain('did not pass its checks (wallet verify)');
    expect(existsSync(out)).toBe(true);
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('db backup on PostgreSQL', () => {
  it('exits 2 and says to use pg_dump, with the command line', async () => {
    const res = await runCli(['db', 'backup', '--out', join(tmpdir(), 'never-written.dump')], { DATABASE_URL: process.env.TEST_DATABASE_URL! });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('pg_dump --format=custom');
    expect(res.stderr).toContain('pg_restore');
    expect(res.stderr).toContain('docs/operations.md');
    expect(existsSync(join(tmpdir(), 'never-written.dump'))).toBe(false);
  });
});
