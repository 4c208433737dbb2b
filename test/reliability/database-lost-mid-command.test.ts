import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from '../helpers/cli.js';
import { baseEnv } from '../helpers/reliability/server-process.js';

/*
 * docs/operations.md ("Exit codes") promises 5 when the database is unavailable, whenever that happens: before
 * the command starts (wrong-database.test.ts) or in its middle, when the server ends the
 * command's connection. Either way the operator reads one line, without a stack trace and
 * without the password of DATABASE_URL.
 */

const UNAVAILABLE = 5;
const PG_ADMIN = process.env.TEST_DATABASE_URL;

/** A refusal is one line: no stack frames, nothing but npm's and Node's own noise besides. */
function expectOneCleanLine(res: CliResult, secret?: string): void {
  const lines = res.stderr.split('\n').filter((l) => l.trim() !== '' && !/^npm warn|ExperimentalWarning|--trace-warnings/.test(l));
  expect(lines, res.stderr).toHaveLength(1);
  expect(res.stderr).not.toMatch(/^\s+at /m);
  if (secret) expect(res.stderr).not.toContain(secret);
}

describe('a stopped PostgreSQL named with a password', () => {
  it('the CLI exits 5 with one line that does not show the password', async () => {
    const secret = 'pa55-not-to-be-printed';
    const res = await runCli(['plans', 'list'], baseEnv(`postgres://billing:${secret}@127.0.0.1:1/billing`));
    expect(res.code).toBe(UNAVAILABLE);
    expect(res.stderr).toMatch(/database unavailable/);
    expectOneCleanLine(res, secret);
  });
});

describe.runIf(PG_ADMIN)('a PostgreSQL connection ended in the middle of a command', () => {
  const name = `billing_lost_${process.pid}_${Date.now()}`;
  const url = (() => {
    const u = new URL(PG_ADMIN ?? 'postgres://localhost/x');
    u.pathname = `/${name}`;
    return u.toString();
  })();
  const admin = () => new pg.Client({ connectionString: PG_ADMIN });

  beforeAll(async () => {
    const migrated = await runCli(['db', 'migrate'], baseEnv(url));
    expect(migrated.code, migrated.stderr).toBe(0);
  }, 120_000);
  afterAll(async () => {
    const client = admin();
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.end();
  });

  it('the CLI exits 5 with one line, no stack trace', async () => {
    // The command is held on a table lock, so it is surely mid-way (its schema check done, its
    // query sent) when its connection is terminated, as an administrator or a failover would.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE users IN ACCESS EXCLUSIVE MODE');
    const command = runCli(['users', 'list'], baseEnv(url));
    const watcher = admin();
    await watcher.connect();
    try {
      let terminated = 0;
      for (let i = 0; i < 300 && terminated === 0; i++) {
        const waiting = await watcher.query(
          `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock' AND pid <> $2`,
          [name, (holder as unknown as { processID: number }).processID],
        );
        for (const row of waiting.rows) terminated += (await watcher.query('SELECT pg_terminate_backend($1)', [row.pid])).rowCount ?? 0;
        if (terminated === 0) await new Promise((r) => setTimeout(r, 100));
      }
      expect(terminated).toBeGreaterThan(0);
      const res = await command;
      expect(res.code, res.stderr).toBe(UNAVAILABLE);
      expect(res.stderr).toMatch(/database unavailable/);
      expect(res.stdout).toBe('');
      expectOneCleanLine(res);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
      await watcher.end();
    }
  });
});
