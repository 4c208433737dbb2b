import { describe, expect, it } from 'vitest';
import { Invoice } from '../../../src/db/entities/invoice.js';
import { Payment } from '../../../src/db/entities/payment.js';
import { openOrm } from '../../../src/db/orm.js';
import { runBilling } from '../../../src/services/billing/run-billing.js';
import { runCli } from '../../helpers/cli.js';
import { startBilling, type BillingHarness } from '../../helpers/billing.js';

async function population(h: BillingHarness, wallets: number, transfers: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < wallets; i += 1) {
    const user = await h.user();
    await h.fund(user, '200000');
    ids.push((await h.subscribe(user, 'basic-monthly', 'wallet')).id);
  }
  for (let i = 0; i < transfers; i += 1) {
    const user = await h.user();
    const sub = await h.subscribe(user, 'basic-monthly', 'bank_transfer');
    await h.server.running.billing.simulator!.act((await h.payments(sub.id))[0].orderId, 'settle');
    ids.push(sub.id);
  }
  return ids;
}

async function expectEachRenewedOnce(h: BillingHarness, ids: string[], invoicesEach: number): Promise<void> {
  const em = h.server.running.billing.orm.em.fork();
  for (const id of ids) {
    const cycles = await em.count(Invoice, { subscription: id, billingReason: 'subscription_cycle' });
    expect(cycles, id).toBe(invoicesEach - 1);
    expect(await em.count(Payment, { subscription: id }), id).toBe(invoicesEach);
  }
  const numbers = (await em.find(Invoice, {}, { orderBy: { number: 'asc' } })).map((i) => i.number);
  expect(new Set(numbers).size).toBe(numbers.length);
  const seq = numbers.filter((n) => n.startsWith('INV-2027-')).map((n) => Number(n.slice(-6)));
  expect(seq).toEqual(seq.map((_, i) => i + 1));
}

// NOTE: PostgreSQL only: SQLite has one writer, so parallel runs there simply take turns.
describe.skipIf(!process.env.TEST_DATABASE_URL)('parallel billing runs on PostgreSQL', () => {
  it('two runs with their own connections split the due subscriptions; each is renewed exactly once', async () => {
    const h = await startBilling('postgresql');
    const orms = [await openOrm(h.server.db.url), await openOrm(h.server.db.url)];
    try {
      const ids = await population(h, 80, 20);
      const { config, gateway } = h.server.running.billing;
      const at = new Date('2027-02-28T10:00:00.000Z');
      const reports = await Promise.all(orms.map((orm) => runBilling({ em: orm.em.fork(), config, gateway, clock: h.clock }, { at, chunkSize: 10 })));
      expect(reports.flatMap((r) => r.errors)).toEqual([]);
      expect(reports[0].renewed + reports[1].renewed).toBe(100);
      expect(reports[0].charged + reports[1].charged).toBe(80);
      expect(reports[0].pending + reports[1].pending).toBe(20);
      // Both took a share (SKIP LOCKED), rather than one waiting for the other.
      expect(reports[0].renewed).toBeGreaterThan(0);
      expect(reports[1].renewed).toBeGreaterThan(0);
      await expectEachRenewedOnce(h, ids, 2);
    } finally {
      for (const orm of orms) await orm.close(true);
      await h.stop();
    }
  }, 240_000);

  it('two billing-admin processes at once: every due subscription renewed exactly once', async () => {
    const h = await startBilling('postgresql');
    try {
      const ids = await population(h, 60, 10);
      const env = { DATABASE_URL: h.server.db.url, BILLING_URL: h.server.url };
      const args = ['billing', 'run', '--at', '2027-02-28T10:00:00Z', '--allow-past', '--force', '--json'];
      const [a, b] = await Promise.all([runCli(args, env), runCli(args, env)]);
      expect(a.code, a.stderr).toBe(0);
      expect(b.code, b.stderr).toBe(0);
      expect(a.json.renewed + b.json.renewed).toBe(70);
      await expectEachRenewedOnce(h, ids, 2);
    } finally {
      await h.stop();
    }
  }, 240_000);
});

describe('parallel billing runs on SQLite', () => {
  // NOTE: SQLite has one writer. Parallel runs never bill a period twice (the constraint and the
  // re-check under the write lock), but a gateway-side transaction may still meet "database is
  // locked" and be reported; the next run completes whatever that left.
  it('two billing-admin processes on one SQLite file: no period billed twice; a third run leaves nothing due', async () => {
    const h = await startBilling('sqlite');
    try {
      const ids = await population(h, 40, 5);
      const env = { DATABASE_URL: h.server.db.url, BILLING_URL: h.server.url };
      const args = ['billing', 'run', '--at', '2027-02-28T10:00:00Z', '--allow-past', '--force', '--json'];
      const [a, b] = await Promise.all([runCli(args, env), runCli(args, env)]);
      expect([0, 1]).toContain(a.code);
      expect([0, 1]).toContain(b.code);
      expect(a.json.renewed + b.json.renewed).toBeLessThanOrEqual(45);
      const third = await runCli(args, env);
      expect(third.code, third.stderr).toBe(0);
      expect(a.json.renewed + b.json.renewed + third.json.renewed).toBe(45);
      await expectEachRenewedOnce(h, ids, 2);
    } finally {
      await h.stop();
    }
  }, 240_000);
});
