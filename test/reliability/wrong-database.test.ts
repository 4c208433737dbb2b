import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrationNames as postgresqlMigrations } from '../../migrations/postgresql/names.js';
import { migrationNames as sqliteMigrations } from '../../migrations/sqlite/names.js';
import { runCli } from '../helpers/cli.js';
import { baseEnv, PROJECT_ROOT } from '../helpers/reliability/server-process.js';

/*
 * An operator's wrong or missing database, against the real CLI and the real server process:
 * each refuses with one line and the documented exit status (docs/operations.md, "Exit codes": 5 the database
 * unavailable or behind, 2 bad configuration), and nothing — no PostgreSQL database, no SQLite
 * file or folder — is created by anything but `db migrate`.
 */

const UNAVAILABLE = 5;
const BAD_CONFIGURATION = 2;
/** Nothing listens on port 1: it stands for a PostgreSQL server that is stopped. */
const STOPPED_POSTGRES = 'postgres://postgres@127.0.0.1:1/billing';
const PG_ADMIN = process.env.TEST_DATABASE_URL;

interface Ended {
  code: number | null;
  output: string;
}

/** Runs the server until it exits by itself; one that starts listening is stopped and reported. */
function serverUntilExit(env: Record<string, string>, cwd = PROJECT_ROOT): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'src/main.ts')], {
      cwd,
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', LOG_REQUESTS: 'false', PORT: '0', HOST: '127.0.0.1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const onData = (d: Buffer) => {
      output += d.toString();
      if (/listening on/.test(output)) {
        child.kill('SIGKILL');
        reject(new Error(`the server started although it should have refused:\n${output}`));
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, output }));
  });
}

/** The lines a refusal printed that are not npm's or Node's own noise. */
function refusalLines(text: string): string[] {
  return text.split('\n').filter((l) => l.trim() !== '' && !/^npm warn|ExperimentalWarning|--trace-warnings/.test(l));
}

async function pgDatabaseExists(name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_ADMIN });
  await client.connect();
  try {
    return ((await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount ?? 0) > 0;
  } finally {
    await client.end();
  }
}

async function pgAdmin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_ADMIN });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function pgUrl(database: string): string {
  const url = new URL(PG_ADMIN!);
  url.pathname = `/${database}`;
  return url.toString();
}

const env = (databaseUrl: string) => ({ ...baseEnv(databaseUrl) });

describe('a stopped PostgreSQL', () => {
  it('the CLI exits 5 with one line naming the database as unavailable', async () => {
    const res = await runCli(['users', 'list'], env(STOPPED_POSTGRES));
    expect(res.code).toBe(UNAVAILABLE);
    expect(refusalLines(res.stderr)).toHaveLength(1);
    expect(res.stderr).toMatch(/database unavailable/);
    expect(res.stdout).toBe('');
  });

  it('the server refuses to start, exit 5, one line', async () => {
    const ended = await serverUntilExit(env(STOPPED_POSTGRES));
    expect(ended.code).toBe(UNAVAILABLE);
    expect(refusalLines(ended.output)).toHaveLength(1);
    expect(ended.output).toMatch(/database unavailable/);
  });

  it('even a server told to migrate on start', async () => {
    const ended = await serverUntilExit({ ...env(STOPPED_POSTGRES), MIGRATE_ON_START: 'true' });
    expect(ended.code).toBe(UNAVAILABLE);
  });
});

describe('a malformed DATABASE_URL', () => {
  const malformed = ['postgres://postgres@127.0.0.1:notaport/billing', 'postgres://postgres@127.0.0.1:5432', 'postgres:///billing', 'mysql://root@127.0.0.1/billing', 'sqlite:'];

  it.each(malformed)('%s: the CLI exits 2 naming DATABASE_URL', async (url) => {
    const res = await runCli(['users', 'list'], env(url));
    expect(res.code).toBe(BAD_CONFIGURATION);
    expect(refusalLines(res.stderr)).toHaveLength(1);
    expect(res.stderr).toMatch(/DATABASE_URL/);
  });

  it.each(malformed)('%s: the server exits 2 naming DATABASE_URL', async (url) => {
    const ended = await serverUntilExit(env(url));
    expect(ended.code).toBe(BAD_CONFIGURATION);
    expect(refusalLines(ended.output)).toHaveLength(1);
    expect(ended.output).toMatch(/DATABASE_URL/);
  });
});

describe('a SQLite path that does not exist', () => {
  const dir = mkdtempSync(join(tmpdir(), 'billing-wrong-db-'));
  const missing = join(dir, 'mistyped-folder', 'billing.sqlite');

  it('the CLI exits 5 and creates neither the folder nor the file', async () => {
    const res = await runCli(['plans', 'list'], env(`sqlite:${missing}`));
    expect(res.code).toBe(UNAVAILABLE);
    expect(res.stderr).toMatch(/db migrate/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('the server (not told to migrate) exits 5 and creates nothing', async () => {
    const ended = await serverUntilExit(env(`sqlite:${missing}`));
    expect(ended.code).toBe(UNAVAILABLE);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('`db migrate` is what creates it', async () => {
    const res = await runCli(['db', 'migrate', '--json'], env(`sqlite:${missing}`));
    expect(res.code).toBe(0);
    expect(res.json.applied).toEqual([...sqliteMigrations]);
    expect(existsSync(missing)).toBe(true);
    expect((await runCli(['plans', 'list', '--json'], env(`sqlite:${missing}`))).code).toBe(0);
  });

  it('the default path resolves from the project root: run from a subfolder, the CLI creates nothing there', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'billing-cwd-'));
    const { DATABASE_URL: _unset, ...withoutUrl } = env('unused');
    const res = await runCli(['plans', 'list'], withoutUrl, undefined, { cwd });
    expect(readdirSync(cwd)).toEqual([]);
    const defaultFile = join(PROJECT_ROOT, 'data', 'billing.sqlite');
    if (!existsSync(defaultFile)) {
      expect(res.code).toBe(UNAVAILABLE);
      expect(res.stderr).toContain(defaultFile);
    }
  });
});

describe('an unmigrated schema', () => {
  it('SQLite: the CLI exits 5 naming the command; the server exits 5 naming the pending migrations and the command', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'billing-unmigrated-')), 'billing.sqlite');
    writeFileSync(file, '');
    const url = `sqlite:${file}`;
    const res = await runCli(['users', 'list'], env(url));
    expect(res.code).toBe(UNAVAILABLE);
    expect(res.stderr).toMatch(/pending migration/);
    expect(res.stderr).toContain('billing-admin db migrate');
    const ended = await serverUntilExit(env(url));
    expect(ended.code).toBe(UNAVAILABLE);
    expect(refusalLines(ended.output)).toHaveLength(1);
    expect(ended.output).toContain(sqliteMigrations[0]);
    expect(ended.output).toContain('billing-admin db migrate');
  });

  it.runIf(PG_ADMIN)('PostgreSQL: the same refusals', async () => {
    const name = `billing_unmigrated_${process.pid}_${Date.now()}`;
    await pgAdmin(`CREATE DATABASE ${name}`);
    try {
      const res = await runCli(['users', 'list'], env(pgUrl(name)));
      expect(res.code).toBe(UNAVAILABLE);
      expect(res.stderr).toContain('billing-admin db migrate');
      const ended = await serverUntilExit(env(pgUrl(name)));
      expect(ended.code).toBe(UNAVAILABLE);
      expect(ended.output).toContain(postgresqlMigrations[0]);
      expect(ended.output).toContain('billing-admin db migrate');
    } finally {
      await pgAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  });
});

describe.runIf(PG_ADMIN)('a PostgreSQL database that does not exist', () => {
  const name = `billing_missing_${process.pid}_${Date.now()}`;
  afterAll(() => pgAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));

  it('the CLI exits 5 and does not create it', async () => {
    const res = await runCli(['users', 'list'], env(pgUrl(name)));
    expect(res.code).toBe(UNAVAILABLE);
    expect(res.stderr).toMatch(/does not exist/);
    expect(await pgDatabaseExists(name)).toBe(false);
  });

  it('the server exits 5 and does not create it', async () => {
    const ended = await serverUntilExit(env(pgUrl(name)));
    expect(ended.code).toBe(UNAVAILABLE);
    expect(await pgDatabaseExists(name)).toBe(false);
  });

  it('`db migrate` creates and migrates it', async () => {
    const res = await runCli(['db', 'migrate', '--json'], env(pgUrl(name)));
    expect(res.code).toBe(0);
    expect(res.json.applied).toEqual([...postgresqlMigrations]);
    expect(await pgDatabaseExists(name)).toBe(true);
  });
});
