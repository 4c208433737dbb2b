import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { API_ROOT } from '../../src/http/api.js';
import { quietLogger } from '../../src/logger.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase, DATABASES, type DatabaseKind, type TestDatabase } from '../helpers/database.js';
import { pdfText } from '../helpers/pdf.js';
import { checkoutRelease, type Release, type ReleaseServer } from '../helpers/previous-release.js';

/*
 * docs/operations.md, 'Upgrades and rolling deploys': a database made by the previous release is migrated by this
 * one while the previous release keeps running and writing (the rolling upgrade the docs
 * describe: `db migrate` first, then the processes replaced one at a time). Every row is kept,
 * the events the previous release writes during that window are chained (docs/audit.md),
 * `audit verify` and `wallet verify` pass, and the invoices' PDFs say what they said.
 */

/** The release before the audit trail's hash chain. */
const PREVIOUS_RELEASE = '0fadaba';

const PASSWORD = 'correct horse battery';
const basic = (username: string) => `Basic ${Buffer.from(`${username}:${PASSWORD}`).toString('base64')}`;

interface Answer {
  status: number;
  body: any;
  text: string;
}

async function call(base: string, method: string, path: string, opts: { user?: string; body?: unknown; raw?: boolean } = {}): Promise<Answer & { bytes: Buffer }> {
  const headers: Record<string, string> = {};
  if (opts.user) headers.authorization = basic(opts.user);
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const bytes = Buffer.from(await res.arrayBuffer());
  const text = bytes.toString('utf8');
  let body: unknown = text;
  if (/json/.test(res.headers.get('content-type') ?? '') && text) body = JSON.parse(text);
  return { status: res.status, body, text, bytes };
}

/** Rows per table (the migrator's own bookkeeping left out). */
async function rowCounts(db: TestDatabase): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  if (db.kind === 'sqlite') {
    const file = new Database(db.url.slice('sqlite:'.length), { readonly: true });
    try {
      const tables = file.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name <> 'mikro_orm_migrations'").all() as { name: string }[];
      for (const { name } of tables) counts[name] = (file.prepare(`select count(*) as n from "${name}"`).get() as { n: number }).n;
    } finally {
      file.close();
    }
    return counts;
  }
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const tables = await client.query<{ name: string }>("select table_name as name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' and table_name <> 'mikro_orm_migrations'");
    for (const { name } of tables.rows) counts[name] = Number((await client.query(`select count(*) as n from "${name}"`)).rows[0].n);
  } finally {
    await client.end();
  }
  return counts;
}

describe.each(DATABASES)('a rolling upgrade from the previous release (%s)', { timeout: 300_000 }, (kind: DatabaseKind) => {
  let release: Release;
  let db: TestDatabase;
  let old: ReleaseServer | null = null;
  let current: RunningServer | null = null;
  const env = () => ({ DATABASE_URL: db.url, SESSION_SECRET: 'upgrade-test-secret', TEST_SCRYPT_N: '1024', BILLING_OPERATOR: 'ops-oncall' });
  const cli = (args: string[]) => runCli(['--json', ...args], env());

  beforeAll(async () => {
    release = checkoutRelease(PREVIOUS_RELEASE);
    db = await createTestDatabase(kind);
  });
  afterAll(async () => {
    await old?.stop();
    await current?.stop();
    await db?.drop();
    release?.remove();
  });

  it('keeps every row, chains what the previous release writes after db migrate, and audit verify, wallet verify and the old PDFs hold', async () => {
    // The previous release makes the database: its migrations, its catalogue, its users, then its server.
    const made = await release.cli(['db', 'migrate'], env());
    expect(made.code, made.stderr).toBe(0);
    const plans = join(release.dir, 'upgrade-plans.json');
    writeFileSync(plans, JSON.stringify([
      { slug: 'basic-monthly', name: 'Basic', description: 'Basic monthly plan', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 1 },
      { slug: 'pro-monthly', name: 'Pro', description: 'Pro monthly plan for teams', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 2 },
    ]));
    expect((await release.cli(['plans', 'seed', plans], env())).code).toBe(0);
    for (const [username, staff] of [['alice', false], ['budi', false], ['staff1', true]] as const) {
      const created = await release.cli(['users', 'create', '--username', username, '--email', `${username}@example.com`, '--password-stdin', ...(staff ? ['--staff'] : [])], env(), PASSWORD);
      expect(created.code, created.stderr).toBe(0);
    }
    old = await release.startServer(env());
    const oldApi = (method: string, path: string, opts?: { user?: string; body?: unknown }) => call(old!.url, method, `${API_ROOT}${path}`, opts);
    const settle = async (orderId: string) => expect((await call(old!.url, 'POST', `/_simulator/v2/${orderId}/settle`, { body: {} })).status).toBe(200);

    // Subscriptions paid at the gateway, a wallet topped up and adjusted by staff: invoices, payments, ledger, audit events.
    for (const [username, plan] of [['alice', 'basic-monthly'], ['budi', 'pro-monthly']]) {
      const subscribed = await oldApi('POST', '/subscriptions/', { user: username, body: { plan_id: plan, payment_type: 'bank_transfer' } });
      expect(subscribed.status, subscribed.text).toBe(201);
      await settle(subscribed.body.payment.order_id);
    }
    const topup = await oldApi('POST', '/topups/', { user: 'alice', body: { amount: 100000, payment_type: 'bank_transfer' } });
    expect(topup.status, topup.text).toBe(201);
    await settle(topup.body.order_id ?? topup.body.payment?.order_id);
    const adjusted = await oldApi('POST', '/admin/wallets/alice/adjust/', { user: 'staff1', body: { amount: '5000.00', reason: 'Ticket 1: goodwill' } });
    expect(adjusted.status, adjusted.text).toBe(200);
    expect((await oldApi('GET', '/wallet/me/', { user: 'alice' })).body.balance).toBe('105000.00');

    const invoices: { user: string; id: string; text: string }[] = [];
    for (const user of ['alice', 'budi']) {
      const list = await oldApi('GET', '/invoices/', { user });
      expect(list.body.count).toBeGreaterThan(0);
      for (const invoice of list.body.results) {
        const pdf = await call(old.url, 'GET', `${API_ROOT}/invoices/${invoice.id}/pdf/`, { user });
        expect(pdf.status).toBe(200);
        invoices.push({ user, id: invoice.id, text: await pdfText(pdf.bytes) });
      }
    }
    const before = await rowCounts(db);

    // This release migrates the database while the previous release keeps serving.
    const migrated = await cli(['db', 'migrate']);
    expect(migrated.code, migrated.stderr).toBe(0);
    const afterMigrate = await rowCounts(db);
    for (const [table, n] of Object.entries(before)) expect({ table, n: afterMigrate[table] }).toEqual({ table, n });

    // The window: the previous release still writes (a staff adjustment, a user made with its CLI).
    const windowAdjust = await oldApi('POST', '/admin/wallets/alice/adjust/', { user: 'staff1', body: { amount: '-2000.00', reason: 'Ticket 2: corrected' } });
    expect(windowAdjust.status, windowAdjust.text).toBe(200);
    const windowUser = await release.cli(['users', 'create', '--username', 'citra', '--email', 'citra@example.com', '--password-stdin'], env(), PASSWORD);
    expect(windowUser.code, windowUser.stderr).toBe(0);
    await old.stop();
    old = null;

    // This release takes over: its server and its CLI write too.
    current = await startServer(loadConfig({ NODE_ENV: 'test', ...env(), PORT: '0', LOG_REQUESTS: 'false', BILLING_SCHEDULER_INTERVAL: '0' }, { migrateOnStart: false }), { logger: quietLogger });
    const api = (method: string, path: string, opts?: { user?: string; body?: unknown }) => call(current!.url, method, `${API_ROOT}${path}`, opts);
    const adjustedNow = await api('POST', '/admin/wallets/alice/adjust/', { user: 'staff1', body: { amount: '1000.00', reason: 'Ticket 3: after the upgrade' } });
    expect(adjustedNow.status, adjustedNow.text).toBe(200);
    expect((await cli(['wallet', 'adjust', 'budi', '500', '--reason', 'Ticket 4: goodwill'])).code).toBe(0);
    expect((await api('GET', '/wallet/me/', { user: 'alice' })).body.balance).toBe('104000.00');

    const audit = await cli(['audit', 'verify']);
    expect(audit.code, audit.stdout + audit.stderr).toBe(0);
    const counts = await rowCounts(db);
    expect(audit.json).toMatchObject({ ok: true, broken: null, events_checked: counts.audit_events, head: { position: counts.audit_events } });
    const wallets = await cli(['wallet', 'verify']);
    expect(wallets.code, wallets.stdout + wallets.stderr).toBe(0);

    // Nothing made before the upgrade is gone, and each old invoice's PDF says what it said.
    for (const [table, n] of Object.entries(before)) expect(counts[table], table).toBeGreaterThanOrEqual(n);
    for (const invoice of invoices) {
      const pdf = await api('GET', `/invoices/${invoice.id}/pdf/`, { user: invoice.user });
      expect(pdf.status).toBe(200);
      expect(await pdfText(pdf.bytes), invoice.id).toBe(invoice.text);
    }
  });
});
