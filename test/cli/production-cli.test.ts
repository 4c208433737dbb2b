import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';
import { startTestServer } from '../helpers/server.js';

/*
 * What a deploy script and an operator rely on: the version of the build, a status that fails
 * while migrations are pending, two deploy jobs migrating at once, and failures a script can
 * read with --json.
 */

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

describe('billing-admin --version', () => {
  it('prints the package version and exits 0', async () => {
    for (const flag of ['--version', '-V']) {
      const res = await runCli([flag], {});
      expect(res.code).toBe(0);
      expect(res.stdout.trim()).toBe(VERSION);
    }
  });
});

describe.each(DATABASES)('migrating for production (%s)', { timeout: 180_000 }, (kind) => {
  const made: TestDatabase[] = [];
  const fresh = async () => {
    const db = await createTestDatabase(kind);
    made.push(db);
    return db;
  };
  afterAll(async () => {
    for (const db of made) await db.drop();
  });

  it('two `db migrate` at once (two deploy jobs): both succeed, the migrations are applied once, and `db status` then exits 0', async () => {
    const db = await fresh();
    const env = { DATABASE_URL: db.url };
    if (kind === 'postgresql') {
      // The database exists (a deploy's database is made before the jobs run); its schema is empty.
      const status = await runCli(['db', 'status', '--json'], env);
      expect(status.code, status.stderr).toBe(3);
      expect(status.stderr).toContain('pending');
      expect(status.json.migrations.every((m: { status: string }) => m.status === 'pending')).toBe(true);
    }
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => runCli(['db', 'migrate', '--json'], env)));
    for (const res of [a, b, c]) expect(res.code, res.stderr + res.stdout).toBe(0);
    const applied = [a, b, c].map((r) => r.json.applied as string[]);
    const all = applied.flat();
    expect(new Set(all).size, JSON.stringify(applied)).toBe(all.length);
    expect(applied.filter((list) => list.length > 0)).toHaveLength(1);
    const status = await runCli(['db', 'status', '--json'], env);
    expect(status.code).toBe(0);
    expect(status.json.migrations.every((m: { status: string }) => m.status === 'applied')).toBe(true);
  });

  it('an empty SQLite file or an empty PostgreSQL schema: `db status` lists every migration pending and exits 3', async () => {
    const db = await fresh();
    if (kind === 'sqlite') writeFileSync(db.url.slice('sqlite:'.length), '');
    const status = await runCli(['db', 'status'], { DATABASE_URL: db.url });
    expect(status.code).toBe(3);
    expect(status.stdout).toMatch(/pending/);
  });
});

describe('--json failures are JSON on stdout, with the same exit code', () => {
  it('a refusal of the service, a usage error, and bad configuration', async () => {
    const server = await startTestServer('sqlite');
    try {
      const env = { DATABASE_URL: server.db.url };
      const missing = await runCli(['--json', 'users', 'show', 'nobody-at-all'], env);
      expect(missing.code).toBe(4);
      expect(JSON.parse(missing.stdout)).toEqual({ error: { code: 'not_found', message: expect.stringContaining('nobody-at-all') } });
      expect(missing.stderr).toContain('nobody-at-all');

      const unknown = await runCli(['--json', 'users', 'list', '--no-such-option'], env);
      expect(unknown.code).toBe(2);
      expect(JSON.parse(unknown.stdout)).toEqual({ error: { code: 'usage_error', message: expect.stringContaining('--no-such-option') } });

      const badConfig = await runCli(['--json', 'users', 'list'], { ...env, PORT: 'eighty' });
      expect(badConfig.code).toBe(2);
      expect(JSON.parse(badConfig.stdout).error.code).toBe('usage_error');

      const fine = await runCli(['--json', 'users', 'list'], env);
      expect(fine.code).toBe(0);
      expect(Array.isArray(JSON.parse(fine.stdout))).toBe(true);
    } finally {
      await server.stop();
    }
  });
});
