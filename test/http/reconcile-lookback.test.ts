import { describe, expect, it } from 'vitest';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { runCli } from '../helpers/cli.js';
import { serverForCli } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS } from '../helpers/server.js';
import { simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';
import { postTopup, settleTopup } from '../helpers/topups.js';

/*
 * Issue 27, "reconciliation that looks back" (RECONCILE_LOOKBACK_DAYS): the gateway reverses or refunds a
 * payment that settled here, and its notification is lost (the simulator's `?notify=false`).
 * `payments sync` asked only about non-final payments, so it was never seen: the service showed
 * `settled` and kept the access, the gateway `deny`. Now payments and top-ups settled within
 * RECONCILE_LOOKBACK_DAYS are asked too, and what changed is applied through the webhook's path.
 */
describe.each(DATABASES)('payments sync looks back at settled payments (%s)', (kind) => {
  const stage = serverForCli(kind);
  const sync = (env: Record<string, string> = {}) => runCli(['payments', 'sync', '--json'], { ...stage.env, ...env });
  const api = (method: string, path: string, user: TestUser) => stage.server.api(method, path, { auth: user });
  /** A gateway action whose notification never arrives. */
  const lostAction = async (orderId: string, action: string, body?: unknown) => {
    const res = await stage.server.request('POST', `/_simulator/v2/${orderId}/${action}?notify=false`, body === undefined ? {} : { body });
    expect(res.status, res.text).toBe(200);
    expect(res.body.notification).toBeNull();
  };
  const logCount = () => stage.em().count(WebhookLog, {});

  it('a reversal and a refund whose notifications were lost are applied once; settled ones that did not move record nothing', async () => {
    await stage.server.seedPlans(STANDARD_PLANS);
    const reversedUser: TestUser = await stage.server.createUser();
    const refundedUser: TestUser = await stage.server.createUser();
    const steadyUser: TestUser = await stage.server.createUser();
    const reversed = await subscribe(stage.server, reversedUser, { plan_id: 'basic-monthly', payment_type: 'bank_transfer', metadata: { bank: 'permata' } });
    const refunded = await subscribe(stage.server, refundedUser, { plan_id: 'pro-monthly', payment_type: 'credit_card', token: 'sim-card-accept-1' });
    const steady = await subscribe(stage.server, steadyUser, { plan_id: 'basic-monthly', payment_type: 'qris' });
    for (const created of [reversed, refunded, steady]) {
      expect(created.status, created.text).toBe(201);
      if (created.body.payment.status === 'pending') await simulate(stage.server, created.body.payment.order_id, 'settle');
    }
    await simulate(stage.server, refunded.body.payment.order_id, 'settle').catch(() => undefined);
    const topup = await postTopup(stage.server, steadyUser, { amount: 25000, payment_type: 'bank_transfer' });
    await settleTopup(stage.server, topup.body.order_id);
    for (const [user, created] of [[reversedUser, reversed], [refundedUser, refunded]] as const) {
      expect((await api('GET', `/payments/${created.body.payment.id}/`, user)).body.status).toBe('settled');
    }

    await lostAction(reversed.body.payment.order_id, 'deny');
    await lostAction(refunded.body.payment.order_id, 'refund', { amount: 40000 });
    // Nothing arrived: the service still says settled.
    expect((await api('GET', `/payments/${reversed.body.payment.id}/`, reversedUser)).body.status).toBe('settled');

    // With the look back off, only non-final payments are asked: nothing is seen.
    const blind = await sync({ RECONCILE_LOOKBACK_DAYS: '0' });
    expect(blind.code, blind.stderr).toBe(0);
    expect(blind.json).toMatchObject({ count: 0, changed: 0, unchanged: 0 });

    const before = await logCount();
    const first = await sync();
    expect(first.code, first.stderr).toBe(0);
    const byOrder = (orderId: string) => first.json.results.find((r: { order_id: string }) => r.order_id === orderId);
    expect(byOrder(reversed.body.payment.order_id)).toMatchObject({ gateway_status: 'deny', status_before: 'settled', status_after: 'reversed', result: 'processed' });
    expect(byOrder(refunded.body.payment.order_id)).toMatchObject({ gateway_status: 'partial_refund', status_before: 'settled', status_after: 'partially_refunded', result: 'processed' });
    expect(first.json).toMatchObject({ count: 2, changed: 2 });
    // The steady payment and the top-up were asked and found as recorded.
    expect(first.json.unchanged).toBeGreaterThanOrEqual(2);
    expect(await logCount()).toBe(before + 2);

    // The effects are those of the notifications that were lost.
    expect((await api('GET', `/subscriptions/${reversed.body.subscription.id}/`, reversedUser)).body.status).toBe('past_due');
    expect((await api('GET', `/invoices/${reversed.body.payment.invoice_id}/`, reversedUser)).body).toMatchObject({ status: 'open' });
    expect((await api('GET', `/payments/${refunded.body.payment.id}/`, refundedUser)).body).toMatchObject({ status: 'partially_refunded', refunded_amount: '40000.00' });
    expect((await api('GET', `/payments/${steady.body.payment.id}/`, steadyUser)).body.status).toBe('settled');

    // A second run finds nothing new and records nothing.
    const second = await sync();
    expect(second.code, second.stderr).toBe(0);
    expect(second.json).toMatchObject({ count: 0, changed: 0 });
    expect(second.json.unchanged).toBeGreaterThanOrEqual(first.json.unchanged + 1);
    expect(await logCount()).toBe(before + 2);
  });

  it("GET /subscriptions/{id}/sync/ looks back too: the customer's own sync finds the reversal", async () => {
    const user: TestUser = await stage.server.createUser();
    const created = await subscribe(stage.server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer', metadata: { bank: 'permata' } });
    await simulate(stage.server, created.body.payment.order_id, 'settle');
    await lostAction(created.body.payment.order_id, 'deny');
    const before = await logCount();
    const synced = await api('GET', `/subscriptions/${created.body.subscription.id}/sync/`, user);
    expect(synced.status, JSON.stringify(synced.body)).toBe(200);
    expect(synced.body.status).toBe('past_due');
    expect((await api('GET', `/payments/${created.body.payment.id}/`, user)).body.status).toBe('reversed');
    expect(await logCount()).toBe(before + 1);
    // Again: nothing new, nothing recorded.
    expect((await api('GET', `/subscriptions/${created.body.subscription.id}/sync/`, user)).body.status).toBe('past_due');
    expect(await logCount()).toBe(before + 1);
  });
});
