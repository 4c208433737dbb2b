import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Payment } from '../../src/db/entities/payment.js';
import { Topup } from '../../src/db/entities/topup.js';
import type { SimTransaction } from '../../src/simulator/index.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type HttpResult, type TestServer } from '../helpers/server.js';
import { dbOf, fundWallet, type TestUser } from '../helpers/subscriptions.js';

/*
 * A database that cannot take a write (a full disk, or a statement the server refuses for lack of
 * space) is a 503 with Retry-After, one warning line that names the cause, no SQL or customer
 * value in any log line, and no order left payable at the gateway for a request answered with an
 * error. When space comes back, the same requests succeed and the wallets add up.
 *
 * SQLite is filled with `PRAGMA max_page_count` on the server's own connection (its pool has
 * one): no writes beyond that many pages, exactly what a full file system answers
 * (SQLITE_FULL, "database or disk is full").
 */

/** Every log line of the server: its logger's lines and anything written to stderr meanwhile. */
function captureLogs() {
  const lines: { level: string; text: string }[] = [];
  const keep = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, text: JSON.stringify({ level, message, ...fields }) });
  const logger = { info: keep('info'), warn: keep('warn'), error: keep('error') };
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    for (const line of text.split('\n').filter(Boolean)) lines.push({ level: /"level":"(\w+)"/.exec(line)?.[1] ?? 'stderr', text: line });
    return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
  return { lines, logger, restore: () => void (process.stderr.write = write) };
}

const SQL = /\b(insert\s+into|update\s+[`"]?\w+[`"]?\s+set|select\s[\s\S]*\sfrom|delete\s+from)\b/i;
/** An amount as the request sent it, or in minor units as a statement would carry it. */
const amountPattern = (amount: number) => new RegExp(`(?<!\\d)${amount}(00)?(?!\\d)`);
const LIVE = new Set(['pending', 'capture', 'authorize', 'settlement']);

function expectUnavailable(res: HttpResult): void {
  expect(res.status, res.text).toBe(503);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(res.body).toMatchObject({ status: 503, code: 'service_unavailable' });
  expect(res.text).not.toMatch(SQL);
}

/** Order ids a successful answer gave the client. */
function ordersOf(res: HttpResult): string[] {
  if (res.status >= 300 || typeof res.body !== 'object' || res.body === null) return [];
  return [res.body.order_id, res.body.payment?.order_id].filter((id): id is string => typeof id === 'string');
}

/** Orders the gateway would still take money for (or has) that no successful answer named. */
function strayOrders(server: TestServer, answered: Set<string>): SimTransaction[] {
  return server.running.billing.simulator!.transactions().filter((t) => LIVE.has(t.transaction_status) && !answered.has(t.order_id));
}

describe('a full disk on SQLite, under concurrent writes', () => {
  let server: TestServer;
  let staff: TestUser;
  let logs: ReturnType<typeof captureLogs>;
  const suffix = `${process.pid}${Date.now() % 100000}`;
  const customers: (TestUser & { email: string })[] = [];

  beforeAll(async () => {
    logs = captureLogs();
    server = await startTestServer('sqlite', {
      logger: logs.logger,
      // Notifications refused while the disk is full are sent again soon after.
      env: { SIMULATOR_NOTIFICATION_RETRY_MS: '300,600,1200,2400,4800' },
    });
    await server.seedPlans(STANDARD_PLANS);
    staff = await server.createUser({ username: `disk_staff_${suffix}`, isStaff: true });
    for (let i = 0; i < 8; i++) {
      const username = `disk_cust${i}_${suffix}`;
      const email = `${username}@mailbox.test`;
      customers.push({ ...(await server.createUser({ username, email })), email });
    }
    for (const c of customers.slice(0, 4)) await fundWallet(server, c, '900000');
  });
  afterAll(async () => {
    logs?.restore();
    await server?.stop();
  });

  it('answers 503 with Retry-After, logs one clean warning per failure, leaves no order behind, and recovers when space comes back', async () => {
    const answered = new Set<string>();
    // Before the disk fills: a pending subscription for the customers without funds, whose
    // invoice a charge pays; the funded ones subscribe from their wallet meanwhile.
    const subscriptions: string[] = [];
    for (const c of customers.slice(4)) {
      const res = await server.api('POST', '/subscriptions/', { auth: c, body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
      expect(res.status, res.text).toBe(201);
      ordersOf(res).forEach((o) => answered.add(o));
      subscriptions.push(res.body.subscription.id);
    }

    // Each request's own values, to look for in the logs.
    const amounts = customers.map((_c, i) => ({ bank: 24681 + i * 11, card: 35791 + i * 13, adjust: 46813 + i * 17 }));
    const requests = customers.map((c, i) => [
      () => server.api('POST', '/topups/', { auth: c, body: { amount: amounts[i].bank, payment_type: 'bank_transfer', bank: 'bni' } }),
      () => server.api('POST', '/topups/', { auth: c, body: { amount: amounts[i].card, payment_type: 'credit_card', token: 'sim-card-accept-1' } }),
      () => server.api('POST', `/admin/wallets/${c.id}/adjust/`, { auth: staff, body: { amount: String(amounts[i].adjust), reason: 'goodwill for the outage' } }),
      i < 4
        ? () => server.api('POST', '/subscriptions/', { auth: c, body: { plan_id: 'pro-monthly', payment_type: 'wallet' } })
        : () => server.api('POST', '/payments/charge/', { auth: c, body: { subscription_id: subscriptions[i - 4] } }),
    ]).flat();

    const em = dbOf(server);
    const [{ page_count: pages }] = await em.execute('pragma page_count');
    await em.execute(`pragma max_page_count = ${Number(pages) + 4}`);
    const linesBefore = logs.lines.length;

    const first = await Promise.all(requests.map((send) => send()));
    const failed = first.map((res, i) => ({ res, i })).filter(({ res }) => res.status >= 300);
    for (const res of first) ordersOf(res).forEach((o) => answered.add(o));
    // The disk did fill: some requests failed, and every failure is the same retryable answer.
    expect(failed.length).toBeGreaterThan(0);
    for (const { res } of failed) expectUnavailable(res);

    // Every order the gateway holds was named in a successful answer: the others were canceled.
    expect(strayOrders(server, answered).map((t) => `${t.order_id} ${t.transaction_status}`)).toEqual([]);

    // One warning line per failed request, naming the cause; no SQL, no customer's values, anywhere.
    const during = logs.lines.slice(linesBefore);
    const warnings = during.filter((l) => l.text.includes('"request failed"'));
    expect(warnings).toHaveLength(failed.length);
    for (const w of warnings) expect(w.text).toMatch(/service_unavailable: database unavailable: the disk is full \(SQLITE_FULL/);
    expect(during.filter((l) => l.level === 'error').map((l) => l.text.slice(0, 300))).toEqual([]);
    const values: RegExp[] = [
      ...customers.flatMap((c) => [c.username, c.email]).map((text) => new RegExp(text.replace(/[.]/g, '\\.'))),
      ...amounts.flatMap((a) => [a.bank, a.card, a.adjust]).map(amountPattern),
    ];
    const expectCleanLogs = () => {
      for (const line of logs.lines) {
        expect(line.text, line.text.slice(0, 300)).not.toMatch(SQL);
        for (const value of values) expect(line.text, `${value} in a log line`).not.toMatch(value);
      }
    };
    expectCleanLogs();

    // Space comes back: the requests that failed succeed as sent.
    await em.execute('pragma max_page_count = 1073741823');
    const again = await Promise.all(failed.map(({ i }) => requests[i]()));
    for (const res of again) {
      expect(res.status, res.text).toBeLessThan(300);
      ordersOf(res).forEach((o) => answered.add(o));
    }

    // What was committed before a write failed is closed by what the gateway says of its order.
    const sync = await runCli(['payments', 'sync', '--json'], cliEnv(server));
    expect(sync.code, sync.stderr).toBe(0);
    const pendingTopups = await dbOf(server).find(Topup, { status: 'pending' });
    const pendingPayments = await dbOf(server).find(Payment, { status: 'pending' });
    const sim = server.running.billing.simulator!;
    for (const row of [...pendingTopups, ...pendingPayments]) expect(sim.transaction(row.orderId)?.transaction_status, row.orderId).toBe('pending');
    expect(strayOrders(server, answered)).toEqual([]);
    // A top-up credited the wallet only where the gateway holds its money (a voided capture
    // heard late credits nothing).
    for (const topup of await dbOf(server).find(Topup, { status: 'success' })) {
      expect(['capture', 'settlement'], topup.orderId).toContain(sim.transaction(topup.orderId)?.transaction_status);
    }
    expectCleanLogs();

    const verify = await runCli(['wallet', 'verify', '--json'], cliEnv(server));
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    expect(verify.json.ok).toBe(true);
  });
});

/*
 * PostgreSQL: the server out of space answers `53100 disk_full` to whatever needs a new page. A
 * trigger raises it on every webhook log row, the write that records what the gateway answered
 * a charge: the order exists at the gateway by then, and the request must cancel it.
 */
describe.skipIf(!DATABASES.includes('postgresql'))('a PostgreSQL server out of disk space', () => {
  let server: TestServer;
  let customer: TestUser & { email: string };
  let logs: ReturnType<typeof captureLogs>;
  const suffix = `${process.pid}${Date.now() % 100000}`;

  beforeAll(async () => {
    logs = captureLogs();
    server = await startTestServer('postgresql', { logger: logs.logger });
    await server.seedPlans(STANDARD_PLANS);
    const username = `disk_pg_${suffix}`;
    customer = { ...(await server.createUser({ username, email: `${username}@mailbox.test` })), email: `${username}@mailbox.test` };
  });
  afterAll(async () => {
    logs?.restore();
    await server?.stop();
  });

  it('answers 503 naming the full disk, cancels the orders it made, and recovers when space comes back', async () => {
    const em = dbOf(server);
    await em.execute(`create function test_disk_full() returns trigger language plpgsql as $$
      begin raise exception 'could not extend file "base/16384/16385": No space left on device' using errcode = '53100'; end $$`);
    await em.execute(`create trigger test_disk_full before insert on webhook_logs for each row execute function test_disk_full()`);
    const topup = () => server.api('POST', '/topups/', { auth: customer, body: { amount: 57913, payment_type: 'bank_transfer', bank: 'bni' } });
    const subscribe = () => server.api('POST', '/subscriptions/', { auth: customer, body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
    const linesBefore = logs.lines.length;

    const refused = [await topup(), await subscribe()];
    for (const res of refused) expectUnavailable(res);
    const sim = server.running.billing.simulator!;
    // Both orders were made, then canceled when their answers could not be recorded.
    expect(sim.transactions().map((t) => t.transaction_status)).toEqual(['cancel', 'cancel']);
    const warnings = logs.lines.slice(linesBefore).filter((l) => l.text.includes('"request failed"'));
    expect(warnings).toHaveLength(2);
    for (const w of warnings) expect(w.text).toMatch(/database unavailable: the disk is full \(53100: could not extend file/);

    await em.execute(`drop trigger test_disk_full on webhook_logs`);
    const answered = new Set<string>();
    for (const res of [await topup(), await subscribe()]) {
      expect(res.status, res.text).toBe(201);
      ordersOf(res).forEach((o) => answered.add(o));
    }
    expect(strayOrders(server, answered)).toEqual([]);
    const sync = await runCli(['payments', 'sync', '--json'], cliEnv(server));
    expect(sync.code, sync.stderr).toBe(0);
    // The top-up refused with a 503 is closed by its canceled order.
    const topups = await dbOf(server).find(Topup, { user: customer.id }, { orderBy: { createdAt: 'asc' } });
    expect(topups.map((t) => t.status)).toEqual(['failed', 'pending']);
    const verify = await runCli(['wallet', 'verify', '--json'], cliEnv(server));
    expect(verify.json?.ok, verify.stdout + verify.stderr).toBe(true);

    for (const line of logs.lines) {
      expect(line.text).not.toMatch(SQL);
      for (const value of [customer.username, customer.email, amountPattern(57913)]) expect(line.text).not.toMatch(value);
    }
  });
});

/*
 * The order of a refused request is canceled at the gateway; a card order may have been
 * captured first, and that capture's notification, refused while the database could not write,
 * comes again after the cancel's. It is older news: the capture was voided, no money arrived.
 */
describe.each(DATABASES)('a voided card capture heard after its cancel (%s)', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
  });
  afterAll(() => server?.stop());

  it('leaves the top-up failed and credits nothing', async () => {
    const customer = await server.createUser();
    const res = await server.api('POST', '/topups/', { auth: customer, body: { amount: 40000, payment_type: 'credit_card', token: 'tok-needs-3ds' } });
    expect(res.status, res.text).toBe(201);
    const orderId: string = res.body.order_id;
    const sim = server.running.billing.simulator!;
    sim.holdNotifications(orderId);
    await sim.act(orderId, 'capture');
    await sim.act(orderId, 'cancel');
    await sim.releaseNotifications({ orderId, order: 'newest_first' });

    expect(sim.transaction(orderId)?.transaction_status).toBe('cancel');
    const topup = await server.api('GET', `/topups/${res.body.id}/`, { auth: customer });
    expect(topup.body.status).toBe('failed');
    expect((await server.api('GET', '/wallet/me/', { auth: customer })).body.balance).toBe('0.00');
  });
});
