import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Payment } from '../../src/db/entities/payment.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 27, "charge outcome unknown" (docs/gateway.md, 'Charges whose outcome is unknown'): Midtrans can answer a charge with a 5xx
 * (its "Sorry, Our system is recovering" body) after it has charged the card. The payment was
 * marked failed and the subscription canceled; the customer tried again and paid twice. Now a
 * 5xx, like a timeout, leaves the payment pending with outcome_unknown, and the customer's next
 * charge asks the gateway first.
 */
describe.each(DATABASES)('a charge whose outcome is unknown (%s)', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  /** The gateway charges, then its answer is a 500 and its notification never arrives. */
  const lostChargeAnswer = () =>
    server.request('POST', '/_simulator/faults', { body: { mode: 'http_500', when: 'after', count: 1, operations: ['charge'], notify: false } });
  const ordersAtGateway = (user: TestUser) =>
    dbOf(server)
      .find(Payment, { user: user.id })
      .then((rows) => rows.filter((p) => server.running.billing.simulator!.transaction(p.orderId) !== undefined).length);

  it('a card charged behind a 500: the payment stays pending with outcome_unknown, nothing is canceled, and the retry finds it paid instead of charging twice', async () => {
    const user: TestUser = await server.createUser();
    await lostChargeAnswer();
    const created = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'credit_card', token: 'sim-card-accept-1' });
    expect(created.status, created.text).toBe(503);
    expect(created.body.code).toBe('gateway_unavailable');
    const [payment] = await dbOf(server).find(Payment, { user: user.id });
    expect(payment).toMatchObject({ status: 'pending', outcomeUnknown: true, failureReason: null });
    const subscriptionId = payment!.subscription!.id;
    const sub = (await server.api('GET', `/subscriptions/${subscriptionId}/`, { auth: user })).body;
    expect(sub.status).toBe('pending');
    expect((await server.api('GET', `/payments/${payment!.id}/`, { auth: user })).body).toMatchObject({ status: 'pending', outcome_unknown: true });
    // The gateway did charge the card.
    expect(['capture', 'settlement']).toContain(server.running.billing.simulator!.transaction(payment!.orderId)!.transaction_status);

    const retry = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: subscriptionId } });
    expect(retry.status, retry.text).toBe(409);
    expect(retry.body.code).toBe('nothing_due');
    expect((await server.api('GET', `/subscriptions/${subscriptionId}/`, { auth: user })).body.status).toBe('active');
    expect((await server.api('GET', `/payments/${payment!.id}/`, { auth: user })).body).toMatchObject({ status: 'settled', outcome_unknown: false });
    expect(await ordersAtGateway(user)).toBe(1);
  });

  it('a QRIS order behind a 500 that the customer then pays (notification lost too): the retry finds it paid; one unpaid is replaced', async () => {
    const user: TestUser = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
    expect(created.status, created.text).toBe(201);
    const subscriptionId = created.body.subscription.id;
    await lostChargeAnswer();
    const charged = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: subscriptionId } });
    expect(charged.status, charged.text).toBe(503);
    const unknown = await dbOf(server).findOneOrFail(Payment, { user: user.id, outcomeUnknown: true });
    expect(unknown.status).toBe('pending');

    // Not paid yet: the next charge asks, finds it pending, and replaces it with a payable order.
    const replaced = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: subscriptionId } });
    expect(replaced.status, replaced.text).toBe(201);
    expect((await dbOf(server).findOneOrFail(Payment, unknown.id)).status).toBe('canceled');
    expect(server.running.billing.simulator!.transaction(unknown.orderId)!.transaction_status).toBe('cancel');

    // This one is paid, and both its answer and its notification are lost.
    await lostChargeAnswer();
    const again = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: subscriptionId } });
    expect(again.status, again.text).toBe(503);
    const lost = await dbOf(server).findOneOrFail(Payment, { user: user.id, outcomeUnknown: true });
    const paid = await server.request('POST', `/_simulator/v2/${lost.orderId}/settle?notify=false`);
    expect(paid.status, paid.text).toBe(200);
    const retry = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: subscriptionId } });
    expect(retry.status, retry.text).toBe(409);
    expect(retry.body.code).toBe('nothing_due');
    expect((await server.api('GET', `/subscriptions/${subscriptionId}/`, { auth: user })).body.status).toBe('active');
    expect((await dbOf(server).find(Payment, { user: user.id, status: 'settled' })).map((p) => p.id)).toEqual([lost.id]);
  });
});
