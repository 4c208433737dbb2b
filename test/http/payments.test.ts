import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Payment, Refund } from '../../src/db/entities/payment.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { BANK_REJECT_REASON } from '../../src/simulator/index.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import {
  activeSubscription,
  dbOf,
  eventually,
  fundWallet,
  notificationTypes,
  openInvoice,
  simulate,
  storedCounts,
  subscribe,
  walletBalance,
  type TestUser,
} from '../helpers/subscriptions.js';

describe.each(DATABASES)('payments on %s', (kind) => {
  let server: TestServer;
  let user: TestUser;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  const newUser = async () => (user = await server.createUser());
  const getPayment = (id: string, as: TestUser = user) => server.api('GET', `/payments/${id}/`, { auth: as });
  const getSub = (id: string) => server.api('GET', `/subscriptions/${id}/`, { auth: user });
  const charge = (subscriptionId: string, as: TestUser = user, headers?: Record<string, string>) =>
    server.api('POST', '/payments/charge/', { auth: as, body: { subscription_id: subscriptionId }, headers });
  const refund = (id: string, body?: unknown, as: TestUser = user) => server.api('POST', `/payments/${id}/refund/`, { auth: as, body });
  const ids = (res: { body: { results: { id: string }[] } }) => res.body.results.map((p) => p.id);

  describe('GET /payments/ and /payments/{id}/', () => {
    it("lists only the user's payments, with status and payment_type filters, both orderings and pages", async () => {
      await newUser();
      const stranger = await server.createUser();
      await subscribe(server, stranger, { plan_id: 'basic-monthly', payment_type: 'qris' });

      const first = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'qris' }); // 150 000, replaced below
      const second = await subscribe(server, user, { plan_id: 'weekly', payment_type: 'bank_transfer' }); // 20 000
      await simulate(server, second.body.payment.order_id, 'settle');
      const third = await charge(second.body.subscription.id);
      expect(third.status).toBe(409); // nothing due once paid
      const p = [first.body.payment.id, second.body.payment.id];

      const all = await server.api('GET', '/payments/', { auth: user });
      expect(all.status).toBe(200);
      expect(all.body.count).toBe(2);
      expect(ids(all)).toEqual([...p].reverse());
      expect(ids(await server.api('GET', '/payments/?ordering=created_at', { auth: user }))).toEqual(p);
      expect(ids(await server.api('GET', '/payments/?ordering=gross_amount', { auth: user }))).toEqual([p[1], p[0]]);
      expect(ids(await server.api('GET', '/payments/?ordering=-gross_amount', { auth: user }))).toEqual([p[0], p[1]]);
      expect(ids(await server.api('GET', '/payments/?status=settled', { auth: user }))).toEqual([p[1]]);
      expect(ids(await server.api('GET', '/payments/?status=canceled', { auth: user }))).toEqual([p[0]]);
      expect(ids(await server.api('GET', '/payments/?payment_type=qris', { auth: user }))).toEqual([p[0]]);
      const page = await server.api('GET', '/payments/?page_size=1&page=2', { auth: user });
      expect(page.body).toMatchObject({ count: 2, next: null, previous: expect.stringMatching(/page=1/) });
      expect(ids(page)).toHaveLength(1);
      expect((await server.api('GET', '/payments/?ordering=amount', { auth: user })).status).toBe(400);
    });

    it('detail includes payment_details; another user gets 404; a malformed id names nothing (404)', async () => {
      await newUser();
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'echannel' });
      const res = await getPayment(created.body.payment.id);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(created.body.payment);
      expect(res.body.payment_details).toMatchObject({ bank: 'mandiri', bill_key: expect.any(String) });
      const stranger = await server.createUser();
      expect((await getPayment(created.body.payment.id, stranger)).status).toBe(404);
      expect((await server.api('GET', '/payments/nope/', { auth: user })).status).toBe(404);
    });
  });

  describe('POST /payments/charge/', () => {
    it('charges the open invoice again: a new pending payment, the earlier one canceled here and at the gateway', async () => {
      await newUser();
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer', metadata: { bank: 'bri' } });
      const oldOrder = created.body.payment.order_id;
      const res = await charge(created.body.subscription.id);
      expect(res.status).toBe(201);
      const payment = res.body.payment;
      expect(payment).toMatchObject({
        status: 'pending',
        invoice_id: created.body.payment.invoice_id,
        gross_amount: '50000.00',
        payment_type: 'bank_transfer',
        payment_details: { bank: 'bri', va_number: expect.any(String) },
      });
      expect(payment.order_id).not.toBe(oldOrder);
      expect((await getPayment(created.body.payment.id)).body.status).toBe('canceled');
      expect(server.running.billing.simulator!.transaction(oldOrder)!.transaction_status).toBe('cancel');
      // The gateway's cancel notification for the old payment does not make the subscription past due.
      await eventually(async () => ((await dbOf(server).count(WebhookLog, { orderId: oldOrder, transactionStatus: 'cancel', status: { $in: ['processed', 'duplicate'] } })) > 0 ? true : undefined), 'the cancel notification');
      expect((await getSub(created.body.subscription.id)).body.status).toBe('pending');

      await simulate(server, payment.order_id, 'settle');
      expect((await getSub(created.body.subscription.id)).body.status).toBe('active');
      expect((await server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: user })).body.status).toBe('paid');
    });

    it('revives a never-paid past_due subscription once the new payment settles', async () => {
      await newUser();
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'gopay' });
      await simulate(server, created.body.payment.order_id, 'expire');
      expect((await getSub(created.body.subscription.id)).body.status).toBe('past_due');
      const res = await charge(created.body.subscription.id);
      expect(res.status).toBe(201);
      await simulate(server, res.body.payment.order_id, 'settle');
      expect((await getSub(created.body.subscription.id)).body.status).toBe('active');
      expect(await notificationTypes(server, user)).toEqual(expect.arrayContaining(['payment_pending', 'subscription_past_due', 'subscription_activated']));
    });

    it('a wallet subscription pays an open invoice from the wallet at once, or answers 409 insufficient_funds', async () => {
      await newUser();
      await fundWallet(server, user, '50000.00');
      const { subscription } = await activeSubscription(server, user, 'basic-monthly', 'wallet');
      const invoiceId = await openInvoice(server, subscription.id, '50000.00');
      const before = await storedCounts(server, user);
      const poor = await charge(subscription.id);
      expect(poor.status).toBe(409);
      expect(poor.body.code).toBe('insufficient_funds');
      expect(await storedCounts(server, user)).toEqual(before);

      await fundWallet(server, user, '50000.00');
      const res = await charge(subscription.id);
      expect(res.status).toBe(201);
      expect(res.body.payment).toMatchObject({ status: 'settled', payment_type: 'wallet', invoice_id: invoiceId });
      expect(await walletBalance(server, user)).toBe('0.00');
      expect((await server.api('GET', `/invoices/${invoiceId}/`, { auth: user })).body.status).toBe('paid');
    });

    it('a card subscription is charged on its saved card; without a saved card it is 409 invalid_state', async () => {
      await newUser();
      const saved = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'credit_card', token: 'sim-card-accept-9' });
      await openInvoice(server, saved.body.subscription.id, '50000.00');
      const res = await charge(saved.body.subscription.id);
      expect(res.status).toBe(201);
      expect(res.body.payment).toMatchObject({ status: 'settled', payment_type: 'credit_card' });

      await newUser();
      const waiting = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'credit_card', token: 'tok-3ds' });
      const refused = await charge(waiting.body.subscription.id);
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('invalid_state');
    });

    it('nothing due: 409 nothing_due; a canceled subscription: 409 invalid_state; nothing written', async () => {
      await newUser();
      const { subscription } = await activeSubscription(server, user);
      const before = await storedCounts(server, user);
      const none = await charge(subscription.id);
      expect(none.status).toBe(409);
      expect(none.body.code).toBe('nothing_due');
      await server.api('POST', `/subscriptions/${subscription.id}/cancel/`, { auth: user, body: { immediate: true } });
      const canceled = await charge(subscription.id);
      expect(canceled.status).toBe(409);
      expect(canceled.body.code).toBe('invalid_state');
      const after = await storedCounts(server, user);
      expect(after.payments).toBe(before.payments);
    });

    it("bad input: another user's subscription 404, a malformed or missing id 400", async () => {
      await newUser();
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
      const stranger = await server.createUser();
      expect((await charge(created.body.subscription.id, stranger)).status).toBe(404);
      expect((await charge('not-a-uuid')).status).toBe(400);
      const missing = await server.api('POST', '/payments/charge/', { auth: user, body: {} });
      expect(missing.status).toBe(400);
      expect(missing.body.errors[0].field).toBe('subscription_id');
      expect((await storedCounts(server, user)).payments).toBe(1);
    });

    it('Idempotency-Key: the same request replays the same payment; another body is 422', async () => {
      await newUser();
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
      const headers = { 'Idempotency-Key': 'charge-once' };
      const first = await charge(created.body.subscription.id, user, headers);
      const second = await charge(created.body.subscription.id, user, headers);
      expect(first.status).toBe(201);
      expect(second.body).toEqual(first.body);
      expect((await storedCounts(server, user)).payments).toBe(2);
      const other = await subscribe(server, await server.createUser(), { plan_id: 'basic-monthly', payment_type: 'qris' });
      const reused = await charge(other.body.subscription.id, user, headers);
      expect(reused.status).toBe(422);
      expect(reused.body.code).toBe('idempotency_key_reused');
    });

    it('when the gateway refuses the new charge: 502, that payment failed, the invoice still open and chargeable', async () => {
      await newUser();
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
      await server.request('POST', '/_simulator/faults', { body: { mode: 'refuse', count: 1, operations: ['charge'] } });
      const res = await charge(created.body.subscription.id);
      expect(res.status).toBe(502);
      const payments = await dbOf(server).find(Payment, { user: user.id }, { orderBy: { createdAt: 'asc' } });
      expect(payments.map((p) => p.status)).toEqual(['canceled', 'failed']);
      expect((await server.api('GET', `/invoices/${created.body.payment.invoice_id}/`, { auth: user })).body.status).toBe('open');
      expect((await getSub(created.body.subscription.id)).body.status).toBe('pending');
      expect((await charge(created.body.subscription.id)).status).toBe(201);
    });
  });

  describe('POST /payments/{id}/refund/', () => {
    const refundLogs = (orderId: string) =>
      dbOf(server).find(WebhookLog, { orderId, transactionStatus: { $in: ['refund', 'partial_refund'] }, status: { $in: ['processed', 'duplicate'] } });

    it('refunds what remains through the gateway by default, counted once when the notification arrives', async () => {
      await newUser();
      const { payment } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
      const res = await refund(payment.id, { reason: 'not needed' });
      expect(res.status).toBe(200);
      expect(res.body.refund).toEqual({ refund_key: `${payment.order_id}-r1`, amount: '50000.00', status: 'succeeded', gateway_status_code: null, gateway_message: null, destination: 'gateway', method: 'refund' });
      expect(res.body.payment).toMatchObject({ status: 'refunded', refunded_amount: '50000.00' });
      expect(server.running.billing.simulator!.transaction(payment.order_id)!.refunds).toEqual([
        expect.objectContaining({ refund_key: `${payment.order_id}-r1`, refund_amount: 50000, direct: false }),
      ]);
      await eventually(async () => ((await refundLogs(payment.order_id)).length > 0 ? true : undefined), 'the refund notification');
      expect((await getPayment(payment.id)).body).toMatchObject({ status: 'refunded', refunded_amount: '50000.00' });
      expect(await dbOf(server).count(Refund, { payment: payment.id })).toBe(1);
      expect((await server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: user })).body.amount_refunded).toBe('50000.00');
      expect(await notificationTypes(server, user)).toContain('payment_refunded');
    });

    it('partial refunds add up to the whole, each with its own key; the second notification is not a duplicate of the first', async () => {
      await newUser();
      const { payment } = await activeSubscription(server, user, 'basic-monthly', 'qris');
      const first = await refund(payment.id, { amount: 20000 });
      expect(first.body.payment).toMatchObject({ status: 'partially_refunded', refunded_amount: '20000.00' });
      const second = await refund(payment.id, { amount: '30000.00' });
      expect(second.body.refund.refund_key).toBe(`${payment.order_id}-r2`);
      expect(second.body.payment).toMatchObject({ status: 'refunded', refunded_amount: '50000.00' });
      await eventually(async () => ((await refundLogs(payment.order_id)).length >= 2 ? true : undefined), 'both refund notifications');
      expect((await getPayment(payment.id)).body.refunded_amount).toBe('50000.00');
      const more = await refund(payment.id, { amount: 1 });
      expect(more.status).toBe(409);
      expect(more.body.code).toBe('invalid_state');
    });

    it('direct: true uses the direct refund; a refund the bank rejects answers 422 refund_refused and refunds nothing', async () => {
      await newUser();
      const { payment } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
      const rejected = await refund(payment.id, { amount: 10000, direct: true, reason: BANK_REJECT_REASON });
      expect(rejected.status).toBe(422);
      expect(rejected.body.code).toBe('refund_refused');
      expect(rejected.body.detail).toContain('202 Refund denied by the bank');
      expect((await getPayment(payment.id)).body).toMatchObject({ status: 'settled', refunded_amount: '0.00' });
      expect(await dbOf(server).findOneOrFail(Refund, { refundKey: `${payment.order_id}-r1` })).toMatchObject({
        status: 'failed',
        gatewayStatusCode: '202',
        gatewayMessage: 'Refund denied by the bank',
      });

      const ok = await refund(payment.id, { amount: 10000, direct: true });
      expect(ok.status).toBe(200);
      expect(ok.body.refund).toMatchObject({ refund_key: `${payment.order_id}-r2`, amount: '10000.00', status: 'succeeded', destination: 'gateway' });
      expect(server.running.billing.simulator!.transaction(payment.order_id)!.refunds).toEqual([expect.objectContaining({ direct: true, refund_amount: 10000 })]);
    });

    it.each(['bank_transfer', 'echannel', 'wallet'])('a %s payment, which the gateway cannot refund, goes back to the wallet', async (paymentType) => {
      await newUser();
      if (paymentType === 'wallet') await fundWallet(server, user, '50000.00');
      const { payment } = await activeSubscription(server, user, 'basic-monthly', paymentType);
      const balance = Number(await walletBalance(server, user));
      const res = await refund(payment.id, { amount: 15000 });
      expect(res.status).toBe(200);
      expect(res.body.refund).toEqual({ refund_key: `${payment.order_id}-r1`, amount: '15000.00', status: 'succeeded', gateway_status_code: null, gateway_message: null, destination: 'wallet', method: 'wallet' });
      expect(res.body.payment).toMatchObject({ status: 'partially_refunded', refunded_amount: '15000.00' });
      expect(Number(await walletBalance(server, user))).toBe(balance + 15000);
      const tx = (await server.api('GET', '/wallet/transactions/', { auth: user })).body.results[0];
      expect(tx).toMatchObject({ kind: 'credit', source: 'refund', amount: '15000.00' });
      if (paymentType !== 'wallet') expect(server.running.billing.simulator!.transaction(payment.order_id)!.refunds).toEqual([]);
    });

    it.each([
      ['more than remains', { amount: 50001 }, 400, 'validation_error'],
      ['a fraction of a rupiah', { amount: '100.50' }, 400, 'validation_error'],
      ['three decimals', { amount: '100.005' }, 400, 'validation_error'],
      ['zero', { amount: 0 }, 400, 'validation_error'],
      ['a negative amount', { amount: '-5' }, 400, 'validation_error'],
      ['an unknown field', { amount: 10, why: 'x' }, 400, 'validation_error'],
    ])('refusing %s: 4xx and nothing written', async (_what, body, status, code) => {
      await newUser();
      const { payment } = await activeSubscription(server, user, 'basic-monthly', 'qris');
      const res = await refund(payment.id, body);
      expect(res.status).toBe(status);
      expect(res.body.code).toBe(code);
      expect(await dbOf(server).count(Refund, { payment: payment.id })).toBe(0);
      expect((await getPayment(payment.id)).body).toMatchObject({ status: 'settled', refunded_amount: '0.00' });
    });

    it("a pending payment cannot be refunded (409); another user's payment is 404", async () => {
      await newUser();
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
      const res = await refund(created.body.payment.id);
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('invalid_state');
      const { payment } = await activeSubscription(server, await server.createUser().then((u) => (user = u)), 'basic-monthly', 'qris');
      const stranger = await server.createUser();
      expect((await refund(payment.id, undefined, stranger)).status).toBe(404);
      expect(await dbOf(server).count(Refund, { payment: { user: stranger.id } })).toBe(0);
    });
  });

  describe('GET /payments/{id}/check-status/', () => {
    it('answers the local status beside the gateway status object', async () => {
      await newUser();
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
      const res = await server.api('GET', `/payments/${created.body.payment.id}/check-status/`, { auth: user });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        local_status: 'pending',
        gateway_status: { transaction_status: 'pending', status_code: '201', order_id: created.body.payment.order_id, gross_amount: '50000.00' },
      });
    });

    it('a wallet payment has no gateway transaction: transaction_status not_found', async () => {
      await newUser();
      await fundWallet(server, user, '50000.00');
      const { payment } = await activeSubscription(server, user, 'basic-monthly', 'wallet');
      const res = await server.api('GET', `/payments/${payment.id}/check-status/`, { auth: user });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ local_status: 'settled', gateway_status: { transaction_status: 'not_found', status_code: '404' } });
    });

    it("another user's payment is 404", async () => {
      await newUser();
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
      const stranger = await server.createUser();
      expect((await server.api('GET', `/payments/${created.body.payment.id}/check-status/`, { auth: stranger })).status).toBe(404);
    });
  });
});

describe.each(DATABASES)('check-status is read-only (notifications lost) on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind, { env: { GATEWAY_NOTIFICATION_URL: 'http://127.0.0.1:9/nowhere/' } });
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  it('shows a settlement the webhook never delivered without applying it', async () => {
    const user = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
    await simulate(server, created.body.payment.order_id, 'settle');
    const res = await server.api('GET', `/payments/${created.body.payment.id}/check-status/`, { auth: user });
    expect(res.body).toMatchObject({ local_status: 'pending', gateway_status: { transaction_status: 'settlement', status_code: '200' } });
    expect((await server.api('GET', `/payments/${created.body.payment.id}/`, { auth: user })).body.status).toBe('pending');
    expect((await server.api('GET', `/subscriptions/${created.body.subscription.id}/`, { auth: user })).body.status).toBe('pending');
  });
});
