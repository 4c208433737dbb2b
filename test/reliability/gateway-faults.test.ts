import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Payment, Refund } from '../../src/db/entities/payment.js';
import { Topup } from '../../src/db/entities/topup.js';
import { openOrm, type Orm } from '../../src/db/orm.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';
import { prepareDatabase, type Account } from '../helpers/reliability/accounts.js';
import { API, baseEnv, call, startServerProcess, type ServerProcess } from '../helpers/reliability/server-process.js';

/*
 * The gateway misbehaves (HTTP 500, no answer, garbage) during the four calls that create money
 * movements. The client must get 502/503; nothing may stay payable that the gateway does not know
 * of unless it is flagged for reconciliation; and `payments sync` must bring our records to what
 * the gateway really did. The gateway's notifications go nowhere here, so sync is the only way back.
 */

const MODES = ['http_500', 'timeout', 'malformed'] as const;
const OPERATIONS = ['subscribe', 'charge', 'refund', 'topup'] as const;
const SERVER_ENV = { GATEWAY_TIMEOUT_MS: '1500', GATEWAY_NOTIFICATION_URL: 'http://127.0.0.1:9/notifications-are-lost/' };

describe.each(DATABASES)('gateway faults during subscribe, charge, refund and top-up (%s)', (kind) => {
  let db: TestDatabase;
  let server: ServerProcess;
  let orm: Orm;
  let accounts: Record<string, Account>;
  const em = () => orm.em.fork() as EntityManager;
  const as = (user: string) => ({ basic: accounts[user] });
  const fault = async (mode: string, operations: string[]) => {
    const res = await call(server.url, 'POST', '/_simulator/faults', { body: { mode, count: 1, operations } });
    expect(res.status).toBe(200);
  };
  const gatewayKnows = async (orderId: string) => (await call(server.url, 'GET', `/_simulator/transactions/${orderId}`)).status === 200;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    accounts = await prepareDatabase(db.url, [...MODES.flatMap((m) => OPERATIONS.map((op) => `${op}_${m}`)), 'lost_notification', 'cancel_fails', 'cancel_fails_unpaid']);
    server = await startServerProcess({ databaseUrl: db.url, env: SERVER_ENV });
    orm = await openOrm(db.url);
  });
  afterAll(async () => {
    await orm?.close(true);
    await server?.stop();
    await db?.drop();
  });

  it.each(MODES)('%s: every call answers 502 or 503', async (mode) => {
    const gatewayProblem = (res: { status: number; body: { code?: string } }) => {
      expect([502, 503], JSON.stringify(res.body)).toContain(res.status);
      expect(['gateway_error', 'gateway_unavailable']).toContain(res.body.code);
    };

    await fault(mode, ['charge']);
    gatewayProblem(await call(server.url, 'POST', `${API}/subscriptions/`, { ...as(`subscribe_${mode}`), body: { plan_id: 'basic-monthly', payment_type: 'gopay' } }));

    const pending = await call(server.url, 'POST', `${API}/subscriptions/`, { ...as(`charge_${mode}`), body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
    expect(pending.status).toBe(201);
    await fault(mode, ['charge']);
    gatewayProblem(await call(server.url, 'POST', `${API}/payments/charge/`, { ...as(`charge_${mode}`), body: { subscription_id: pending.body.subscription.id } }));

    const paid = await call(server.url, 'POST', `${API}/subscriptions/`, {
      ...as(`refund_${mode}`),
      body: { plan_id: 'pro-monthly', payment_type: 'credit_card', token: 'sim-card-accept-4811' },
    });
    expect(paid.status).toBe(201);
    expect(paid.body.payment.status).toBe('settled');
    // The card capture settles at the gateway (a day later at Midtrans); only then can it be refunded there.
    expect((await call(server.url, 'POST', `/_simulator/v2/${paid.body.payment.order_id}/settle`)).status).toBe(200);
    await fault(mode, ['refund']);
    gatewayProblem(await call(server.url, 'POST', `${API}/payments/${paid.body.payment.id}/refund/`, { ...as(`refund_${mode}`), body: { amount: 50000 } }));

    await fault(mode, ['charge']);
    gatewayProblem(await call(server.url, 'POST', `${API}/topups/`, { ...as(`topup_${mode}`), body: { amount: 75000, payment_type: 'qris' } }));
    await fault('none', []);
  });

  it('leaves nothing payable that the gateway does not know of, unless flagged for reconciliation', async () => {
    const orphans: string[] = [];
    for (const p of await em().find(Payment, { status: 'pending' })) {
      if (!p.outcomeUnknown && !(await gatewayKnows(p.orderId))) orphans.push(`payment ${p.orderId}`);
    }
    for (const t of await em().find(Topup, { status: 'pending' })) {
      if (!t.outcomeUnknown && !(await gatewayKnows(t.orderId))) orphans.push(`top-up ${t.orderId}`);
    }
    expect(orphans).toEqual([]);
    // A timeout leaves the outcome open (the gateway may have the charge); sync decides later.
    const timedOut = await em().find(Payment, { user: { username: { $in: ['subscribe_timeout', 'charge_timeout'] } } }, { orderBy: { createdAt: 'asc' } });
    expect(timedOut.filter((p) => p.status === 'pending' && p.outcomeUnknown).map((p) => p.user.id)).toHaveLength(2);
    expect((await em().findOneOrFail(Topup, { user: { username: 'topup_timeout' } })).outcomeUnknown).toBe(true);
  });

  it('payments sync settles what the gateway really did, and nothing stays in between', async () => {
    // Two more ways to end up with money at the gateway that we do not know of: a payment whose
    // notification is lost, and an older payment whose cancel failed when a new charge replaced it.
    const lost = await call(server.url, 'POST', `${API}/subscriptions/`, { ...as('lost_notification'), body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
    expect(lost.status).toBe(201);
    for (const user of ['cancel_fails', 'cancel_fails_unpaid']) {
      const replaced = await call(server.url, 'POST', `${API}/subscriptions/`, { ...as(user), body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
      expect(replaced.status).toBe(201);
      for (const mode of MODES) {
        await fault(mode, ['cancel']);
        const charged = await call(server.url, 'POST', `${API}/payments/charge/`, { ...as(user), body: { subscription_id: replaced.body.subscription.id } });
        expect(charged.status, charged.text).toBe(201);
      }
    }
    await fault('none', []);

    // Meanwhile at the gateway: customers pay everything it holds payable (notifications are
    // lost), except cancel_fails_unpaid, who pays nothing.
    const everything = [...(await em().find(Payment, {}, { populate: ['user'] })), ...(await em().find(Topup, {}, { populate: ['user'] }))];
    const paidAtGateway: string[] = [];
    for (const row of everything) {
      if (row.user.username === 'cancel_fails_unpaid') continue;
      const tx = await call(server.url, 'GET', `/_simulator/transactions/${row.orderId}`);
      if (tx.status !== 200 || tx.body.transaction_status !== 'pending') continue;
      const settled = await call(server.url, 'POST', `/_simulator/v2/${row.orderId}/settle`);
      expect(settled.status, settled.text).toBe(200);
      paidAtGateway.push(row.orderId);
    }
    expect(paidAtGateway.length).toBeGreaterThan(0);

    // The operator's CLI runs with the server's configuration (a refund counts as lost once
    // older than GATEWAY_TIMEOUT_MS).
    const sync = await runCli(['payments', 'sync', '--json'], { ...baseEnv(db.url), ...SERVER_ENV, BILLING_URL: server.url });
    expect(sync.code, sync.stderr).toBe(0);

    // Every order: our status is the gateway's, or the gateway never had it.
    const mismatches: string[] = [];
    for (const p of await em().find(Payment, {}, { populate: ['user'] })) {
      const tx = await call(server.url, 'GET', `/_simulator/transactions/${p.orderId}`);
      if (tx.status !== 200) {
        if (p.status === 'pending' && !p.outcomeUnknown) mismatches.push(`${p.orderId}: pending, unknown to the gateway, not flagged`);
        continue;
      }
      // What we consider over must not stay payable at the gateway.
      if (p.status !== 'pending' && tx.body.transaction_status === 'pending') mismatches.push(`${p.orderId} (${p.user.username}): ${p.status} here, still payable at the gateway`);
      const expected = { settlement: 'settled', pending: 'pending', cancel: 'canceled', expire: 'expired', deny: 'failed', capture: 'settled', partial_refund: 'partially_refunded', refund: 'refunded' }[
        tx.body.transaction_status as string
      ];
      if (p.status !== expected) mismatches.push(`${p.orderId} (${p.user.username}): ${p.status}, the gateway says ${tx.body.transaction_status}`);
      if (p.status === 'pending' && p.outcomeUnknown) mismatches.push(`${p.orderId}: still flagged outcome-unknown though the gateway answered`);
    }
    for (const t of await em().find(Topup, {}, { populate: ['user'] })) {
      const tx = await call(server.url, 'GET', `/_simulator/transactions/${t.orderId}`);
      if (tx.status !== 200) continue;
      const expected = { settlement: 'success', pending: 'pending', cancel: 'failed', expire: 'expired', deny: 'failed' }[tx.body.transaction_status as string];
      if (t.status !== expected) mismatches.push(`${t.orderId} (${t.user.username}): ${t.status}, the gateway says ${tx.body.transaction_status}`);
    }
    // A refund the gateway never received must not stay pending (holding its amount) forever.
    for (const r of await em().find(Refund, { status: 'pending' }, { populate: ['payment'] })) {
      const tx = await call(server.url, 'GET', `/_simulator/transactions/${r.payment.orderId}`);
      const atGateway = (tx.body.refunds ?? []).some((g: { refund_key: string }) => g.refund_key === r.refundKey);
      mismatches.push(`refund ${r.refundKey}: pending locally, ${atGateway ? 'done' : 'unknown'} at the gateway`);
    }
    expect(mismatches).toEqual([]);
  });
});
