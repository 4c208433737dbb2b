import { beforeAll, describe, expect, it } from 'vitest';
import { CreditNote } from '../../src/db/entities/credit-note.js';
import { Refund } from '../../src/db/entities/payment.js';
import { runCli } from '../helpers/cli.js';
import { serverForCli } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, type TestServer } from '../helpers/server.js';
import type { PlanSeed } from '../../src/services/plans/seed-plans.js';
import { activeSubscription, dbOf, eventually, serverOnClock, walletBalance, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 27, "a refund takes effect when the gateway accepts it" (docs/gateway.md). The subscription
 * used to be canceled when the refund was recorded, before the gateway answered: a refusal
 * (ShopeePay's partial refund 414, a closed refund window, the merchant's balance, a direct
 * refund denied by the bank) left the customer without the service and without the money. Now
 * a refusal answers 422 refund_refused with the gateway's code and message and changes nothing
 * else; a lost answer (a 5xx after the effect) answers 202 with the refund pending and changes
 * nothing until the gateway confirms it, by its notification or by payments sync.
 */

const DAY = 86_400_000;
const YEARLY: PlanSeed = { slug: 'basic-yearly', name: 'Basic yearly', description: 'Basic, billed yearly', price: 500000, currency: 'IDR', interval: 12, interval_unit: 'month', sort_order: 7 };

/** What a customer would see of the refund's effects: nothing may move on a refusal. */
async function visibleState(server: TestServer, user: TestUser, payment: { id: string; invoice_id: string }, subscriptionId: string) {
  const get = async (path: string) => (await server.api('GET', path, { auth: user })).body;
  return {
    payment: await get(`/payments/${payment.id}/`),
    subscription: (await get(`/subscriptions/${subscriptionId}/`)).status,
    invoice: await get(`/invoices/${payment.invoice_id}/`),
    creditNotes: (await get('/credit-notes/')).count,
    wallet: await walletBalance(server, user),
    access: (await server.api('GET', '/subscriptions/active/', { auth: user })).status,
  };
}

describe.each(DATABASES)('a refund takes effect when the gateway accepts it (%s)', (kind) => {
  const stage = serverOnClock(kind, new Date('2027-03-01T03:00:00.000Z'));
  beforeAll(async () => {
    await stage.server.seedPlans([...STANDARD_PLANS, YEARLY]);
  });
  const refund = (user: TestUser, paymentId: string, body: Record<string, unknown>) =>
    stage.server.api('POST', `/payments/${paymentId}/refund/`, { auth: user, body });
  const fault = (body: Record<string, unknown>) => stage.server.request('POST', '/_simulator/faults', { body });

  it('a ShopeePay partial refund is refused (414): 422 refund_refused with the gateway code and message, nothing else changed, the attempt kept as failed', async () => {
    const { user, server } = stage;
    const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly', 'shopeepay');
    const before = await visibleState(server, user, payment, subscription.id);

    const res = await refund(user, payment.id, { amount: 10000, reason: 'partial' });
    expect(res.status, res.text).toBe(422);
    expect(res.body).toMatchObject({ code: 'refund_refused', detail: expect.stringContaining('414 ShopeePay supports only full refunds') });
    expect(await visibleState(server, user, payment, subscription.id)).toEqual(before);
    expect(before).toMatchObject({ subscription: 'active', access: 200, creditNotes: 0 });
    expect(await dbOf(server).find(Refund, { payment: payment.id })).toEqual([
      expect.objectContaining({ status: 'failed', amount: '10000.00', gatewayStatusCode: '414', gatewayMessage: 'ShopeePay supports only full refunds' }),
    ]);

    // The whole payment the gateway takes: the refund succeeds and only then ends the subscription.
    const full = await refund(user, payment.id, {});
    expect(full.status, full.text).toBe(200);
    expect(full.body.refund).toMatchObject({ status: 'succeeded', amount: '50000.00', refund_key: `${payment.order_id}-r2` });
    expect(await visibleState(server, user, payment, subscription.id)).toMatchObject({
      payment: { status: 'refunded', refunded_amount: '50000.00' },
      subscription: 'canceled',
      creditNotes: 1,
      access: 404,
    });
  });

  it("a refund after the payment type's refund window (GoPay, 45 days) is refused and changes nothing", async () => {
    const { user, server } = stage;
    const { subscription, payment } = await activeSubscription(server, user, 'basic-yearly', 'gopay');
    // The simulator keeps the wall clock: its settlement is put 46 days back, our clock stays.
    const tx = server.running.billing.simulator!.transaction(payment.order_id)!;
    tx.settlement_time = new Date(tx.settlement_time!.getTime() - 46 * DAY);
    const before = await visibleState(server, user, payment, subscription.id);
    const res = await refund(user, payment.id, {});
    expect(res.status, res.text).toBe(422);
    expect(res.body).toMatchObject({ code: 'refund_refused', detail: expect.stringMatching(/412 .*refund window of 45 days/) });
    expect(await visibleState(server, user, payment, subscription.id)).toEqual(before);
    expect(before).toMatchObject({ subscription: 'active', access: 200 });
  });

  it("a refund refused for the merchant's balance (414) changes nothing; the next one, with the balance back, goes through", async () => {
    const { user, server } = stage;
    const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
    const before = await visibleState(server, user, payment, subscription.id);
    await fault({ mode: 'refuse', count: 1, operations: ['refund'] });
    const res = await refund(user, payment.id, { amount: 20000 });
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toContain('414 Merchant balance is insufficient');
    expect(await visibleState(server, user, payment, subscription.id)).toEqual(before);

    const again = await refund(user, payment.id, { amount: 20000 });
    expect(again.status, again.text).toBe(200);
    expect(await visibleState(server, user, payment, subscription.id)).toMatchObject({
      payment: { status: 'partially_refunded', refunded_amount: '20000.00' },
      subscription: 'canceled',
      creditNotes: 1,
    });
  });

  it('a direct refund the bank denies (202) changes nothing: the subscription stays active', async () => {
    const { user, server } = stage;
    const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
    const before = await visibleState(server, user, payment, subscription.id);
    const res = await refund(user, payment.id, { direct: true, reason: 'sim-bank-reject' });
    expect(res.status, res.text).toBe(422);
    expect(res.body).toMatchObject({ code: 'refund_refused', detail: expect.stringContaining('202 Refund denied by the bank') });
    expect(await visibleState(server, user, payment, subscription.id)).toEqual(before);
  });

  it('a 5xx after the gateway refunded: 202 pending and nothing changed; its notification then ends the subscription, once', async () => {
    const { user, server } = stage;
    const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
    const before = await visibleState(server, user, payment, subscription.id);
    // The notification is held back until the answer has been read, as a slow endpoint would get it.
    await fault({ mode: 'http_500', when: 'after', count: 1, operations: ['refund'], notify: false });
    const res = await refund(user, payment.id, {});
    expect(res.status, res.text).toBe(202);
    expect(res.body.refund).toMatchObject({ status: 'pending', amount: '50000.00', gateway_status_code: null });
    expect(res.body.payment).toMatchObject({ status: 'settled', refunded_amount: '0.00' });
    expect(await visibleState(server, user, payment, subscription.id)).toEqual(before);

    // A retry is the same refund (same refund_key): the gateway's replayed answer settles it.
    const retry = await refund(user, payment.id, {});
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body.refund).toMatchObject({ status: 'succeeded', refund_key: `${payment.order_id}-r1` });
    const after = await visibleState(server, user, payment, subscription.id);
    expect(after).toMatchObject({ payment: { status: 'refunded', refunded_amount: '50000.00' }, subscription: 'canceled', creditNotes: 1, access: 404 });
    expect(server.running.billing.simulator!.transaction(payment.order_id)!.refunds).toHaveLength(1);
    expect(await dbOf(server).count(CreditNote, { payment: payment.id })).toBe(1);
  });

  it('money a pending refund holds is not credited by a plan change meanwhile: the refund, once accepted, takes it (long seed 2604922969)', async () => {
    const { user, server } = stage;
    const { subscription, payment } = await activeSubscription(server, user, 'basic-yearly', 'gopay');
    stage.clock.advance(DAY);
    // The gateway refunds all of it, but its answer and notification are lost: pending here.
    await fault({ mode: 'http_500', when: 'after', count: 1, operations: ['refund'], notify: false });
    const pending = await refund(user, payment.id, {});
    expect(pending.status, pending.text).toBe(202);
    // The unused share of the year, less one day: 500,000 x 365/366 (2027-03-02 to 2028-03-01, a leap year).
    const held = pending.body.refund.amount;
    expect(held).toBe('498634.00');
    // A downgrade now would credit the unused year to the wallet: that money is held by the refund.
    const down = await server.api('POST', `/subscriptions/${subscription.id}/change-plan/`, { auth: user, body: { plan_id: 'basic-monthly', immediate: true } });
    expect(down.status, down.text).toBe(200);
    expect(await walletBalance(server, user)).toBe('0.00');
    // The retry reads the gateway's answer: the refund took the money back to the customer.
    const retry = await refund(user, payment.id, {});
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body.payment).toMatchObject({ refunded_amount: held, credited_amount: '0.00' });
    expect(await walletBalance(server, user)).toBe('0.00');
    expect(server.running.billing.simulator!.transaction(payment.order_id)!.refunds).toHaveLength(1);
  });

  it('a refund whose answer was lost is confirmed by its notification: the effects come then', async () => {
    const { user, server } = stage;
    const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
    await fault({ mode: 'http_500', when: 'after', count: 1, operations: ['refund'] });
    const res = await refund(user, payment.id, { amount: 30000 });
    // The notification may overtake the lost answer: either way the refund is counted once.
    expect([200, 202]).toContain(res.status);
    const settled = await eventually(async () => {
      const state = await visibleState(server, user, payment, subscription.id);
      return state.payment.refunded_amount === '30000.00' ? state : undefined;
    }, 'the refund notification');
    expect(settled).toMatchObject({ payment: { status: 'partially_refunded' }, subscription: 'canceled', creditNotes: 1 });
    expect(await dbOf(server).find(Refund, { payment: payment.id })).toEqual([expect.objectContaining({ status: 'succeeded', amount: '30000.00' })]);
  });
});

describe.each(DATABASES)('a refund whose answer and notification were lost (%s)', (kind) => {
  const stage = serverForCli(kind);

  it('stays pending with nothing changed until payments sync sends it again under its key, then takes effect once', async () => {
    const server = stage.server;
    await server.seedPlans(STANDARD_PLANS);
    const user: TestUser = await server.createUser();
    const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly', 'qris');
    await server.request('POST', '/_simulator/faults', { body: { mode: 'http_500', when: 'after', count: 1, operations: ['refund'], notify: false } });
    const res = await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: {} });
    expect(res.status, res.text).toBe(202);
    const pending = await visibleState(server, user, payment, subscription.id);
    expect(pending).toMatchObject({ payment: { status: 'settled' }, subscription: 'active', creditNotes: 0, access: 200 });
    // The gateway did refund it.
    expect(server.running.billing.simulator!.transaction(payment.order_id)!.transaction_status).toBe('refund');

    const sync = await runCli(['payments', 'sync', '--json'], stage.env);
    expect(sync.code, sync.stderr).toBe(0);
    const after = await visibleState(server, user, payment, subscription.id);
    expect(after).toMatchObject({ payment: { status: 'refunded', refunded_amount: '50000.00' }, subscription: 'canceled', creditNotes: 1, access: 404 });
    expect(server.running.billing.simulator!.transaction(payment.order_id)!.refunds).toHaveLength(1);

    const again = await runCli(['payments', 'sync', '--json'], stage.env);
    expect(again.code, again.stderr).toBe(0);
    expect(await visibleState(server, user, payment, subscription.id)).toEqual(after);
    expect(await dbOf(server).find(Refund, { payment: payment.id })).toEqual([expect.objectContaining({ status: 'succeeded' })]);
  });
});
