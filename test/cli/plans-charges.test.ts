import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';

/*
 * `charges` in the plans file: seeded like any plan field with the metric's name copied in,
 * unchanged when seeded again, changed when a charge changes, shown by `plans list`; refused
 * naming `[i].charges[j]…` when a charge is not valid, names a metric that does not exist or is
 * archived, or charges one metric twice.
 */
describe.each(DATABASES)('billing-admin plans: charges on %s', { timeout: 120_000 }, (kind) => {
  let db: TestDatabase;
  let env: Record<string, string>;
  const dir = mkdtempSync(join(tmpdir(), 'billing-cli-charges-'));
  const file = join(dir, 'plans.yaml');
  const cli = (args: string[]) => runCli(['--json', ...args], env);

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    env = { DATABASE_URL: db.url, SESSION_SECRET: 'cli-test' };
    expect((await runCli(['db', 'migrate', '--json'], env)).code).toBe(0);
    for (const [code, aggregation, field] of [['api_calls', 'count'], ['storage_gb', 'max', 'gb'], ['old_metric', 'count']]) {
      const made = await cli(['metrics', 'create', '--code', code!, '--name', code === 'api_calls' ? 'API calls' : code!, '--aggregation', aggregation!, ...(field ? ['--field', field] : []), '--reason', 'test']);
      expect(made.code, made.stderr).toBe(0);
    }
    expect((await cli(['metrics', 'archive', 'old_metric', '--reason', 'test'])).code).toBe(0);
  });
  afterAll(() => db?.drop());

  const metered = (charges: string[]) => ['- slug: metered', '  name: Metered', '  price: 100000', '  charges:', ...charges].join('\n');
  const API_CALLS = [
    '    - metric: api_calls', '      model: graduated', '      properties:', '        tiers:',
    '          - { up_to: 10000, unit_amount: 0 }', '          - { up_to: null, unit_amount: 2 }',
  ];
  const STORAGE = ['    - metric: storage_gb', '      model: package', '      properties: { amount: 10000, package_size: 1000, free_units: 100 }'];

  it('seeds charges with the metric name, lists metric:model, is unchanged seeded again and updated when a charge changes', async () => {
    writeFileSync(file, `${metered([...API_CALLS, ...STORAGE])}\n- slug: flat\n  name: Flat\n  price: 50000\n`);
    const seeded = await cli(['plans', 'seed', file]);
    expect(seeded.code, seeded.stderr).toBe(0);
    expect(seeded.json.created).toEqual(['metered', 'flat']);
    const list = await cli(['plans', 'list']);
    const plan = list.json.find((p: { slug: string }) => p.slug === 'metered');
    expect(plan.charges).toEqual([
      { metric: 'api_calls', metric_name: 'API calls', model: 'graduated', properties: { tiers: [{ up_to: '10000', unit_amount: '0', flat_amount: '0.00' }, { up_to: null, unit_amount: '2', flat_amount: '0.00' }] } },
      { metric: 'storage_gb', metric_name: 'storage_gb', model: 'package', properties: { amount: '10000.00', package_size: 1000, free_units: 100 } },
    ]);
    expect(list.json.find((p: { slug: string }) => p.slug === 'flat').charges).toEqual([]);
    const table = await runCli(['plans', 'list'], env);
    expect(table.stdout).toMatch(/metered\s+Metered\s+100000\.00.*api_calls:graduated,storage_gb:package/);

    expect((await cli(['plans', 'seed', file])).json).toEqual({ created: [], updated: [], unchanged: ['metered', 'flat'] });
    writeFileSync(file, metered([...API_CALLS.slice(0, 5), '          - { up_to: null, unit_amount: 3 }']));
    expect((await cli(['plans', 'seed', file])).json.updated).toEqual(['metered']);
    writeFileSync(file, metered([...STORAGE]));
    expect((await cli(['plans', 'seed', file])).json.updated).toEqual(['metered']);
    expect((await cli(['plans', 'list'])).json.find((p: { slug: string }) => p.slug === 'metered').charges.map((c: { metric: string }) => c.metric)).toEqual(['storage_gb']);
  });

  it('refuses a file naming each wrong charge field, and writes nothing', async () => {
    const plan = (i: number, charges: string[]) => metered(charges).replace('slug: metered', `slug: refused-${i}`);
    const seedRefused = async (plans: string[][], expected: RegExp[]) => {
      writeFileSync(file, plans.map((charges, i) => plan(i, charges)).join('\n'));
      const bad = await cli(['plans', 'seed', file]);
      expect(bad.code, bad.stdout).toBe(2);
      const fields = JSON.stringify(bad.json);
      for (const field of expected) expect(fields).toMatch(field);
    };
    // Every charge is checked before anything is looked up: all the errors at once.
    await seedRefused([
      [...STORAGE, '    - metric: storage_gb', '      model: standard', '      properties: { unit_amount: 1 }'],
      ['    - metric: api_calls', '      model: standard', '      properties: { unit_amount: "-1" }'],
      ['    - metric: api_calls', '      model: package', '      properties: { amount: 100.5, package_size: 10 }'],
      ['    - metric: api_calls', '      model: volume', '      properties: { tiers: [{ up_to: 10, unit_amount: 1 }] }'],
      ['    - metric: api_calls', '      model: tiered'],
      ['    - just text'],
    ], [
      /\[0\]\.charges\[1\]\.metric.*second time/, /\[1\]\.charges\[0\]\.properties\.unit_amount/, /\[2\]\.charges\[0\]\.properties\.amount/,
      /\[3\]\.charges\[0\]\.properties\.tiers\[0\]\.up_to/, /\[4\]\.charges\[0\]\.model/, /\[5\]\.charges\[0\]/,
    ]);
    // Then the metrics: one that does not exist, one archived.
    await seedRefused([
      ['    - metric: no_such_metric', '      model: standard', '      properties: { unit_amount: 1 }'],
      ['    - metric: old_metric', '      model: standard', '      properties: { unit_amount: 1 }'],
    ], [/\[0\]\.charges\[0\]\.metric.*no billable metric/, /\[1\]\.charges\[0\]\.metric.*archived/]);
    writeFileSync(file, '- slug: refused\n  name: Refused\n  price: 1000\n  charges: { metric: api_calls }\n');
    const notList = await cli(['plans', 'seed', file]);
    expect(notList.code).toBe(2);
    expect(JSON.stringify(notList.json)).toMatch(/\[0\]\.charges/);
    expect((await cli(['plans', 'list'])).json.map((p: { slug: string }) => p.slug).filter((slug: string) => slug.startsWith('refused'))).toEqual([]);
  });
});
