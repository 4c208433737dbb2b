import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { runCli } from '../helpers/cli.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf, notificationTypes, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * The gateway's notifications go nowhere here (GATEWAY_NOTIFICATION_URL points at a closed
 * port), so whatever happens at the gateway reaches us only through sync.
 */
describe.each(DATABASES)('GET /subscriptions/{id}/sync/ and billing-admin subscriptions sync on %s', (kind) => {
  let server: TestServer;
  let user: TestUser;
  beforeAll(async () => {
    server = await startTestServer(kind, { env: { GATEWAY_NOTIFICATION_URL: 'http://127.0.0.1:9/nowhere/' } });
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  const sync = (id: string, as: TestUser = user) => server.api('GET', `/subscriptions/${id}/sync/`, { auth: as });
  const logsOf = (orderId: string) => dbOf(server).find(WebhookLog, { orderId }, { orderBy: { createdAt: 'asc' } });

  it('a settlement the webhook never delivered: sync activates the subscription through a sync webhook log', async () => {
    user = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    const orderId = created.body.payment.order_id;
    await simulate(server, orderId, 'settle');
    expect((await server.api('GET', `/subscriptions/${created.body.subscription.id}/`, { auth: user })).body.status).toBe('pending');

    const res = await sync(created.body.subscription.id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: created.body.subscription.id, status: 'active', cycles_completed: 1 });
    expect((await server.api('GET', `/payments/${created.body.payment.id}/`, { auth: user })).body.status).toBe('settled');
    expect((await server.api('GET', `/invoices/${created.body.payment.invoice_id}/`, { auth: user })).body.status).toBe('paid');
    const settlement = (await logsOf(orderId)).filter((l) => l.transactionStatus === 'settlement');
    expect(settlement).toEqual([expect.objectContaining({ source: 'sync', status: 'processed', dedupKey: `${orderId}|settlement` })]);
    expect(await notificationTypes(server, user)).toEqual(expect.arrayContaining(['payment_succeeded', 'subscription_activated']));

    // Nothing is pending any more: a second sync changes nothing and logs nothing.
    const logCount = (await logsOf(orderId)).length;
    const again = await sync(created.body.subscription.id);
    expect(again.body.status).toBe('active');
    expect((await logsOf(orderId)).length).toBe(logCount);
  });

  it('a payment still pending at the gateway stays pending', async () => {
    user = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
    const res = await sync(created.body.subscription.id);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('pending');
    // The charge answer already recorded the pending status, so the sync's is a duplicate.
    const pending = (await logsOf(created.body.payment.order_id)).filter((l) => l.transactionStatus === 'pending');
    expect(pending.map((l) => [l.source, l.status])).toEqual([
      ['charge', 'processed'],
      ['sync', 'duplicate'],
    ]);
  });

  it.each([
    ['deny', 'failed'],
    ['expire', 'expired'],
  ])('a %s at the gateway: sync marks the never-paid subscription past due', async (action, paymentStatus) => {
    user = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    await simulate(server, created.body.payment.order_id, action);
    const res = await sync(created.body.subscription.id);
    expect(res.body.status).toBe('past_due');
    expect((await server.api('GET', `/payments/${created.body.payment.id}/`, { auth: user })).body.status).toBe(paymentStatus);
    expect(await notificationTypes(server, user)).toEqual(expect.arrayContaining(['payment_failed', 'subscription_past_due']));
  });

  it('a card captured after 3-D Secure: sync activates it and saves the card for renewals', async () => {
    user = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'credit_card', token: 'tok-3ds-master' });
    expect(created.body.subscription.status).toBe('pending');
    await simulate(server, created.body.payment.order_id, 'capture');
    const res = await sync(created.body.subscription.id);
    expect(res.body.status).toBe('active');
    const stored = await dbOf(server).findOneOrFail(Subscription, created.body.subscription.id);
    expect(stored.cardToken).toMatch(/^sim-card-accept-saved-/);
  });

  it('a challenged capture stays pending until the fraud review accepts it', async () => {
    user = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'credit_card', token: 'sim-card-challenge-1' });
    expect(created.body.payment).toMatchObject({ status: 'pending', fraud_status: 'challenge' });
    expect((await sync(created.body.subscription.id)).body.status).toBe('pending');
    await simulate(server, created.body.payment.order_id, 'capture?fraud_status=accept');
    expect((await sync(created.body.subscription.id)).body.status).toBe('active');
  });

  it('a charge whose answer was lost (outcome unknown) gets its payment instructions back from the sync', async () => {
    user = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer', metadata: { bank: 'bni' } });
    const details = created.body.payment.payment_details;
    // As if the charge had timed out after the gateway created the transaction.
    await dbOf(server).transactional(async (em) => {
      const payment = await em.findOneOrFail(Payment, created.body.payment.id);
      Object.assign(payment, { paymentDetails: {}, transactionId: null, expiresAt: null, outcomeUnknown: true });
    });
    expect((await sync(created.body.subscription.id)).body.status).toBe('pending');
    const payment = await dbOf(server).findOneOrFail(Payment, created.body.payment.id);
    expect(payment).toMatchObject({ outcomeUnknown: false, transactionId: created.body.payment.transaction_id });
    expect(payment.paymentDetails).toMatchObject({ bank: 'bni', va_number: details.va_number });
    expect(payment.expiresAt).not.toBeNull();
  });

  it('when the gateway is unavailable: 503 gateway_unavailable and nothing changes', async () => {
    user = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    await simulate(server, created.body.payment.order_id, 'settle');
    await server.request('POST', '/_simulator/faults', { body: { mode: 'http_500', count: 10, operations: ['status'] } });
    try {
      const res = await sync(created.body.subscription.id);
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('gateway_unavailable');
    } finally {
      await server.request('POST', '/_simulator/faults', { body: { mode: 'none' } });
    }
    expect((await server.api('GET', `/subscriptions/${created.body.subscription.id}/`, { auth: user })).body.status).toBe('pending');
  });

  it("another user's subscription is 404 and is not synced; a malformed id names nothing (404)", async () => {
    user = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    await simulate(server, created.body.payment.order_id, 'settle');
    const stranger = await server.createUser();
    const res = await sync(created.body.subscription.id, stranger);
    expect(res.status).toBe(404);
    expect((await server.api('GET', `/subscriptions/${created.body.subscription.id}/`, { auth: user })).body.status).toBe('pending');
    expect((await server.api('GET', '/subscriptions/xyz/sync/', { auth: user })).status).toBe(404);
  });

  it('billing-admin subscriptions sync [--user] syncs every subscription with a pending payment, with --json', async () => {
    const alice = await server.createUser();
    const bob = await server.createUser();
    const a = await subscribe(server, alice, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    const b = await subscribe(server, bob, { plan_id: 'weekly', payment_type: 'gopay' });
    await simulate(server, a.body.payment.order_id, 'settle');
    await simulate(server, b.body.payment.order_id, 'deny');
    const env = { DATABASE_URL: server.db.url, BILLING_URL: server.url, SESSION_SECRET: 'cli-test' };

    const onlyAlice = await runCli(['subscriptions', 'sync', '--user', alice.username, '--json'], env);
    expect(onlyAlice.code).toBe(0);
    expect(onlyAlice.json.results).toEqual([
      expect.objectContaining({ subscription_id: a.body.subscription.id, username: alice.username, status_before: 'pending', status_after: 'active', result: 'synced' }),
    ]);
    expect((await server.api('GET', `/subscriptions/${b.body.subscription.id}/`, { auth: bob })).body.status).toBe('pending');

    const all = await runCli(['subscriptions', 'sync', '--json'], env);
    expect(all.code).toBe(0);
    const bobs = all.json.results.find((r: { subscription_id: string }) => r.subscription_id === b.body.subscription.id);
    expect(bobs).toMatchObject({ status_before: 'pending', status_after: 'past_due', result: 'synced' });
    expect(all.json.results.find((r: { subscription_id: string }) => r.subscription_id === a.body.subscription.id)).toBeUndefined();
    expect(all.stderr).toMatch(/\[1\/\d+\]/);

    const human = await runCli(['subscriptions', 'sync', '--user', bob.username], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/Nothing to sync/);
  });
});
