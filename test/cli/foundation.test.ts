import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_BIN, runCli } from '../helpers/cli.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';

describe.each(DATABASES)('billing-admin db, users and plans on %s', (kind) => {
  let db: TestDatabase;
  let env: Record<string, string>;
  const dir = mkdtempSync(join(tmpdir(), 'billing-cli-'));

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    env = { DATABASE_URL: db.url, SESSION_SECRET: 'cli-test' };
  });
  afterAll(() => db?.drop());

  it('lists pending migrations, applies them, and then has nothing to apply', async () => {
    const before = await runCli(['db', 'status', '--json'], env);
    if (kind === 'sqlite') {
      // No file yet: only `db migrate` creates one.
      expect(before.code).toBe(5);
    } else {
      expect(before.code).toBe(3); // pending migrations: exit 3, so a deploy script can tell
      expect(before.json.migrations.every((m: { status: string }) => m.status === 'pending')).toBe(true);
    }
    const migrate = await runCli(['db', 'migrate', '--json'], env);
    expect(migrate.code).toBe(0);
    expect(migrate.json.applied.length).toBeGreaterThan(0);
    const again = await runCli(['db', 'migrate', '--json'], env);
    expect(again.json.applied).toEqual([]);
    const after = await runCli(['db', 'status'], env);
    expect(after.stdout).toMatch(/applied/);
  });

  it('runs the same from the package\'s bin (TypeScript through tsx, no build) as from the bundle the other tests run', async () => {
    const bundled = await runCli(['db', 'status', '--json'], env);
    const bin = await runCli(['db', 'status', '--json'], env, undefined, { entry: CLI_BIN });
    expect(bin.code).toBe(0);
    expect(bin.json).toEqual(bundled.json);
  });

  it('creates users (password from stdin) and lists them with the API field names', async () => {
    const created = await runCli(['users', 'create', '--reason', 'test: audited change', '--username', 'ops', '--password-stdin', '--email', 'ops@example.com', '--staff', '--json'], env, 'a long enough password\n');
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({ username: 'ops', email: 'ops@example.com', is_staff: true });
    expect(created.stdout).not.toMatch(/a long enough password/);
    const duplicate = await runCli(['users', 'create', '--reason', 'test: audited change', '--username', 'ops', '--password', 'another password'], env);
    expect(duplicate.code).toBe(3);
    expect(duplicate.stderr).toMatch(/already exists/);
    const weak = await runCli(['users', 'create', '--reason', 'test: audited change', '--username', 'weak', '--password', 'short'], env);
    expect(weak.code).toBe(2);
    const list = await runCli(['users', 'list', '--json'], env);
    expect(list.json.map((u: { username: string }) => u.username)).toEqual(['ops']);
  });

  it('seeds plans from YAML and JSON by slug; seeding twice changes nothing', async () => {
    const first = await runCli(['plans', 'seed', 'examples/plans.yaml', '--json'], env);
    expect(first.code).toBe(0);
    expect(first.json.created).toHaveLength(4);
    const second = await runCli(['plans', 'seed', 'examples/plans.yaml', '--json'], env);
    expect(second.json).toEqual({ created: [], updated: [], unchanged: first.json.created });

    const file = join(dir, 'plans.json');
    writeFileSync(file, JSON.stringify([{ slug: 'pro-monthly', name: 'Pro', price: '199000', currency: 'IDR', interval: 1, interval_unit: 'month', trial_period_days: 14 }]));
    const update = await runCli(['plans', 'seed', file, '--json'], env);
    expect(update.json.updated).toEqual(['pro-monthly']);
    const list = await runCli(['plans', 'list', '--json'], env);
    expect(list.json.find((p: { slug: string }) => p.slug === 'pro-monthly').price).toBe('199000.00');
  });

  it('archives a plan, and refuses unknown slugs and broken files with clear errors', async () => {
    const archived = await runCli(['plans', 'archive', '--reason', 'test: audited change', 'weekly-pass', '--json'], env);
    expect(archived.json.status).toBe('archived');
    expect((await runCli(['plans', 'archive', '--reason', 'test: audited change', 'nope'], env)).code).toBe(4);

    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, '- slug: Bad Slug\n  name: ""\n  price: 10.5\n  interval_unit: year\n');
    const invalid = await runCli(['plans', 'seed', bad], env);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/\[0\]\.slug/);
    expect(invalid.stderr).toMatch(/\[0\]\.price/);
    expect(invalid.stderr).toMatch(/\[0\]\.interval_unit/);
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{not json');
    expect((await runCli(['plans', 'seed', broken], env)).code).toBe(2);
    expect((await runCli(['plans', 'seed', join(dir, 'missing.yaml')], env)).code).toBe(4);
    expect((await runCli(['no-such-command'], env)).code).toBe(2);
  });
});
