import { describe, expect, it } from 'vitest';
import { Payment, Refund } from '../../src/db/entities/payment.js';
import { Topup } from '../../src/db/entities/topup.js';
import { runCli } from '../helpers/cli.js';
import { DATABASES } from '../helpers/database.js';
import { API, baseEnv, call } from '../helpers/reliability/server-process.js';
import { serverStage } from '../helpers/reliability/server-stage.js';

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
  const stage = serverStage(kind, [...MODES.flatMap((m) => OPERATIONS.map((op) => `${op}_${m}`)), 'lost_notification', 'cancel_fails', 'cancel_fails_unpaid'], SERVER_ENV);
  const { em, as } = stage;
  const fault = (mode: string, operations: string[]) => stage.fault(mode, operations);
  const gatewayKnows = async (orderId: string) => (await stage.gatewayTransaction(orderId)) !== null;

  it.each(MODES)('%s: every call answers 502 or 503, a refund 202 pending', async (mode) => {
    const gatewayProblem = (res: { status: number; body: { code?: string } }) => {
      expect([502, 503], JSON.stringify(res.body)).toContain(res.status);
      expect(['gateway_error', 'gateway_unavailable']).toContain(res.body.code);
    };

    await fault(mode, ['charge']);
    gatewayProblem(await call(stage.server.url, 'POST', `${API}/subscriptions/`, { ...as(`subscribe_${mode}`), body: { plan_id: 'basic-monthly', payment_type: 'gopay' } }));

    const pending = await call(stage.server.url, 'POST', `${API}/subscriptions/`, { ...as(`charge_${mode}`), body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
    expect(pending.status).toBe(201);
    await fault(mode, ['charge']);
    gatewayProblem(await call(stage.server.url, 'POST', `${API}/payments/charge/`, { ...as(`charge_${mode}`), body: { subscription_id: pending.body.subscription.id } }));

    const paid = await call(stage.server.url, 'POST', `${API}/subscriptions/`, {
      ...as(`refund_${mode}`),
      body: { plan_id: 'pro-monthly', payment_type: 'credit_card', token: 'sim-card-accept-4811' },
    });
    expect(paid.status).toBe(201);
    expect(paid.body.payment.status).toBe('settled');
    // The card capture settles at the gateway (a day later at Midtrans); only then can it be refunded there.
    expect((await call(stage.server.url, 'POST', `/_simulator/v2/${paid.body.payment.order_id}/settle`)).status).toBe(200);
    await fault(mode, ['refund']);
    // A refund whose answer is lost or a 5xx is pending, not failed: 202, nothing else moved.
    const refund = await call(stage.server.url, 'POST', `${API}/payments/${paid.body.payment.id}/refund/`, { ...as(`refund_${mode}`), body: { amount: 50000 } });
    expect(refund.status, JSON.stringify(refund.body)).toBe(202);
    expect(refund.body).toMatchObject({ refund: { status: 'pending' }, payment: { status: 'settled', refunded_amount: '0.00' } });

    await fault(mode, ['charge']);
    gatewayProblem(await call(stage.server.url, 'POST', `${API}/topups/`, { ...as(`topup_${mode}`), body: { amount: 75000, payment_type: 'qris' } }));
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
    const lost = await call(stage.server.url, 'POST', `${API}/subscriptions/`, { ...as('lost_notification'), body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
    expect(lost.status).toBe(201);
    for (const user of ['cancel_fails', 'cancel_fails_unpaid']) {
      const replaced = await call(stage.server.url, 'POST', `${API}/subscriptions/`, { ...as(user), body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
      expect(replaced.status).toBe(201);
      for (const mode of MODES) {
        await fault(mode, ['cancel']);
        const charged = await call(stage.server.url, 'POST', `${API}/payments/charge/`, { ...as(user), body: { subscription_id: replaced.body.subscription.id } });
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
      const tx = await call(stage.server.url, 'GET', `/_simulator/transactions/${row.orderId}`);
      if (tx.status !== 200 || tx.body.transaction_status !== 'pending') continue;
      const settled = await call(stage.server.url, 'POST', `/_simulator/v2/${row.orderId}/settle`);
      expect(settled.status, settled.text).toBe(200);
      paidAtGateway.push(row.orderId);
    }
    expect(paidAtGateway.length).toBeGreaterThan(0);

    // The operator's CLI runs with the server's configuration (a refund counts as lost once
    // older than GATEWAY_TIMEOUT_MS).
    const sync = await runCli(['payments', 'sync', '--json'], { ...baseEnv(stage.db.url), ...SERVER_ENV, BILLING_URL: stage.server.url });
    expect(sync.code, sync.stderr).toBe(0);

    // Every order: our status is the gateway's, or the gateway never had it.
    const mismatches: string[] = [];
    for (const p of await em().find(Payment, {}, { populate: ['user'] })) {
      const tx = await call(stage.server.url, 'GET', `/_simulator/transactions/${p.orderId}`);
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
      const tx = await call(stage.server.url, 'GET', `/_simulator/transactions/${t.orderId}`);
      if (tx.status !== 200) continue;
      const expected = { settlement: 'success', pending: 'pending', cancel: 'failed', expire: 'expired', deny: 'failed' }[tx.body.transaction_status as string];
      if (t.status !== expected) mismatches.push(`${t.orderId} (${t.user.username}): ${t.status}, the gateway says ${tx.body.transaction_status}`);
    }
    // A refund the gateway never received must not stay pending (holding its amount) forever.
    for (const r of await em().find(Refund, { status: 'pending' }, { populate: ['payment'] })) {
      const tx = await call(stage.server.url, 'GET', `/_simulator/transactions/${r.payment.orderId}`);
      const atGateway = (tx.body.refunds ?? []).some((g: { refund_key: string }) => g.refund_key === r.refundKey);
      mismatches.push(`refund ${r.refundKey}: pending locally, ${atGateway ? 'done' : 'unknown'} at the gateway`);
    }
    expect(mismatches).toEqual([]);
  });
});

/*
 * "Done, then answer lost": the gateway DOES the charge, refund, cancel or top-up charge, and its
 * answer never arrives readable (no answer within the timeout, a non-JSON 200, a 302). The
 * customer may then retry. `payments sync` must bring every record to what the gateway did, with
 * each effect counted once: one settled payment per paid order, one refund at the gateway and
 * one here, one wallet credit per top-up. Notifications are lost, so sync is the only way back.
 *
 * NOTE (issue 15): these tests were written before the service-side change (helper i15svc) was
 * merged. Without it, "charge … malformed|redirect" fail (the garbled answer fails the payment
 * though the gateway has it, and it is settled there) and "refund … timeout|malformed|redirect"
 * fail (the retry uses a new refund_key: two refunds at the gateway). Cancel and top-up pass.
 */
const AFTER_MODES = ['timeout', 'malformed', 'redirect'] as const;
const AFTER_OPERATIONS = ['charge', 'refund', 'cancel', 'topup'] as const;

describe.each(DATABASES)('gateway does the work, then the answer is lost (%s)', (kind) => {
  const user = (op: string, mode: string) => `lost_${op}_${mode}`;
  const stage = serverStage(kind, AFTER_MODES.flatMap((m) => AFTER_OPERATIONS.map((op) => user(op, m))), SERVER_ENV);
  const { em, as } = stage;
  const faultAfter = (mode: string, operations: string[]) => stage.fault(mode, operations, 'after');
  const gateway = stage.gatewayTransaction;
  const settleAtGateway = async (orderId: string) => {
    const res = await call(stage.server.url, 'POST', `/_simulator/v2/${orderId}/settle`);
    expect(res.status, res.text).toBe(200);
  };
  const paymentsOf = (name: string) => em().find(Payment, { user: { username: name } }, { orderBy: { createdAt: 'asc' } });
  const sync = async () => {
    const res = await runCli(['payments', 'sync', '--json'], { ...baseEnv(stage.db.url), ...SERVER_ENV, BILLING_URL: stage.server.url });
    expect(res.code, res.stderr).toBe(0);
  };

  const expectedPayment: Record<string, string> = { settlement: 'settled', pending: 'pending', cancel: 'canceled', expire: 'expired', deny: 'failed', capture: 'settled', partial_refund: 'partially_refunded', refund: 'refunded' };
  /** Every payment of the user is where the gateway says it is, and none is left flagged. */
  const converged = async (name: string) => {
    const mismatches: string[] = [];
    for (const p of await paymentsOf(name)) {
      const tx = await gateway(p.orderId);
      if (!tx) {
        if (p.status === 'pending') mismatches.push(`${p.orderId}: pending, unknown to the gateway`);
        continue;
      }
      if (p.status !== expectedPayment[tx.transaction_status]) mismatches.push(`${p.orderId}: ${p.status}, the gateway says ${tx.transaction_status}`);
      if (p.outcomeUnknown) mismatches.push(`${p.orderId}: still flagged outcome-unknown`);
    }
    expect(mismatches).toEqual([]);
  };
  const answered = (res: { status: number; text: string }) => expect([200, 201, 202, 502, 503], res.text).toContain(res.status);
  const cases = AFTER_OPERATIONS.flatMap((op) => AFTER_MODES.map((mode) => [op, mode] as const));

  it.each(cases)('%s done, answer lost by %s: payments sync converges with the effect once', async (op, mode) => {
    const name = user(op, mode);
    switch (op) {
      case 'charge': {
        // A charge of a pending subscription: the gateway makes it, the customer pays it.
        const pending = await call(stage.server.url, 'POST', `${API}/subscriptions/`, { ...as(name), body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
        expect(pending.status).toBe(201);
        await faultAfter(mode, ['charge']);
        answered(await call(stage.server.url, 'POST', `${API}/payments/charge/`, { ...as(name), body: { subscription_id: pending.body.subscription.id } }));
        const payable: string[] = [];
        for (const p of await paymentsOf(name)) if ((await gateway(p.orderId))?.transaction_status === 'pending') payable.push(p.orderId);
        // The first payment was superseded (cancelled at the gateway); the lost charge is the payable one.
        expect(payable).toHaveLength(1);
        await settleAtGateway(payable[0]!);
        await sync();
        await sync();
        await converged(name);
        expect((await paymentsOf(name)).filter((p) => p.status === 'settled')).toHaveLength(1);
        expect((await call(stage.server.url, 'GET', `${API}/subscriptions/${pending.body.subscription.id}/`, as(name))).body.status).toBe('active');
        break;
      }
      case 'refund': {
        // A card payment, settled at the gateway (the next day), refunded; the answer is lost and
        // the customer asks again.
        const paid = await call(stage.server.url, 'POST', `${API}/subscriptions/`, { ...as(name), body: { plan_id: 'pro-monthly', payment_type: 'credit_card', token: 'sim-card-accept-4811' } });
        expect(paid.status).toBe(201);
        await settleAtGateway(paid.body.payment.order_id);
        await faultAfter(mode, ['refund']);
        answered(await call(stage.server.url, 'POST', `${API}/payments/${paid.body.payment.id}/refund/`, { ...as(name), body: { amount: 50000 } }));
        expect((await gateway(paid.body.payment.order_id)).refunds).toHaveLength(1);
        const retried = await call(stage.server.url, 'POST', `${API}/payments/${paid.body.payment.id}/refund/`, { ...as(name), body: { amount: 50000 } });
        expect([200, 409, 502, 503], retried.text).toContain(retried.status);
        await sync();
        await sync();
        await converged(name);
        // One refund at the gateway, one here, with the same key and amount.
        const atGateway = (await gateway(paid.body.payment.order_id)).refunds as { refund_key: string; refund_amount: number }[];
        expect(atGateway.map((r) => r.refund_amount)).toEqual([50000]);
        const local = await em().find(Refund, { payment: paid.body.payment.id });
        expect(local.filter((r) => r.status === 'succeeded').map((r) => [r.refundKey, r.amount])).toEqual([[atGateway[0]!.refund_key, '50000.00']]);
        expect(local.filter((r) => r.status === 'pending')).toEqual([]);
        const after = await call(stage.server.url, 'GET', `${API}/payments/${paid.body.payment.id}/`, as(name));
        expect(after.body).toMatchObject({ status: 'partially_refunded', refunded_amount: '50000.00' });
        break;
      }
      case 'cancel': {
        // A new charge replaces the pending payment, whose cancel is done but not answered.
        const replaced = await call(stage.server.url, 'POST', `${API}/subscriptions/`, { ...as(name), body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
        expect(replaced.status).toBe(201);
        await faultAfter(mode, ['cancel']);
        const recharge = await call(stage.server.url, 'POST', `${API}/payments/charge/`, { ...as(name), body: { subscription_id: replaced.body.subscription.id } });
        expect(recharge.status, recharge.text).toBe(201);
        expect((await gateway(replaced.body.payment.order_id)).transaction_status).toBe('cancel');
        await sync();
        await sync();
        await converged(name);
        expect((await paymentsOf(name)).map((p) => p.status)).toEqual(['canceled', 'pending']);
        break;
      }
      case 'topup': {
        // The gateway makes the top-up charge, the customer pays it; credited once.
        await faultAfter(mode, ['charge']);
        answered(await call(stage.server.url, 'POST', `${API}/topups/`, { ...as(name), body: { amount: 75000, payment_type: 'qris' } }));
        const topup = await em().findOneOrFail(Topup, { user: { username: name } });
        expect((await gateway(topup.orderId))?.transaction_status).toBe('pending');
        await settleAtGateway(topup.orderId);
        await sync();
        await sync();
        expect(await em().findOneOrFail(Topup, { user: { username: name } })).toMatchObject({ status: 'success', outcomeUnknown: false });
        expect((await call(stage.server.url, 'GET', `${API}/wallet/me/`, as(name))).body.balance).toBe('75000.00');
        break;
      }
    }
  });
});
