import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';

/** `per_unit` in the plans file: seeded like any plan field, shown by `plans list`, refused when not a boolean. */
describe.each(DATABASES)('billing-admin plans: per_unit on %s', (kind) => {
  let db: TestDatabase;
  let env: Record<string, string>;
  const dir = mkdtempSync(join(tmpdir(), 'billing-cli-per-unit-'));

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    env = { DATABASE_URL: db.url, SESSION_SECRET: 'cli-test' };
    expect((await runCli(['db', 'migrate', '--json'], env)).code).toBe(0);
  });
  afterAll(() => db?.drop());

  it('seeds per_unit, lists it, changes it on a second seed, and refuses a value that is not true or false', async () => {
    const file = join(dir, 'plans.yaml');
    writeFileSync(file, [
      '- slug: seats', '  name: Team seats', '  price: 40000', '  per_unit: true',
      '- slug: solo', '  name: Solo', '  price: 50000',
    ].join('\n'));
    const seeded = await runCli(['plans', 'seed', file, '--json'], env);
    expect(seeded.code, seeded.stderr).toBe(0);
    expect(seeded.json.created).toEqual(['seats', 'solo']);
    const list = await runCli(['plans', 'list', '--json'], env);
    expect(list.json.map((p: { slug: string; per_unit: boolean }) => [p.slug, p.per_unit])).toEqual(expect.arrayContaining([['seats', true], ['solo', false]]));
    const table = await runCli(['plans', 'list'], env);
    expect(table.stdout).toMatch(/per_unit/i);

    writeFileSync(file, ['- slug: seats', '  name: Team seats', '  price: 40000', '  per_unit: false'].join('\n'));
    expect((await runCli(['plans', 'seed', file, '--json'], env)).json.updated).toEqual(['seats']);

    writeFileSync(file, ['- slug: seats', '  name: Team seats', '  price: 40000', '  per_unit: "yes"'].join('\n'));
    const bad = await runCli(['plans', 'seed', file, '--json'], env);
    expect(bad.code).toBe(2);
    expect(bad.stdout + bad.stderr).toMatch(/per_unit.*must be true or false/);
  });
});
