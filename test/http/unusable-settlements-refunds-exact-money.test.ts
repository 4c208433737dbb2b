import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Notification } from '../../src/db/entities/notification.js';
import { Payment, Refund } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { Topup } from '../../src/db/entities/topup.js';
import { WalletTransaction } from '../../src/db/entities/wallet.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { signedNotification } from '../helpers/factories.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { expectLedgerExact } from '../helpers/expect-ledger-exact.js';
import { dbOf, simulate, subscribe, walletBalance, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 14, items 5-7, as a hostile customer (or a confused gateway) would try them, through the
 * real HTTP API, the webhook and the simulator:
 *   5. no payment is kept silently;
 *   6. the gateway's cumulative refund_amount is the truth, refunds without a key are not added twice;
 *   7. money is exact or refused.
 */
describe.each(DATABASES)('money rules on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(async () => {
    if (server) await expectLedgerExact(server.running.billing.orm);
    await server?.stop();
  });

  const key = () => server.running.billing.config.gateway.serverKey;
  const notifyWebhook = (fields: Parameters<typeof signedNotification>[1]) =>
    server.api('POST', '/webhook/notification/', { body: signedNotification(key(), fields) });
  const creditsOf = (user: TestUser) =>
    dbOf(server).find(WalletTransaction, { wallet: { user: user.id }, kind: 'credit' }, { orderBy: { createdAt: 'asc' } });
  const inApp = (user: TestUser, type: string) => dbOf(server).count(Notification, { user: user.id, channel: 'in_app', notificationType: type as never });

  describe('5. no payment is kept silently', () => {
    it('when an old payment of an invoice a newer payment already paid settles after all, its amount goes to the wallet once', async () => {
      const user = await server.createUser();
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
      expect(created.status, created.text).toBe(201);
      const old = created.body.payment;
      // A new payment for the same invoice cancels the old one (here and at the gateway)…
      const again = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: created.body.subscription.id } });
      expect(again.status, again.text).toBe(201);
      await simulate(server, again.body.payment.order_id, 'settle');
      // …but the customer had paid the old virtual account too, and the gateway says so.
      const late = { order_id: old.order_id, transaction_status: 'settlement', gross_amount: '50000.00' };
      expect((await notifyWebhook(late)).status).toBe(200);

      expect((await server.api('GET', `/payments/${old.id}/`, { auth: user })).body.status).toBe('settled');
      const sub = await dbOf(server).findOneOrFail(Subscription, created.body.subscription.id);
      expect(sub).toMatchObject({ status: 'active', cyclesCompleted: 1 });
      expect(await walletBalance(server, user)).toBe('50000.00');
      const credits = await creditsOf(user);
      expect(credits).toHaveLength(1);
      expect(credits[0]).toMatchObject({ amount: '50000.00', source: 'refund', referenceId: `late-settlement:${old.id}` });
      expect(await inApp(user, 'payment_credited_to_wallet')).toBe(1);

      // The gateway retries the same notification, and a sync asks again: still one credit.
      expect((await notifyWebhook(late)).body.status).toBe('duplicate');
      await server.api('GET', `/subscriptions/${sub.id}/sync/`, { auth: user });
      expect(await walletBalance(server, user)).toBe('50000.00');
      expect(await creditsOf(user)).toHaveLength(1);
      expect(await inApp(user, 'payment_credited_to_wallet')).toBe(1);
    });

    it('when the subscription was canceled before its payment settled, the money goes to the wallet and the subscription stays canceled', async () => {
      const user = await server.createUser();
      const created = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer' });
      const canceled = await server.api('POST', `/subscriptions/${created.body.subscription.id}/cancel/`, { auth: user, body: { immediate: true } });
      expect(canceled.status, canceled.text).toBe(200);
      const late = await notifyWebhook({ order_id: created.body.payment.order_id, transaction_status: 'settlement', gross_amount: '150000.00' });
      expect(late.status).toBe(200);

      const sub = (await server.api('GET', `/subscriptions/${created.body.subscription.id}/`, { auth: user })).body;
      expect(sub.status).toBe('canceled');
      expect(await walletBalance(server, user)).toBe('150000.00');
      expect(await inApp(user, 'payment_credited_to_wallet')).toBe(1);
      const access = await server.api('GET', '/subscriptions/', { auth: user });
      expect(access.body.results.every((s: { status: string }) => s.status === 'canceled')).toBe(true);
    });

    it('the gateway echoing our own cancel after that late settlement is no reversal: the wallet keeps the money', async () => {
      const user = await server.createUser();
      const created = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer' });
      const orderId = created.body.payment.order_id;
      // The simulator's own notification of our cancel is held back: this test sends it itself, late.
      server.running.billing.simulator!.transaction(orderId)!.override_notification_urls = [];
      const canceled = await server.api('POST', `/subscriptions/${created.body.subscription.id}/cancel/`, { auth: user, body: { immediate: true } });
      expect(canceled.status, canceled.text).toBe(200);
      expect(server.running.billing.simulator!.transaction(orderId)!.transaction_status).toBe('cancel');
      // The settlement overtakes the notification that confirms our cancel request.
      expect((await notifyWebhook({ order_id: orderId, transaction_status: 'settlement', gross_amount: '150000.00' })).status).toBe(200);
      const echo = await notifyWebhook({ order_id: orderId, transaction_status: 'cancel', gross_amount: '150000.00' });
      expect(echo.status, echo.text).toBe(200);

      expect((await server.api('GET', `/payments/${created.body.payment.id}/`, { auth: user })).body.status).toBe('settled');
      expect(await walletBalance(server, user)).toBe('150000.00');
      expect(await inApp(user, 'payment_reversed')).toBe(0);
      expect((await server.api('GET', `/subscriptions/${created.body.subscription.id}/`, { auth: user })).body.status).toBe('canceled');
    });

    it('a cancel after the settlement of a payment we never withdrew is still a reversal', async () => {
      const user = await server.createUser();
      const created = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer' });
      const orderId = created.body.payment.order_id;
      await simulate(server, orderId, 'settle');
      const reversal = await notifyWebhook({ order_id: orderId, transaction_status: 'cancel', gross_amount: '150000.00' });
      expect(reversal.status, reversal.text).toBe(200);
      expect((await server.api('GET', `/payments/${created.body.payment.id}/`, { auth: user })).body.status).toBe('reversed');
      expect(await inApp(user, 'payment_reversed')).toBe(1);
    });

    it('when the subscription was replaced by another, the old payment settling later goes to the wallet (the same home)', async () => {
      const user = await server.createUser();
      const first = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'qris' });
      const second = await subscribe(server, user, { plan_id: 'weekly', payment_type: 'bank_transfer' });
      expect(second.status, second.text).toBe(201);
      await simulate(server, second.body.payment.order_id, 'settle');
      expect((await notifyWebhook({ order_id: first.body.payment.order_id, transaction_status: 'settlement', gross_amount: '150000.00' })).status).toBe(200);

      expect(await walletBalance(server, user)).toBe('150000.00');
      expect(await inApp(user, 'payment_credited_to_wallet')).toBe(1);
      const second_ = await dbOf(server).findOneOrFail(Subscription, second.body.subscription.id, { populate: ['plan'] });
      expect(second_.status).toBe('active');
      expect(second_.plan.slug).toBe('weekly');
      expect((await dbOf(server).findOneOrFail(Subscription, first.body.subscription.id)).status).toBe('canceled');
    });

    it('when a canceled top-up is paid after all, the wallet is credited once and the user is told', async () => {
      const user = await server.createUser();
      const topup = await server.api('POST', '/topups/', { auth: user, body: { amount: 75000, payment_type: 'bank_transfer', bank: 'bni' } });
      expect(topup.status, topup.text).toBe(201);
      await simulate(server, topup.body.order_id, 'cancel');
      expect((await server.api('GET', `/topups/${topup.body.id}/`, { auth: user })).body.status).toBe('failed');
      const late = { order_id: topup.body.order_id, transaction_status: 'settlement', gross_amount: '75000.00' };
      expect((await notifyWebhook(late)).status).toBe(200);
      expect((await notifyWebhook(late)).body.status).toBe('duplicate');

      expect((await server.api('GET', `/topups/${topup.body.id}/`, { auth: user })).body.status).toBe('success');
      expect(await walletBalance(server, user)).toBe('75000.00');
      const credits = await creditsOf(user);
      expect(credits).toHaveLength(1);
      expect(credits[0]).toMatchObject({ amount: '75000.00', source: 'topup', referenceId: topup.body.id });
      expect(await inApp(user, 'payment_credited_to_wallet')).toBe(1);
    });
  });

  describe("6. the gateway's cumulative refund_amount is the truth", () => {
    /** A settled 150 000 QRIS payment (the gateway can refund QRIS). */
    async function settledPayment(user: TestUser) {
      const created = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'qris' });
      await simulate(server, created.body.payment.order_id, 'settle');
      return created.body.payment as { id: string; order_id: string };
    }
    const refundNotice = (orderId: string, total: string, refunds: Record<string, unknown>[]) =>
      notifyWebhook({ order_id: orderId, transaction_status: 'partial_refund', gross_amount: '150000.00', refund_amount: total, refunds });
    const refunded = async (user: TestUser, id: string) => (await server.api('GET', `/payments/${id}/`, { auth: user })).body.refunded_amount;

    it('refunds listed without a refund_key are counted once across notifications, and a stale notification lowers nothing', async () => {
      const user = await server.createUser();
      const payment = await settledPayment(user);
      const first = { refund_chargeback_id: 1, refund_amount: '10000.00', created_at: '2026-11-23 10:00:00', reason: 'dashboard' };
      const second = { refund_chargeback_id: 2, refund_amount: '19000.00', created_at: '2026-11-23 11:00:00', reason: 'dashboard' };
      expect((await refundNotice(payment.order_id, '10000.00', [first])).status).toBe(200);
      expect(await refunded(user, payment.id)).toBe('10000.00');
      expect((await refundNotice(payment.order_id, '29000.00', [first, second])).status).toBe(200);
      expect(await refunded(user, payment.id)).toBe('29000.00');
      // The first notification again, as a late retry with another status code: nothing changes.
      expect((await notifyWebhook({ order_id: payment.order_id, transaction_status: 'refund', gross_amount: '150000.00', refund_amount: '10000.00', refunds: [first] })).status).toBe(200);
      expect(await refunded(user, payment.id)).toBe('29000.00');
      const rows = await dbOf(server).find(Refund, { payment: payment.id, status: 'succeeded' });
      expect(rows.reduce((sum, r) => sum + Number(r.amount), 0)).toBe(29000);

      // What remains refundable follows: 150 000 − 29 000.
      const tooMuch = await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: { amount: 121001 } });
      expect(tooMuch.status).toBe(400);
    });

    it('our keyed refund and unkeyed gateway refunds together add up to the cumulative amount', async () => {
      const user = await server.createUser();
      const payment = await settledPayment(user);
      const ours = await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: { amount: 5000, reason: 'test' } });
      expect(ours.status, ours.text).toBe(200);
      expect(await refunded(user, payment.id)).toBe('5000.00');
      const keyed = { refund_chargeback_id: 1, refund_amount: '5000.00', refund_key: ours.body.refund.refund_key };
      const dashboard = { refund_chargeback_id: 2, refund_amount: '7000.00' };
      expect((await refundNotice(payment.order_id, '12000.00', [keyed, dashboard])).status).toBe(200);
      expect((await refundNotice(payment.order_id, '12000.00', [keyed, dashboard])).body.status).toBe('duplicate');
      expect(await refunded(user, payment.id)).toBe('12000.00');
      // A notification that names a key for what came without one before replaces it, not adds to it.
      const named = { ...dashboard, refund_key: 'dashboard-7000' };
      expect((await notifyWebhook({ order_id: payment.order_id, transaction_status: 'refund', gross_amount: '150000.00', refund_amount: '12000.00', refunds: [keyed, named] })).status).toBe(200);
      expect(await refunded(user, payment.id)).toBe('12000.00');
      const stored = await dbOf(server).findOneOrFail(Payment, payment.id);
      expect(stored.status).toBe('partially_refunded');
    });

    it('a partial refund made in the dashboard keeps the subscription; a full one ends it (access never outlives the money)', async () => {
      const user = await server.createUser();
      const payment = await settledPayment(user);
      const status = async () => (await server.api('GET', '/subscriptions/active/', { auth: user })).status;
      expect(await status()).toBe(200);
      const part = { refund_chargeback_id: 1, refund_amount: '50000.00', reason: 'dashboard' };
      expect((await refundNotice(payment.order_id, '50000.00', [part])).status).toBe(200);
      expect(await status()).toBe(200);
      const rest = { refund_chargeback_id: 2, refund_amount: '100000.00', reason: 'dashboard' };
      expect((await notifyWebhook({ order_id: payment.order_id, transaction_status: 'refund', gross_amount: '150000.00', refund_amount: '150000.00', refunds: [part, rest] })).status).toBe(200);
      expect(await refunded(user, payment.id)).toBe('150000.00');
      expect(await status()).toBe(404);
      const subs = await server.api('GET', '/subscriptions/', { auth: user });
      expect(subs.body.results[0]).toMatchObject({ status: 'canceled', cancel_reason: 'refunded' });
    });
  });

  describe('a top-up refunded at the gateway', () => {
    it('leaves the wallet as the refunds arrive, by the cumulative refund_amount, once each', async () => {
      const user = await server.createUser();
      const topup = await server.api('POST', '/topups/', { auth: user, body: { amount: 100000, payment_type: 'qris' } });
      expect(topup.status, topup.text).toBe(201);
      await simulate(server, topup.body.order_id, 'settle');
      expect(await walletBalance(server, user)).toBe('100000.00');
      const refund = (total: string) =>
        notifyWebhook({ order_id: topup.body.order_id, transaction_status: total === '100000.00' ? 'refund' : 'partial_refund', gross_amount: '100000.00', refund_amount: total, refunds: [] });
      expect((await refund('30000.00')).status).toBe(200);
      expect(await walletBalance(server, user)).toBe('70000.00');
      // The same total again with another status (a stale retry): nothing more leaves.
      expect((await notifyWebhook({ order_id: topup.body.order_id, transaction_status: 'refund', gross_amount: '100000.00', refund_amount: '30000.00', refunds: [] })).status).toBe(200);
      expect(await walletBalance(server, user)).toBe('70000.00');
      expect((await refund('100000.00')).status).toBe(200);
      expect(await walletBalance(server, user)).toBe('0.00');
      const debits = await dbOf(server).find(WalletTransaction, { wallet: { user: user.id }, kind: 'debit' });
      expect(debits.map((d) => d.amount).sort()).toEqual(['30000.00', '70000.00']);
      expect(await inApp(user, 'payment_refunded')).toBe(2);
    });

    it('a refund of a top-up still pending here (its settlement lost) credits it first, then takes the refund back; the late settlement changes nothing (long seed 19803)', async () => {
      const user = await server.createUser();
      const topup = await server.api('POST', '/topups/', { auth: user, body: { amount: 100000, payment_type: 'qris' } });
      expect(topup.status, topup.text).toBe(201);
      expect((await notifyWebhook({ order_id: topup.body.order_id, transaction_status: 'partial_refund', gross_amount: '100000.00', refund_amount: '40000.00', refunds: [] })).status).toBe(200);
      const after = (await server.api('GET', `/topups/${topup.body.id}/`, { auth: user })).body;
      expect(after.status).toBe('success');
      expect(await walletBalance(server, user)).toBe('60000.00');
      expect((await notifyWebhook({ order_id: topup.body.order_id, transaction_status: 'settlement', gross_amount: '100000.00' })).status).toBe(200);
      expect(await walletBalance(server, user)).toBe('60000.00');
      const entries = await dbOf(server).find(WalletTransaction, { wallet: { user: user.id } }, { orderBy: { createdAt: 'asc' } });
      expect(entries.map((e) => [e.kind, e.amount])).toEqual([['credit', '100000.00'], ['debit', '40000.00']]);
    });
  });

  describe('7. money is exact or refused', () => {
    const topupRaw = (user: TestUser, amount: string) =>
      server.api('POST', '/topups/', {
        auth: user,
        rawBody: `{"amount": ${amount}, "payment_type": "bank_transfer", "bank": "bni"}`,
        headers: { 'content-type': 'application/json' },
      });

    it('refuses amounts a float would round, or with more decimals than the currency allows, and writes nothing', async () => {
      const user = await server.createUser();
      for (const amount of ['20000.000000000001', '20000.5', '20000.01', '"20000.001"', '"20000.5"', '123456789012345678901234', '1e400', '19999.9999999999999999']) {
        const res = await topupRaw(user, amount);
        expect(res.status, `${amount}: ${res.text}`).toBe(400);
        expect(res.headers.get('content-type')).toMatch(/problem\+json/);
      }
      expect(await dbOf(server).count(Topup, { user: user.id })).toBe(0);
      // Exact amounts are taken as written.
      for (const amount of ['20000', '20000.00', '"20000.00"', '2e4']) {
        const res = await topupRaw(user, amount);
        expect(res.status, `${amount}: ${res.text}`).toBe(201);
        expect(res.body.amount).toBe('20000.00');
      }
    });

    it('refuses a refund amount that is not exact', async () => {
      const user = await server.createUser();
      const created = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'qris' });
      await simulate(server, created.body.payment.order_id, 'settle');
      const res = await server.api('POST', `/payments/${created.body.payment.id}/refund/`, {
        auth: user,
        rawBody: '{"amount": 10000.000000000001}',
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(400);
      expect((await server.api('GET', `/payments/${created.body.payment.id}/`, { auth: user })).body.refunded_amount).toBe('0.00');
    });

    it('refuses a signed notification whose gross_amount differs at any digit (503, logged as failed), then takes the exact one', async () => {
      const user = await server.createUser();
      const topup = await server.api('POST', '/topups/', { auth: user, body: { amount: 150000, payment_type: 'bank_transfer', bank: 'bni' } });
      for (const gross of ['150000.001', '150000.01', '1.5e5']) {
        const res = await notifyWebhook({ order_id: topup.body.order_id, transaction_status: 'settlement', gross_amount: gross });
        expect(res.status, gross).toBe(503);
        const log = await dbOf(server).findOneOrFail(WebhookLog, res.body.webhook_log_id);
        expect(log.status).toBe('failed');
        expect(log.error).toEqual(expect.any(String));
      }
      expect((await server.api('GET', `/topups/${topup.body.id}/`, { auth: user })).body.status).toBe('pending');
      expect(await walletBalance(server, user)).toBe('0.00');

      const exact = await notifyWebhook({ order_id: topup.body.order_id, transaction_status: 'settlement', gross_amount: '150000.00' });
      expect(exact.status).toBe(200);
      expect(await walletBalance(server, user)).toBe('150000.00');
    });
  });
});
