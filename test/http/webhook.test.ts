import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Notification, type NotificationType } from '../../src/db/entities/notification.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Topup } from '../../src/db/entities/topup.js';
import { Wallet, WalletTransaction } from '../../src/db/entities/wallet.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { computeSignature } from '../../src/gateway/signature.js';
import { DATABASES } from '../helpers/database.js';
import { makeSubscriptionWithPayment, makeTopup, signedNotification } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe.each(DATABASES)('POST /webhook/notification/ on %s', (kind) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer(kind);
    key = server.config.gateway.serverKey;
  });
  afterAll(() => server?.stop());

  const em = (): EntityManager => server.running.billing.orm.em.fork() as EntityManager;
  const post = (body: unknown, headers?: Record<string, string>) => server.api('POST', '/webhook/notification/', { body, headers });
  const postRaw = (rawBody: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    server.api('POST', '/webhook/notification/', { rawBody, headers });
  const notify = (fields: Parameters<typeof signedNotification>[1]) => post(signedNotification(key, fields));

  async function paymentState(orderId: string) {
    return em().findOneOrFail(Payment, { orderId }, { populate: ['subscription', 'invoice'] });
  }
  async function notificationTypes(userId: string): Promise<NotificationType[]> {
    const rows = await em().find(Notification, { user: userId, channel: 'in_app' }, { orderBy: { createdAt: 'asc' } });
    return rows.map((n) => n.notificationType);
  }
  async function log(id: string) {
    return em().findOneOrFail(WebhookLog, id);
  }
  async function newSubscription(overrides: Parameters<typeof makeSubscriptionWithPayment>[1] = {}) {
    return makeSubscriptionWithPayment(em(), overrides);
  }

  describe('SUB- orders', () => {
    it('settlement: activates the subscription, pays the invoice and logs the notification as processed', async () => {
      const { payment, user } = await newSubscription();
      const body = signedNotification(key, { order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00', fraud_status: 'accept' });
      const raw = JSON.stringify(body);
      const res = await postRaw(raw);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok', webhook_log_id: expect.any(String) });

      const after = await paymentState(payment.orderId);
      expect(after.status).toBe('settled');
      expect(after.paidAt).not.toBeNull();
      expect(after.transactionId).toBe(`tx-${payment.orderId}`);
      expect(after.invoice!.status).toBe('paid');
      expect(after.subscription!.status).toBe('active');
      expect(after.subscription!.currentPeriodEnd).not.toBeNull();
      expect(await notificationTypes(user.id)).toEqual(['payment_succeeded', 'subscription_activated']);

      const entry = await log(res.body.webhook_log_id);
      expect(entry).toMatchObject({
        status: 'processed',
        orderId: payment.orderId,
        transactionStatus: 'settlement',
        payload: raw,
        ipAddress: '127.0.0.1',
        attempts: 1,
        source: 'gateway',
        error: null,
      });
      expect(entry.processedAt).not.toBeNull();
    });

    it('the same settlement again is a duplicate and changes nothing', async () => {
      const { payment, user } = await newSubscription();
      const body = signedNotification(key, { order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' });
      expect((await post(body)).body.status).toBe('ok');
      const again = await post(body);
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('duplicate');
      const entry = await log(again.body.webhook_log_id);
      expect(entry.status).toBe('duplicate');
      expect(entry.attempts).toBe(1);
      expect(entry.processedAt).toBeNull();
      expect(await notificationTypes(user.id)).toEqual(['payment_succeeded', 'subscription_activated']);
      expect((await paymentState(payment.orderId)).subscription!.cyclesCompleted).toBe(1);
    });

    it('capture with fraud_status accept activates a card subscription', async () => {
      const { payment } = await newSubscription({ payment: { paymentType: 'credit_card' } });
      const res = await notify({ order_id: payment.orderId, transaction_status: 'capture', fraud_status: 'accept', gross_amount: '150000.00', payment_type: 'credit_card' });
      expect(res.body.status).toBe('ok');
      const after = await paymentState(payment.orderId);
      expect(after.status).toBe('settled');
      expect(after.fraudStatus).toBe('accept');
      expect(after.invoice!.status).toBe('paid');
      expect(after.subscription!.status).toBe('active');
    });

    it('capture challenge keeps the payment pending; the later capture accept is a second capture, not a duplicate', async () => {
      const { payment, user } = await newSubscription({ payment: { paymentType: 'credit_card' } });
      const held = await notify({ order_id: payment.orderId, transaction_status: 'capture', fraud_status: 'challenge', gross_amount: '150000.00' });
      expect(held.status).toBe(200);
      expect(held.body.status).toBe('ok');
      let after = await paymentState(payment.orderId);
      expect(after.status).toBe('pending');
      expect(after.fraudStatus).toBe('challenge');
      expect(after.subscription!.status).toBe('pending');
      expect(after.invoice!.status).toBe('open');

      const accepted = await notify({ order_id: payment.orderId, transaction_status: 'capture', fraud_status: 'accept', gross_amount: '150000.00' });
      expect(accepted.body.status).toBe('ok');
      after = await paymentState(payment.orderId);
      expect(after.status).toBe('settled');
      expect(after.fraudStatus).toBe('accept');
      expect(after.subscription!.status).toBe('active');
      expect(await notificationTypes(user.id)).toEqual(['payment_succeeded', 'subscription_activated']);
    });

    it('pending: creates a payment_pending notification and leaves the payment pending', async () => {
      const { payment, user } = await newSubscription();
      const res = await notify({ order_id: payment.orderId, transaction_status: 'pending', gross_amount: '150000.00' });
      expect(res.body.status).toBe('ok');
      const after = await paymentState(payment.orderId);
      expect(after.status).toBe('pending');
      expect(after.subscription!.status).toBe('pending');
      expect(await notificationTypes(user.id)).toEqual(['payment_pending']);
    });

    it.each([
      ['deny', 'failed'],
      ['cancel', 'canceled'],
      ['expire', 'expired'],
    ] as const)('%s: the payment becomes %s and the subscription past due', async (transactionStatus, paymentStatus) => {
      const { payment, user } = await newSubscription();
      const res = await notify({ order_id: payment.orderId, transaction_status: transactionStatus, gross_amount: '150000.00' });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('ok');
      const after = await paymentState(payment.orderId);
      expect(after.status).toBe(paymentStatus);
      expect(after.subscription!.status).toBe('past_due');
      expect(after.invoice!.status).toBe('open');
      expect(await notificationTypes(user.id)).toEqual(['payment_failed', 'subscription_past_due']);
    });

    it('refund: records the refunded amount and notifies', async () => {
      const { payment, user } = await newSubscription();
      await notify({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' });
      const res = await notify({
        order_id: payment.orderId,
        transaction_status: 'refund',
        gross_amount: '150000.00',
        refund_amount: '150000.00',
        refunds: [{ refund_chargeback_id: 1, refund_amount: '150000.00', refund_key: `rk-${payment.orderId}-1`, reason: 'customer request' }],
      });
      expect(res.body.status).toBe('ok');
      const after = await paymentState(payment.orderId);
      expect(after.status).toBe('refunded');
      expect(after.refundedAmount).toBe('150000.00');
      expect(after.invoice!.amountRefunded).toBe('150000.00');
      expect((await notificationTypes(user.id)).at(-1)).toBe('payment_refunded');
    });

    it('partial_refund: two partial refunds with a rising refund_amount are both applied; the same one twice is a duplicate', async () => {
      const { payment, user } = await newSubscription();
      await notify({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' });
      const first = {
        order_id: payment.orderId,
        transaction_status: 'partial_refund',
        gross_amount: '150000.00',
        refund_amount: '50000.00',
        refunds: [{ refund_amount: '50000.00', refund_key: `rk-${payment.orderId}-a` }],
      };
      expect((await notify(first)).body.status).toBe('ok');
      let after = await paymentState(payment.orderId);
      expect(after.status).toBe('partially_refunded');
      expect(after.refundedAmount).toBe('50000.00');

      const repeated = await notify(first);
      expect(repeated.body.status).toBe('duplicate');
      expect((await paymentState(payment.orderId)).refundedAmount).toBe('50000.00');

      const second = await notify({
        ...first,
        refund_amount: '80000.00',
        refunds: [...first.refunds, { refund_amount: '30000.00', refund_key: `rk-${payment.orderId}-b` }],
      });
      expect(second.body.status).toBe('ok');
      after = await paymentState(payment.orderId);
      expect(after.status).toBe('partially_refunded');
      expect(after.refundedAmount).toBe('80000.00');
      const refunds = (await notificationTypes(user.id)).filter((t) => t === 'payment_refunded');
      expect(refunds).toHaveLength(2);
    });

    it('partial refunds without a refunds[] list are applied from the rising refund_amount', async () => {
      const { payment } = await newSubscription();
      await notify({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' });
      expect((await notify({ order_id: payment.orderId, transaction_status: 'partial_refund', gross_amount: '150000.00', refund_amount: '40000.00' })).body.status).toBe('ok');
      expect((await notify({ order_id: payment.orderId, transaction_status: 'refund', gross_amount: '150000.00', refund_amount: '150000.00' })).body.status).toBe('ok');
      const after = await paymentState(payment.orderId);
      expect(after.refundedAmount).toBe('150000.00');
      expect(after.status).toBe('refunded');
    });

    it('a late pending or expire after the settlement changes nothing: the payment never moves backwards', async () => {
      const { payment, user } = await newSubscription();
      await notify({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' });
      const before = await notificationTypes(user.id);
      expect((await notify({ order_id: payment.orderId, transaction_status: 'pending', gross_amount: '150000.00' })).status).toBe(200);
      expect((await notify({ order_id: payment.orderId, transaction_status: 'expire', gross_amount: '150000.00' })).status).toBe(200);
      const after = await paymentState(payment.orderId);
      expect(after.status).toBe('settled');
      expect(after.subscription!.status).toBe('active');
      expect(after.invoice!.status).toBe('paid');
      expect(await notificationTypes(user.id)).toEqual(before);
    });

    it('a late capture challenge after the accepted capture leaves the payment as accepted', async () => {
      const { payment } = await newSubscription({ payment: { paymentType: 'credit_card' } });
      await notify({ order_id: payment.orderId, transaction_status: 'capture', fraud_status: 'accept', gross_amount: '150000.00' });
      expect((await notify({ order_id: payment.orderId, transaction_status: 'capture', fraud_status: 'challenge', gross_amount: '150000.00' })).status).toBe(200);
      const after = await paymentState(payment.orderId);
      expect(after.status).toBe('settled');
      expect(after.fraudStatus).toBe('accept');
      expect(after.gatewayStatus).toBe('capture');
    });

    it('a settlement arriving before its pending: the pending that follows changes nothing', async () => {
      const { payment, user } = await newSubscription();
      await notify({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' });
      await notify({ order_id: payment.orderId, transaction_status: 'pending', gross_amount: '150000.00' });
      expect((await paymentState(payment.orderId)).status).toBe('settled');
      expect(await notificationTypes(user.id)).not.toContain('payment_pending');
    });

    it('a gross_amount that differs from the payment fails with 503 and changes nothing', async () => {
      const { payment } = await newSubscription();
      const res = await notify({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '1000.00' });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'failed', webhook_log_id: expect.any(String) });
      const entry = await log(res.body.webhook_log_id);
      expect(entry.status).toBe('failed');
      expect(entry.error).toMatch(/gross_amount/);
      expect(entry.attempts).toBe(1);
      expect(entry.dedupKey).toBeNull();
      const after = await paymentState(payment.orderId);
      expect(after.status).toBe('pending');
      expect(after.subscription!.status).toBe('pending');
      // The gateway's retry with the right amount is not blocked by the failed attempt.
      expect((await notify({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' })).body.status).toBe('ok');
    });

    it('an order this service never made answers 200 ignored and is logged ignored, changing nothing (a shared merchant account)', async () => {
      const res = await notify({ order_id: 'SUB-DOESNOTEXIST', transaction_status: 'settlement', gross_amount: '150000.00' });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('ignored');
      const entry = await log(res.body.webhook_log_id);
      expect(entry.status).toBe('ignored');
      expect(entry.dedupKey).toBeNull();
      // The gateway's retry of the same notification is ignored again, not an error.
      expect((await notify({ order_id: 'SUB-DOESNOTEXIST', transaction_status: 'settlement', gross_amount: '150000.00' })).body.status).toBe('ignored');
    });

    it('an order with neither prefix answers 200 ignored', async () => {
      const res = await notify({ order_id: 'ORDER-123', transaction_status: 'settlement', gross_amount: '150000.00' });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('ignored');
      expect((await log(res.body.webhook_log_id)).status).toBe('ignored');
    });

    it('a settlement relayed by the gateway simulator end to end is processed', async () => {
      const { payment } = await newSubscription();
      await server.running.billing.gateway.charge({ orderId: payment.orderId, grossAmount: '150000.00', currency: 'IDR', paymentType: 'bank_transfer', bank: 'bca' });
      const acted = await server.running.billing.simulator!.act(payment.orderId, 'settle');
      expect(acted.notification!.http_status).toBe(200);
      expect((await paymentState(payment.orderId)).status).toBe('settled');
    });
  });

  describe('TOPUP- orders', () => {
    async function wallet(userId: string) {
      const w = await em().findOne(Wallet, { user: userId });
      const entries = w ? await em().find(WalletTransaction, { wallet: w }) : [];
      return { balance: w?.balance ?? null, entries };
    }

    it.each(['settlement', 'capture'] as const)('%s: the top-up succeeds and the wallet is credited once, with a ledger entry', async (status) => {
      const topup = await makeTopup(em());
      const res = await notify({ order_id: topup.orderId, transaction_status: status, fraud_status: 'accept', gross_amount: '100000.00' });
      expect(res.body.status).toBe('ok');
      const after = await em().findOneOrFail(Topup, topup.id);
      expect(after.status).toBe('success');
      expect(after.paidAt).not.toBeNull();
      const w = await wallet(topup.user.id);
      expect(w.balance).toBe('100000.00');
      expect(w.entries).toHaveLength(1);
      expect(w.entries[0]).toMatchObject({ kind: 'credit', amount: '100000.00', balanceAfter: '100000.00', source: 'topup', referenceId: topup.id });
      expect(await notificationTypes(topup.user.id)).toEqual(['topup_succeeded']);
    });

    it('capture then settlement of the same top-up credits the wallet once', async () => {
      const topup = await makeTopup(em());
      expect((await notify({ order_id: topup.orderId, transaction_status: 'capture', fraud_status: 'accept', gross_amount: '100000.00' })).body.status).toBe('ok');
      expect((await notify({ order_id: topup.orderId, transaction_status: 'settlement', fraud_status: 'accept', gross_amount: '100000.00' })).status).toBe(200);
      expect((await notify({ order_id: topup.orderId, transaction_status: 'settlement', fraud_status: 'accept', gross_amount: '100000.00' })).body.status).toBe('duplicate');
      const w = await wallet(topup.user.id);
      expect(w.balance).toBe('100000.00');
      expect(w.entries).toHaveLength(1);
    });

    it.each([
      ['deny', 'failed', 'topup_failed'],
      ['cancel', 'failed', 'topup_failed'],
      ['expire', 'expired', 'topup_expired'],
    ] as const)('%s: the top-up becomes %s and the wallet is untouched', async (transactionStatus, topupStatus, notificationType) => {
      const topup = await makeTopup(em());
      const res = await notify({ order_id: topup.orderId, transaction_status: transactionStatus, gross_amount: '100000.00' });
      expect(res.body.status).toBe('ok');
      expect((await em().findOneOrFail(Topup, topup.id)).status).toBe(topupStatus);
      expect((await wallet(topup.user.id)).entries).toHaveLength(0);
      expect(await notificationTypes(topup.user.id)).toEqual([notificationType]);
    });

    it('a late expire after the success changes nothing', async () => {
      const topup = await makeTopup(em());
      await notify({ order_id: topup.orderId, transaction_status: 'settlement', gross_amount: '100000.00' });
      await notify({ order_id: topup.orderId, transaction_status: 'expire', gross_amount: '100000.00' });
      expect((await em().findOneOrFail(Topup, topup.id)).status).toBe('success');
      expect((await wallet(topup.user.id)).balance).toBe('100000.00');
    });

    it('a top-up amount mismatch fails with 503 and credits nothing', async () => {
      const topup = await makeTopup(em());
      const res = await notify({ order_id: topup.orderId, transaction_status: 'settlement', gross_amount: '999999.00' });
      expect(res.status).toBe(503);
      expect((await em().findOneOrFail(Topup, topup.id)).status).toBe('pending');
      expect((await wallet(topup.user.id)).entries).toHaveLength(0);
    });

    it('an unknown top-up order answers 200 ignored', async () => {
      const res = await notify({ order_id: 'TOPUP-NOSUCHORDER', transaction_status: 'settlement', gross_amount: '100000.00' });
      expect(res.status).toBe(200);
      expect((await log(res.body.webhook_log_id)).status).toBe('ignored');
    });
  });

  describe('bad input', () => {
    it('a forged signature answers 403 invalid, is logged invalid and changes nothing', async () => {
      const { payment } = await newSubscription();
      const body = { ...signedNotification(key, { order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' }), signature_key: 'f'.repeat(128) };
      const res = await post(body);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ status: 'invalid', webhook_log_id: expect.any(String) });
      const entry = await log(res.body.webhook_log_id);
      expect(entry.status).toBe('invalid');
      expect(entry.error).toMatch(/signature/);
      expect(entry.error).not.toContain(key);
      expect((await paymentState(payment.orderId)).status).toBe('pending');
    });

    it('a body signed with another key, or altered after signing, is invalid', async () => {
      const { payment } = await newSubscription();
      const otherKey = await post(signedNotification('SB-Mid-server-SOMEONE-ELSE', { order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' }));
      expect(otherKey.status).toBe(403);
      const altered = { ...signedNotification(key, { order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '1.00' }), gross_amount: '150000.00' };
      expect((await post(altered)).status).toBe(403);
      expect((await paymentState(payment.orderId)).status).toBe('pending');
    });

    it.each([
      ['not JSON', '{"order_id": "SUB-1", '],
      ['an array', '[1, 2, 3]'],
      ['a number', '42'],
      ['null', 'null'],
      ['empty', ''],
      ['missing signature_key', JSON.stringify({ order_id: 'SUB-1', transaction_status: 'settlement', status_code: '200', gross_amount: '1.00' })],
      ['gross_amount as a number', JSON.stringify({ order_id: 'SUB-1', transaction_status: 'settlement', status_code: '200', gross_amount: 1, signature_key: 'x' })],
    ])('an unreadable body (%s) answers 400 problem+json and is still logged invalid with the reason', async (_name, raw) => {
      const res = await postRaw(raw);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(res.body.code).toBe('validation_error');
      const id = /webhook log ([0-9a-f-]{36})/.exec(res.body.detail)?.[1];
      expect(id).toBeDefined();
      const entry = await log(id!);
      expect(entry.status).toBe('invalid');
      expect(entry.payload).toBe(raw);
      expect(entry.error).toBeTruthy();
    });

    it('a body with NUL characters and no content type is logged, not a 500', async () => {
      const res = await postRaw('{"order_id":"SUB-\u0000"}\u0000', {});
      expect(res.status).toBe(400);
      const id = /webhook log ([0-9a-f-]{36})/.exec(res.body.detail)![1];
      expect((await log(id)).status).toBe('invalid');
    });

    it('a huge body answers 413 problem+json and the endpoint keeps working', async () => {
      const huge = JSON.stringify({ order_id: 'SUB-1', padding: 'x'.repeat(server.config.maxBodyBytes + 10) });
      const res = await postRaw(huge);
      expect(res.status).toBe(413);
      expect(res.body.code).toBe('payload_too_large');
      const topup = await makeTopup(em());
      expect((await notify({ order_id: topup.orderId, transaction_status: 'settlement', gross_amount: '100000.00' })).body.status).toBe('ok');
    });

    it('a signed notification with an absurdly long order_id is not ours: 200 ignored, never 500', async () => {
      const orderId = `SUB-${'9'.repeat(5000)}`;
      const res = await notify({ order_id: orderId, transaction_status: 'settlement', gross_amount: '150000.00' });
      expect(res.status).toBe(200);
      const entry = await log(res.body.webhook_log_id);
      expect(entry.status).toBe('ignored');
      expect(entry.orderId!.length).toBeLessThanOrEqual(100);
    });

    it('X-Forwarded-For is ignored without TRUST_PROXY', async () => {
      const topup = await makeTopup(em());
      const res = await post(signedNotification(key, { order_id: topup.orderId, transaction_status: 'pending', gross_amount: '100000.00' }), {
        'x-forwarded-for': '203.0.113.9',
      });
      expect((await log(res.body.webhook_log_id)).ipAddress).toBe('127.0.0.1');
    });

    it('the signature is checked against the exact strings sent', async () => {
      const topup = await makeTopup(em());
      // "100000" without decimals is a different signature input than "100000.00" (docs/gateway.md, 'Wire details').
      const statusCode = '200';
      const body = {
        order_id: topup.orderId,
        transaction_status: 'settlement',
        status_code: statusCode,
        gross_amount: '100000',
        signature_key: computeSignature(topup.orderId, statusCode, '100000.00', key),
      };
      expect((await post(body)).status).toBe(403);
      body.signature_key = computeSignature(topup.orderId, statusCode, '100000', key);
      expect((await post(body)).body.status).toBe('ok');
    });
  });
});

describe.each(DATABASES)('webhook edge configurations on %s', (kind) => {
  it("with TRUST_PROXY the sender IP is X-Forwarded-For's last entry, the one the balancer appended", async () => {
    const server = await startTestServer(kind, { env: { TRUST_PROXY: 'true' } });
    try {
      const topup = await makeTopup(server.running.billing.orm.em.fork() as EntityManager);
      const res = await server.api('POST', '/webhook/notification/', {
        body: signedNotification(server.config.gateway.serverKey, { order_id: topup.orderId, transaction_status: 'pending', gross_amount: '100000.00' }),
        // What the sender wrote itself comes first and is not read.
        headers: { 'x-forwarded-for': '198.51.100.66, 203.0.113.9' },
      });
      expect(res.status).toBe(200);
      const entry = await server.running.billing.orm.em.fork().findOneOrFail(WebhookLog, res.body.webhook_log_id);
      expect(entry.ipAddress).toBe('203.0.113.9');
    } finally {
      await server.stop();
    }
  });

  it('when the database cannot store the payload it answers 503 so the gateway retries, never 2xx', async () => {
    const server = await startTestServer(kind);
    try {
      await server.running.billing.orm.close(true);
      const res = await server.api('POST', '/webhook/notification/', {
        body: signedNotification(server.config.gateway.serverKey, { order_id: 'SUB-X', transaction_status: 'settlement', gross_amount: '1.00' }),
      });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'failed', webhook_log_id: null });
    } finally {
      await server.stop().catch(() => undefined);
    }
  });
});
