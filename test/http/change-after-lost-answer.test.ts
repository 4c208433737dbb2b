import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Payment } from '../../src/db/entities/payment.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * One capture after a lost answer. A seat or plan change charged to the saved card: the gateway
 * captures, then its answer is a 500 and its notification never arrives, so the change waits
 * with its payment `outcome_unknown`. The customer asks again. The retry asks the gateway about
 * the earlier order first: it was captured, so the change is made with that money, and nothing
 * is voided and nothing is captured a second time.
 */
const SEATS = { slug: 'seats', name: 'Team seats', description: 'Per seat', price: 40000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, per_unit: true };

describe.each(DATABASES)('a change retried after the gateway lost its answer (%s)', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans([...STANDARD_PLANS, SEATS]);
  });
  afterAll(() => server?.stop());

  const sim = () => server.running.billing.simulator!;
  /** The gateway charges, then its answer is a 500 and its notification never arrives. */
  const loseNextChargeAnswer = async () =>
    expect((await server.request('POST', '/_simulator/faults', { body: { mode: 'http_500', when: 'after', count: 1, operations: ['charge'], notify: false } })).status).toBe(200);
  /** Every gateway operation on the user's card orders after the first payment: what moved money, and what undid it. */
  const cardOperations = async (user: TestUser, after: string) => {
    const orders = (await dbOf(server).find(Payment, { user: user.id, paymentType: 'credit_card' })).map((p) => p.orderId).filter((o) => o !== after);
    return orders.map((o) => sim().transaction(o)).filter((tx) => tx !== undefined).map((tx) => tx!.history.map((h) => h.transaction_status));
  };

  async function cardSubscription(user: TestUser, body: Record<string, unknown>) {
    const created = await subscribe(server, user, { payment_type: 'credit_card', token: 'sim-card-accept-1', ...body });
    expect(created.status, created.text).toBe(201);
    expect(created.body.payment.status).toBe('settled');
    return { id: created.body.subscription.id as string, firstOrder: created.body.payment.order_id as string };
  }

  it('three more seats: the first answer lost, the retry adds the seats with the captured charge; one capture, no void', async () => {
    const user: TestUser = await server.createUser();
    const { id, firstOrder } = await cardSubscription(user, { plan_id: 'seats', quantity: 2 });
    await loseNextChargeAnswer();
    const lost = await server.api('POST', `/subscriptions/${id}/change-quantity/`, { auth: user, body: { quantity: 5 } });
    expect(lost.status, lost.text).toBe(503);
    expect(await dbOf(server).count(Payment, { user: user.id, status: 'pending', outcomeUnknown: true })).toBe(1);

    const retry = await server.api('POST', `/subscriptions/${id}/change-quantity/`, { auth: user, body: { quantity: 5 } });
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body.subscription).toMatchObject({ quantity: 5, status: 'active' });
    expect(await cardOperations(user, firstOrder)).toEqual([['capture']]);
    const payments = await dbOf(server).find(Payment, { user: user.id }, { orderBy: { createdAt: 'asc' } });
    expect(payments.map((p) => p.status)).toEqual(['settled', 'settled']);
  });

  it('an upgrade: the first answer lost, the retry finds the plan changed with the captured charge; one capture, no void', async () => {
    const user: TestUser = await server.createUser();
    const { id, firstOrder } = await cardSubscription(user, { plan_id: 'basic-monthly' });
    await loseNextChargeAnswer();
    const lost = await server.api('POST', `/subscriptions/${id}/change-plan/`, { auth: user, body: { plan_id: 'pro-monthly' } });
    expect(lost.status, lost.text).toBe(503);

    const retry = await server.api('POST', `/subscriptions/${id}/change-plan/`, { auth: user, body: { plan_id: 'pro-monthly' } });
    // The change was made with the captured money: asking for it again is asking for the plan it is on.
    expect(retry.status, retry.text).toBe(409);
    expect(retry.body.detail).toBe('The subscription is already on pro-monthly.');
    const now = (await server.api('GET', `/subscriptions/${id}/`, { auth: user })).body;
    expect(now).toMatchObject({ plan: { slug: 'pro-monthly' }, status: 'active', pending_change: null });
    expect(await cardOperations(user, firstOrder)).toEqual([['capture']]);
  });
});
