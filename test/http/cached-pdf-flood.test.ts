import type { EntityManager } from '@mikro-orm/knex';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Invoice, InvoiceLine } from '../../src/db/entities/invoice.js';
import { User } from '../../src/db/entities/user.js';
import { openOrm } from '../../src/db/orm.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { prepareDatabase, type Account } from '../helpers/reliability/accounts.js';
import { API, call, startServerProcess, type ServerProcess } from '../helpers/reliability/server-process.js';

/*
 * One customer asks for the same, already rendered, invoice PDF 200 times at once on SQLite,
 * whose driver answers without yielding the event loop: a cached answer used to pass the
 * per-user limit (it never stayed under way long enough to count) and each one still read the
 * invoice, so the flood held up everyone else. Another customer's reads are timed while the
 * flood runs, against the server in a process of its own as an operator runs it: that latency
 * bound is the point of this test.
 */

const FLOOD = 200;
/** The bystander's 95th percentile must stay under this, on a 2-core machine running the flood. */
const P95_BOUND_MS = 1_000;

interface Answer {
  status: number;
  type: string | undefined;
  retryAfter: string | undefined;
  body: Buffer;
}

/** One request on a connection of its own, as 200 clients (or one holding 200 connections) send it. */
function get(server: ServerProcess, path: string, user: Account): Promise<Answer> {
  const url = new URL(server.url);
  const authorization = `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}`;
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: `${API}${path}`, headers: { authorization }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], retryAfter: res.headers['retry-after'] as string | undefined, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

describe('a flood of one cached PDF on SQLite', () => {
  let db: TestDatabase;
  let server: ServerProcess;
  let flooder: Account;
  let bystander: Account;
  let invoiceId: string;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    ({ flooder, bystander } = await prepareDatabase(db.url, ['flooder', 'bystander']));
    const orm = await openOrm(db.url);
    try {
      const em = orm.em.fork() as EntityManager;
      const invoice = em.create(Invoice, {
        number: 'INV-2026-800001', user: em.getReference(User, flooder.id), status: 'open', billingReason: 'subscription_cycle', currency: 'IDR',
        issueDate: '2026-11-01', dueDate: '2026-11-04', subtotal: '50000.00', totalAmount: '50000.00', amountRefunded: '0.00',
      } as unknown as Invoice);
      em.create(InvoiceLine, { invoice, position: 0, description: 'Basic, November', kind: 'subscription', quantity: 1, unitAmount: '50000.00', amount: '50000.00' } as unknown as InvoiceLine);
      await em.flush();
      invoiceId = invoice.id;
    } finally {
      await orm.close(true);
    }
    server = await startServerProcess({ databaseUrl: db.url });
    const subscribed = await call(server.url, 'POST', `${API}/subscriptions/`, { basic: bystander, body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
    expect(subscribed.status, subscribed.text).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await db?.drop();
  });

  it(`${FLOOD} requests at once from one customer: the flood gets 429s, and another customer's reads keep a p95 under ${P95_BOUND_MS} ms`, async () => {
    // Rendered once, so that every request of the flood is a cache hit.
    const first = await get(server, `/invoices/${invoiceId}/pdf/`, flooder);
    expect(first.status).toBe(200);
    expect((await get(server, '/subscriptions/', bystander)).status).toBe(200);

    let flooding = true;
    const flood = Promise.all(Array.from({ length: FLOOD }, () => get(server, `/invoices/${invoiceId}/pdf/`, flooder))).finally(() => {
      flooding = false;
    });
    const waits: number[] = [];
    while (flooding || waits.length < 10) {
      const started = performance.now();
      const read = await get(server, '/subscriptions/', bystander);
      waits.push(performance.now() - started);
      expect(read.status).toBe(200);
      expect(JSON.parse(read.body.toString()).count).toBe(1);
    }
    const answers = await flood;

    const sorted = [...waits].sort((a, b) => a - b);
    const p95 = percentile(sorted, 95);
    console.log(`bystander: ${waits.length} reads, median ${percentile(sorted, 50).toFixed(0)} ms, p95 ${p95.toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms`);
    expect(p95).toBeLessThan(P95_BOUND_MS);

    const refused = answers.filter((a) => a.status === 429);
    const served = answers.filter((a) => a.status === 200);
    expect(answers.filter((a) => a.status !== 200 && a.status !== 429).map((a) => a.status)).toEqual([]);
    expect(refused.length).toBeGreaterThan(FLOOD / 2);
    expect(served.length).toBeGreaterThan(0);
    for (const answer of refused) {
      expect(answer.type).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(answer.body.toString()).code).toBe('rate_limited');
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    for (const answer of served) expect(answer.body.equals(first.body)).toBe(true);
  }, 60_000);
});
