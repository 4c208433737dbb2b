import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import {
  activeSubscription,
  dbOf,
  eventually,
  fundWallet,
  notificationTypes,
  simulate,
  storedCounts,
  subscribe,
  walletBalance,
  type TestUser,
} from '../helpers/subscriptions.js';

const DAY = 24 * 60 * 60 * 1000;

describe.each(DATABASES)('POST /subscriptions/ on %s', (kind) => {
  let server: TestServer;
  let user: TestUser;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  const newUser = async () => (user = await server.createUser());

  describe('with a gateway payment type', () => {
    it('bank_transfer: a pending subscription, an open invoice with its line and a pending payment with a BCA virtual account', async () => {
      await newUser();
      const res = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer' });
      expect(res.status).toBe(201);
      const { subscription, payment } = res.body;
      expect(subscription).toMatchObject({
        user_id: user.id,
        status: 'pending',
        payment_type: 'bank_transfer',
        plan: { slug: 'pro-monthly', price: '150000.00', currency: 'IDR' },
        next_billing_date: null,
        trial_end: null,
        metadata: { bank: 'bca' },
      });
      expect(payment).toMatchObject({ status: 'pending', gross_amount: '150000.00', currency: 'IDR', subscription_id: subscription.id, refunded_amount: '0.00' });
      expect(payment.order_id).toMatch(/^SUB-[0-9A-F]{32}$/);
      expect(payment.payment_details).toEqual({ bank: 'bca', va_number: expect.stringMatching(/^\d+$/), expiry_time: expect.any(String) });
      expect(payment.expires_at).not.toBeNull();

      const invoice = await server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: user });
      expect(invoice.status).toBe(200);
      expect(invoice.body).toMatchObject({ status: 'open', subscription_id: subscription.id, total_amount: '150000.00', subtotal: '150000.00', currency: 'IDR' });
      expect(invoice.body.number).toMatch(/^INV-\d{4}-\d{6}$/);
      expect(invoice.body.lines).toEqual([
        expect.objectContaining({ kind: 'subscription', quantity: 1, unit_amount: '150000.00', amount: '150000.00' }),
      ]);
      // The gateway has the order, for the same amount.
      expect(server.running.billing.simulator!.transaction(payment.order_id)).toMatchObject({ gross_amount: 150000, transaction_status: 'pending' });
      await eventually(async () => ((await notificationTypes(server, user)).includes('payment_pending') ? true : undefined), 'payment_pending');
    });

    it('bank_transfer with metadata.bank bni uses that bank and keeps the metadata', async () => {
      await newUser();
      const res = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer', metadata: { bank: 'bni', campaign: 'spring' } });
      expect(res.status).toBe(201);
      expect(res.body.payment.payment_details.bank).toBe('bni');
      expect(res.body.subscription.metadata).toEqual({ bank: 'bni', campaign: 'spring' });
    });

    it('accepts the plan by UUID as well as by slug', async () => {
      await newUser();
      const plan = (await server.api('GET', '/plans/weekly/')).body;
      const res = await subscribe(server, user, { plan_id: plan.id, payment_type: 'qris' });
      expect(res.status).toBe(201);
      expect(res.body.subscription.plan.slug).toBe('weekly');
    });

    it.each([
      ['echannel', { bank: 'mandiri', bill_key: expect.any(String), biller_code: expect.any(String), expiry_time: expect.any(String) }],
      ['gopay', { qr_code_url: expect.stringMatching(/^http/), deeplink_url: expect.stringMatching(/^gojek:/), expiry_time: expect.any(String) }],
      ['qris', { qr_code_url: expect.stringMatching(/^http/), expiry_time: expect.any(String) }],
      ['shopeepay', { deeplink_url: expect.stringMatching(/^http/), expiry_time: expect.any(String) }],
    ])('%s: payment_details has the payment instructions', async (paymentType, details) => {
      await newUser();
      const res = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: paymentType });
      expect(res.status).toBe(201);
      expect(res.body.payment.payment_details).toEqual(details);
      expect(res.body.subscription.metadata).toEqual({});
    });

    it('settling the payment at the gateway activates the subscription and pays the invoice', async () => {
      await newUser();
      const res = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'gopay' });
      await simulate(server, res.body.payment.order_id, 'settle');
      const sub = (await server.api('GET', `/subscriptions/${res.body.subscription.id}/`, { auth: user })).body;
      expect(sub.status).toBe('active');
      expect(sub.cycles_completed).toBe(1);
      expect(new Date(sub.next_billing_date).getTime()).toBe(new Date(sub.current_period_end).getTime());
      const invoice = (await server.api('GET', `/invoices/${res.body.payment.invoice_id}/`, { auth: user })).body;
      expect(invoice.status).toBe('paid');
      const payment = (await server.api('GET', `/payments/${res.body.payment.id}/`, { auth: user })).body;
      expect(payment.status).toBe('settled');
      expect(await notificationTypes(server, user)).toEqual(expect.arrayContaining(['payment_pending', 'payment_succeeded', 'subscription_activated']));
    });

    it('customer_details default from the user and the given ones win', async () => {
      await newUser();
      const res = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris', customer_details: { first_name: 'Alice', phone: '+628123' } });
      expect(res.status).toBe(201);
      expect(server.running.billing.simulator!.transaction(res.body.payment.order_id)!.customer_details).toEqual({
        first_name: 'Alice',
        last_name: 'User',
        email: `${user.username}@example.com`,
        phone: '+628123',
      });
    });
  });

  describe('with a credit card', () => {
    it('an accepted card is captured at once: active now, card saved, and the later capture notification is a duplicate', async () => {
      await newUser();
      const res = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'credit_card', token: 'sim-card-accept-4811' });
      expect(res.status).toBe(201);
      expect(res.body.subscription.status).toBe('active');
      expect(res.body.payment).toMatchObject({ status: 'settled', fraud_status: 'accept' });
      expect(res.body.payment.payment_details.masked_card).toBeDefined();
      const orderId = res.body.payment.order_id;

      const stored = await dbOf(server).findOneOrFail(Subscription, res.body.subscription.id);
      expect(stored.cardToken).toMatch(/^sim-card-accept/);
      // The gateway's own notification of the capture arrives after the answer and changes nothing.
      const logs = await eventually(async () => {
        const rows = await dbOf(server).find(WebhookLog, { orderId, transactionStatus: 'capture' }, { orderBy: { createdAt: 'asc' } });
        // Recorded first and settled after: wait for both outcomes, not just both rows.
        return rows.length === 2 && rows.every((r) => r.status !== 'received') ? rows : undefined;
      }, 'the capture notification');
      // Whichever of the charge answer and the notification was applied first, the other is the duplicate.
      expect(logs.map((l) => l.source).sort()).toEqual(['charge', 'gateway']);
      expect(logs.map((l) => l.status).sort()).toEqual(['duplicate', 'processed']);
      expect((await notificationTypes(server, user)).filter((t) => t === 'subscription_activated')).toHaveLength(1);
    });

    it('a card that needs 3-D Secure stays pending with a redirect_url until the capture arrives', async () => {
      await newUser();
      const res = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'credit_card', token: 'tok-3ds-visa' });
      expect(res.status).toBe(201);
      expect(res.body.subscription.status).toBe('pending');
      expect(res.body.payment.payment_details.redirect_url).toMatch(/^http/);
      await simulate(server, res.body.payment.order_id, 'capture');
      expect((await server.api('GET', `/subscriptions/${res.body.subscription.id}/`, { auth: user })).body.status).toBe('active');
    });

    it('a denied card fails the payment and the never-paid subscription is past due', async () => {
      await newUser();
      const res = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'credit_card', token: 'sim-card-deny-1' });
      expect(res.status).toBe(201);
      expect(res.body.payment.status).toBe('failed');
      expect(res.body.subscription.status).toBe('past_due');
      // Never paid, so the user may simply subscribe again.
      const again = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'credit_card', token: 'sim-card-accept-2' });
      expect(again.status).toBe(201);
      expect(again.body.subscription.status).toBe('active');
    });

    it('without a token answers 400 and writes nothing', async () => {
      await newUser();
      const res = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'credit_card' });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ code: 'validation_error', errors: [{ field: 'token', message: expect.any(String) }] });
      expect(await storedCounts(server, user)).toMatchObject({ subscriptions: 0, invoices: 0, payments: 0 });
    });
  });

  describe('with the wallet', () => {
    it('pays from the wallet at once: active, invoice paid, balance debited, nothing sent to the gateway', async () => {
      await newUser();
      await fundWallet(server, user, '80000.00');
      const res = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'wallet' });
      expect(res.status).toBe(201);
      expect(res.body.subscription.status).toBe('active');
      expect(res.body.payment).toMatchObject({ status: 'settled', payment_type: 'wallet', gross_amount: '50000.00', transaction_id: null });
      expect(res.body.payment.payment_details).toEqual({ wallet_transaction_id: expect.any(String) });
      expect(await walletBalance(server, user)).toBe('30000.00');
      const invoice = (await server.api('GET', `/invoices/${res.body.payment.invoice_id}/`, { auth: user })).body;
      expect(invoice.status).toBe('paid');
      expect(server.running.billing.simulator!.transaction(res.body.payment.order_id)).toBeUndefined();
      const tx = (await server.api('GET', '/wallet/transactions/', { auth: user })).body.results[0];
      expect(tx).toMatchObject({ kind: 'debit', amount: '50000.00', source: 'payment', reference_id: res.body.payment.id });
    });

    it('without enough funds answers 409 insufficient_funds, writes nothing and uses no invoice number', async () => {
      await newUser();
      await fundWallet(server, user, '10000.00');
      const before = await storedCounts(server, user);
      const res = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'wallet' });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('insufficient_funds');
      expect(await storedCounts(server, user)).toEqual(before);
      expect(await walletBalance(server, user)).toBe('10000.00');

      const lastNumber = async () => (await dbOf(server).find(Invoice, {}, { orderBy: { number: 'desc' }, limit: 1 }))[0]!.number;
      const numberBefore = await lastNumber();
      await fundWallet(server, user, '40000.00');
      const ok = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'wallet' });
      expect(ok.status).toBe(201);
      const next = Number(numberBefore.slice(-6)) + 1;
      expect(await lastNumber()).toBe(`${numberBefore.slice(0, -6)}${String(next).padStart(6, '0')}`);
    });

    it('a plan in a currency the gateway does not take can only be paid from the wallet (400 otherwise)', async () => {
      await newUser();
      const res = await subscribe(server, user, { plan_id: 'usd-monthly', payment_type: 'bank_transfer' });
      expect(res.status).toBe(400);
      expect(res.body.errors[0].field).toBe('payment_type');
      expect(await storedCounts(server, user)).toMatchObject({ subscriptions: 0, invoices: 0, payments: 0 });
    });
  });

  describe('with a trial', () => {
    it('the first trial of a plan: trialing, no payment, no invoice, trial_end in 14 days', async () => {
      await newUser();
      const before = Date.now();
      const res = await subscribe(server, user, { plan_id: 'pro-trial', payment_type: 'bank_transfer' });
      expect(res.status).toBe(201);
      expect(res.body.payment).toBeNull();
      const sub = res.body.subscription;
      expect(sub.status).toBe('trialing');
      const trialEnd = new Date(sub.trial_end).getTime();
      expect(trialEnd).toBeGreaterThanOrEqual(before + 14 * DAY);
      expect(trialEnd).toBeLessThanOrEqual(Date.now() + 14 * DAY);
      expect(sub.next_billing_date).toBe(sub.trial_end);
      expect(sub.current_period_end).toBe(sub.trial_end);
      expect(await storedCounts(server, user)).toMatchObject({ subscriptions: 1, invoices: 0, payments: 0 });
      expect((await server.api('GET', '/subscriptions/active/', { auth: user })).body.id).toBe(sub.id);
    });

    it('a second subscription to the same plan gets no second trial', async () => {
      await newUser();
      const first = await subscribe(server, user, { plan_id: 'pro-trial', payment_type: 'qris' });
      expect(first.body.subscription.status).toBe('trialing');
      const cancel = await server.api('POST', `/subscriptions/${first.body.subscription.id}/cancel/`, { auth: user, body: { immediate: true } });
      expect(cancel.body.status).toBe('canceled');
      const second = await subscribe(server, user, { plan_id: 'pro-trial', payment_type: 'qris' });
      expect(second.status).toBe(201);
      expect(second.body.subscription.status).toBe('pending');
      expect(second.body.subscription.trial_end).toBeNull();
      expect(second.body.payment.gross_amount).toBe('150000.00');
    });
  });

  describe('one live subscription per user', () => {
    it('a never-paid pending subscription is canceled, its payment canceled at the gateway, and replaced', async () => {
      await newUser();
      const first = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
      const second = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer' });
      expect(second.status).toBe(201);
      const old = (await server.api('GET', `/subscriptions/${first.body.subscription.id}/`, { auth: user })).body;
      expect(old).toMatchObject({ status: 'canceled', cancel_reason: 'replaced' });
      const oldPayment = (await server.api('GET', `/payments/${first.body.payment.id}/`, { auth: user })).body;
      expect(oldPayment.status).toBe('canceled');
      expect((await server.api('GET', `/invoices/${first.body.payment.invoice_id}/`, { auth: user })).body.status).toBe('void');
      expect(server.running.billing.simulator!.transaction(first.body.payment.order_id)!.transaction_status).toBe('cancel');
      const live = await dbOf(server).find(Subscription, { user: user.id, liveUserId: { $ne: null } });
      expect(live.map((s) => s.id)).toEqual([second.body.subscription.id]);
    });

    it('a never-paid past_due subscription is replaced too', async () => {
      await newUser();
      const first = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
      await simulate(server, first.body.payment.order_id, 'expire');
      expect((await server.api('GET', `/subscriptions/${first.body.subscription.id}/`, { auth: user })).body.status).toBe('past_due');
      const second = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
      expect(second.status).toBe(201);
      expect((await server.api('GET', `/subscriptions/${first.body.subscription.id}/`, { auth: user })).body.status).toBe('canceled');
    });

    it.each(['active', 'trialing', 'paused'])('a %s subscription answers 409 subscription_exists and nothing is written', async (status) => {
      await newUser();
      if (status === 'trialing') await subscribe(server, user, { plan_id: 'pro-trial', payment_type: 'qris' });
      else {
        const { subscription } = await activeSubscription(server, user);
        if (status === 'paused') await server.api('POST', `/subscriptions/${subscription.id}/pause/`, { auth: user });
      }
      const before = await storedCounts(server, user);
      const res = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer' });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('subscription_exists');
      expect(await storedCounts(server, user)).toEqual(before);
    });

    it('a past_due subscription that was paid before is not replaced (409)', async () => {
      await newUser();
      const { subscription } = await activeSubscription(server, user);
      // A later payment fails: the subscription falls past due although it was paid once.
      await dbOf(server).transactional(async (em) => {
        const sub = await em.findOneOrFail(Subscription, subscription.id);
        sub.status = 'past_due';
      });
      const res = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer' });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('subscription_exists');
    });

    it('concurrent creations leave exactly one live subscription; the others are replaced or refused', async () => {
      await newUser();
      const results = await Promise.all(
        Array.from({ length: 6 }, () => subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' })),
      );
      for (const r of results) {
        expect([201, 409]).toContain(r.status);
        if (r.status === 409) expect(r.body.code).toBe('subscription_exists');
      }
      expect(results.some((r) => r.status === 201)).toBe(true);
      const live = await dbOf(server).find(Subscription, { user: user.id, liveUserId: { $ne: null } });
      expect(live).toHaveLength(1);
      // Every payment but the live subscription's is canceled: nothing else is left payable.
      const payable = await dbOf(server).find(Payment, { user: user.id, status: 'pending' });
      expect(payable.map((p) => p.subscription!.id)).toEqual([live[0]!.id]);
    });
  });

  it('invoice numbers stay gap-free and unique under concurrent creation by different users', async () => {
    const users = await Promise.all(Array.from({ length: 8 }, () => server.createUser()));
    const results = await Promise.all(users.map((u) => subscribe(server, u, { plan_id: 'weekly', payment_type: 'qris' })));
    expect(results.map((r) => r.status)).toEqual(users.map(() => 201));
    const all = (await dbOf(server).find(Invoice, {}, { orderBy: { number: 'asc' } })).map((i) => Number(i.number.slice(-6)));
    expect(all).toEqual(all.map((_, i) => i + 1));
  });

  describe('bad input answers a 4xx problem and writes nothing', () => {
    it.each([
      ['an unknown plan', { plan_id: 'no-such-plan', payment_type: 'bank_transfer' }, 404, 'not_found'],
      ['an inactive plan', { plan_id: 'legacy', payment_type: 'bank_transfer' }, 404, 'not_found'],
      ['an unknown plan UUID', { plan_id: '00000000-0000-4000-8000-000000000000', payment_type: 'qris' }, 404, 'not_found'],
      ['an unknown payment type', { plan_id: 'basic-monthly', payment_type: 'paypal' }, 400, 'validation_error'],
      ['an unknown bank', { plan_id: 'basic-monthly', payment_type: 'bank_transfer', metadata: { bank: 'hsbc' } }, 400, 'validation_error'],
      ['a missing plan_id', { payment_type: 'bank_transfer' }, 400, 'validation_error'],
      ['an unknown field', { plan_id: 'basic-monthly', payment_type: 'qris', coupon: 'x' }, 400, 'validation_error'],
      ['a malformed email', { plan_id: 'basic-monthly', payment_type: 'qris', customer_details: { email: 'nope' } }, 400, 'validation_error'],
    ])('%s', async (_what, body, status, code) => {
      await newUser();
      const res = await subscribe(server, user, body);
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(res.body.code).toBe(code);
      expect(await storedCounts(server, user)).toMatchObject({ subscriptions: 0, invoices: 0, payments: 0 });
    });

    it('a body that is not JSON', async () => {
      await newUser();
      const res = await server.api('POST', '/subscriptions/', { auth: user, rawBody: '{"plan_id":', headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_error');
    });

    it('without credentials: 401', async () => {
      const res = await server.api('POST', '/subscriptions/', { body: { plan_id: 'basic-monthly', payment_type: 'qris' } });
      expect(res.status).toBe(401);
    });
  });

  describe('Idempotency-Key', () => {
    it('the same key and body replays the first response and creates nothing more', async () => {
      await newUser();
      const body = { plan_id: 'basic-monthly', payment_type: 'bank_transfer' };
      const headers = { 'Idempotency-Key': 'create-1' };
      const first = await subscribe(server, user, body, headers);
      const second = await subscribe(server, user, body, headers);
      expect(first.status).toBe(201);
      expect(second.status).toBe(201);
      expect(second.body).toEqual(first.body);
      expect(await storedCounts(server, user)).toMatchObject({ subscriptions: 1, invoices: 1, payments: 1 });
    });

    it('the same key with another body answers 422 idempotency_key_reused', async () => {
      await newUser();
      const headers = { 'Idempotency-Key': 'create-2' };
      expect((await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' }, headers)).status).toBe(201);
      const res = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'qris' }, headers);
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('idempotency_key_reused');
      expect(await storedCounts(server, user)).toMatchObject({ subscriptions: 1 });
    });
  });
});

describe.each(DATABASES)('POST /subscriptions/ when the gateway fails, on %s', (kind) => {
  let server: TestServer;
  let user: TestUser;
  beforeAll(async () => {
    server = await startTestServer(kind, { env: { GATEWAY_TIMEOUT_MS: '400' } });
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  const fault = (mode: string) => server.request('POST', '/_simulator/faults', { body: { mode, count: 1, operations: ['charge'] } });

  it('a refused charge answers 502 and leaves no live subscription and nothing payable', async () => {
    user = await server.createUser();
    await fault('refuse');
    const res = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('gateway_error');
    const em = dbOf(server);
    const [sub] = await em.find(Subscription, { user: user.id });
    expect(sub).toMatchObject({ status: 'canceled', liveUserId: null, cancelReason: 'payment_rejected' });
    expect(await em.find(Payment, { user: user.id })).toEqual([expect.objectContaining({ status: 'failed' })]);
    expect(await em.find(Invoice, { user: user.id })).toEqual([expect.objectContaining({ status: 'void' })]);
    // The user can simply try again.
    const retry = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    expect(retry.status).toBe(201);
  });

  it('a timed-out charge answers 503 and keeps the payment pending with an unknown outcome', async () => {
    user = await server.createUser();
    await fault('timeout');
    const res = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('gateway_unavailable');
    const em = dbOf(server);
    const [payment] = await em.find(Payment, { user: user.id });
    expect(payment).toMatchObject({ status: 'pending', outcomeUnknown: true });
    const [sub] = await em.find(Subscription, { user: user.id });
    expect(sub!.status).toBe('pending');
    // A sync finds nothing at the gateway and changes nothing; a new attempt replaces the never-paid one.
    const synced = await server.api('GET', `/subscriptions/${sub!.id}/sync/`, { auth: user });
    expect(synced.status).toBe(200);
    expect(synced.body.status).toBe('pending');
    const retry = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    expect(retry.status).toBe(201);
  });
});
