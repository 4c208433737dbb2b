import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Notification } from '../../src/db/entities/notification.js';
import { Topup } from '../../src/db/entities/topup.js';
import { WalletTransaction } from '../../src/db/entities/wallet.js';
import { computeSignature } from '../../src/gateway/signature.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type Credentials, type TestServer } from '../helpers/server.js';
import { expectLedgerExact } from '../helpers/expect-ledger-exact.js';
import { chargeCount, postTopup, settleTopup, simulate, waitForNotification, walletBalance } from '../helpers/topups.js';

describe.each(DATABASES)('top-ups on %s', (kind) => {
  let server: TestServer;
  let alice: Credentials & { id: string };
  let bob: Credentials & { id: string };

  beforeAll(async () => {
    // A short gateway timeout keeps the timeout case quick.
    server = await startTestServer(kind, { env: { GATEWAY_TIMEOUT_MS: '1000' } });
    alice = await server.createUser();
    bob = await server.createUser();
  });
  afterAll(() => server?.stop());
  afterEach(async () => {
    server.running.billing.simulator!.setFault({ mode: 'none' });
    await expectLedgerExact(server.running.billing.orm);
  });

  const em = () => server.running.billing.orm.em.fork();
  const notificationsOf = (userId: string, type: string) => em().find(Notification, { user: userId, notificationType: type as never }, { orderBy: { createdAt: 'desc' } });

  it('creates a pending bank-transfer top-up with payment instructions, and settlement credits the wallet once', async () => {
    const user = await server.createUser();
    const res = await postTopup(server, user, { amount: 100000, payment_type: 'bank_transfer', bank: 'bni' });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ amount: '100000.00', currency: 'IDR', status: 'pending', payment_type: 'bank_transfer', paid_at: null });
    expect(res.body.order_id).toMatch(/^TOPUP-[A-Za-z0-9_~.-]+$/);
    expect(res.body.order_id.length).toBeLessThanOrEqual(50);
    expect(res.body.payment_details).toMatchObject({ bank: 'bni', va_number: expect.stringMatching(/^\d+$/) });
    expect(res.body.payment_details.expiry_time).toBe(res.body.expires_at);
    expect(await walletBalance(server, user)).toBe('0.00');

    // The user is told how to pay.
    const [pending] = await notificationsOf(user.id, 'payment_pending');
    expect(pending).toMatchObject({ channel: 'in_app', status: 'queued' });
    expect(pending.data).toMatchObject({ topup_id: res.body.id, order_id: res.body.order_id, amount: '100000.00', bank: 'bni', va_number: res.body.payment_details.va_number });
    expect(pending.message).toContain(res.body.payment_details.va_number);

    await settleTopup(server, res.body.order_id);
    const detail = await server.api('GET', `/topups/${res.body.id}/`, { auth: user });
    expect(detail.body).toMatchObject({ status: 'success', paid_at: expect.any(String) });
    expect(await walletBalance(server, user)).toBe('100000.00');
    const ledger = await server.api('GET', '/wallet/transactions/', { auth: user });
    expect(ledger.body.results).toEqual([
      expect.objectContaining({ kind: 'credit', amount: '100000.00', balance_after: '100000.00', source: 'topup', reference_id: res.body.id }),
    ]);
    expect(await notificationsOf(user.id, 'topup_succeeded')).toHaveLength(1);

    // The same notification delivered again (Midtrans retries) is a duplicate: no second credit.
    const gross = '100000.00';
    const resent = await server.api('POST', '/webhook/notification/', {
      body: {
        order_id: res.body.order_id,
        transaction_status: 'settlement',
        status_code: '200',
        gross_amount: gross,
        signature_key: computeSignature(res.body.order_id, '200', gross, server.config.gateway.serverKey),
        payment_type: 'bank_transfer',
        transaction_id: 'resent',
      },
    });
    expect(resent.status).toBe(200);
    expect(await walletBalance(server, user)).toBe('100000.00');
    expect(await em().count(WalletTransaction, { wallet: { user: user.id } })).toBe(1);
  });

  it('defaults the bank to BCA and accepts the amount as a decimal string', async () => {
    const res = await postTopup(server, alice, { amount: '25000.00', payment_type: 'bank_transfer' });
    expect(res.status, res.text).toBe(201);
    expect(res.body.amount).toBe('25000.00');
    expect(res.body.payment_details.bank).toBe('bca');
    expect((await em().findOneOrFail(Topup, { id: res.body.id })).bank).toBe('bca');
  });

  it.each([
    ['echannel', { bank: 'mandiri', bill_key: expect.any(String), biller_code: expect.any(String) }],
    ['gopay', { qr_code_url: expect.stringMatching(/^http/), deeplink_url: expect.stringMatching(/^gojek:\/\//) }],
    ['qris', { qr_code_url: expect.stringMatching(/^http/) }],
    ['shopeepay', { deeplink_url: expect.stringMatching(/^http/) }],
  ])('gives %s payment details in the published shape', async (paymentType, details) => {
    const res = await postTopup(server, alice, { amount: 30000, payment_type: paymentType });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ status: 'pending', payment_type: paymentType, payment_details: details });
  });

  it('credits the wallet at once for a card the gateway captures immediately; its notification changes nothing', async () => {
    const user = await server.createUser();
    const res = await postTopup(server, user, { amount: 75000, payment_type: 'credit_card', token: 'sim-card-accept-1' });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', paid_at: expect.any(String), payment_details: { masked_card: expect.any(String) } });
    expect(await walletBalance(server, user)).toBe('75000.00');
    // The simulator notifies the capture shortly after answering; the webhook sees a duplicate.
    expect(await waitForNotification(server, res.body.order_id, 'capture')).toBe(200);
    expect(await walletBalance(server, user)).toBe('75000.00');
    expect(await em().count(WalletTransaction, { wallet: { user: user.id } })).toBe(1);
    expect(await notificationsOf(user.id, 'payment_pending')).toHaveLength(0);
    expect(await notificationsOf(user.id, 'topup_succeeded')).toHaveLength(1);
  });

  it('keeps a card top-up pending through 3-D Secure until the gateway captures it', async () => {
    const user = await server.createUser();
    const res = await postTopup(server, user, { amount: 40000, payment_type: 'credit_card', token: 'tok-needs-3ds' });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ status: 'pending', payment_details: { redirect_url: expect.stringMatching(/^http/) } });
    const [pending] = await notificationsOf(user.id, 'payment_pending');
    expect(pending.message).toContain(res.body.payment_details.redirect_url);
    const captured = await simulate(server, res.body.order_id, 'capture?fraud_status=accept');
    expect(captured.notification.http_status).toBe(200);
    expect(await walletBalance(server, user)).toBe('40000.00');
  });

  it('fails a top-up whose card the gateway denies, without touching the wallet', async () => {
    const user = await server.createUser();
    const res = await postTopup(server, user, { amount: 40000, payment_type: 'credit_card', token: 'sim-card-deny' });
    expect(res.status, res.text).toBe(201);
    expect(res.body.status).toBe('failed');
    expect(await walletBalance(server, user)).toBe('0.00');
    expect(await notificationsOf(user.id, 'topup_failed')).toHaveLength(1);
  });

  it.each([
    ['deny', 'failed', 'topup_failed'],
    ['cancel', 'failed', 'topup_failed'],
    ['expire', 'expired', 'topup_expired'],
  ])('moves a pending top-up on %s to %s and notifies', async (action, status, type) => {
    const user = await server.createUser();
    const res = await postTopup(server, user, { amount: 20000, payment_type: 'bank_transfer' });
    const result = await simulate(server, res.body.order_id, action);
    expect(result.notification.http_status).toBe(200);
    expect((await server.api('GET', `/topups/${res.body.id}/`, { auth: user })).body.status).toBe(status);
    expect(await notificationsOf(user.id, type)).toHaveLength(1);
    expect(await walletBalance(server, user)).toBe('0.00');
  });

  it('lists only the caller’s top-ups, newest first, filtered by status and payment type, paginated', async () => {
    const user = await server.createUser();
    const made: string[] = [];
    for (const [amount, paymentType] of [[10000, 'bank_transfer'], [11000, 'gopay'], [12000, 'bank_transfer'], [13000, 'qris']] as const) {
      const r = await postTopup(server, user, { amount, payment_type: paymentType });
      expect(r.status).toBe(201);
      made.push(r.body.id);
    }
    await settleTopup(server, (await server.api('GET', `/topups/${made[2]}/`, { auth: user })).body.order_id);
    await postTopup(server, bob, { amount: 10000, payment_type: 'bank_transfer' });

    const all = await server.api('GET', '/topups/', { auth: user });
    expect(all.status).toBe(200);
    expect(all.body.count).toBe(4);
    expect(all.body.results.map((t: { id: string }) => t.id).sort()).toEqual([...made].sort());
    const times = all.body.results.map((t: { created_at: string }) => t.created_at);
    expect(times).toEqual([...times].sort().reverse());

    const success = await server.api('GET', '/topups/?status=success', { auth: user });
    expect(success.body.results.map((t: { id: string }) => t.id)).toEqual([made[2]]);
    const transfers = await server.api('GET', '/topups/?payment_type=bank_transfer', { auth: user });
    expect(transfers.body.results.map((t: { id: string }) => t.id).sort()).toEqual([made[0], made[2]].sort());
    const both = await server.api('GET', '/topups/?payment_type=bank_transfer&status=pending', { auth: user });
    expect(both.body.results.map((t: { id: string }) => t.id)).toEqual([made[0]]);

    const page1 = await server.api('GET', '/topups/?page_size=3', { auth: user });
    const page2 = await server.api('GET', '/topups/?page_size=3&page=2', { auth: user });
    expect(page1.body.results).toHaveLength(3);
    expect(page1.body.next).toMatch(/page=2/);
    expect(page2.body.results).toHaveLength(1);
    expect(new Set([...page1.body.results, ...page2.body.results].map((t: { id: string }) => t.id)).size).toBe(4);
    expect((await server.api('GET', '/topups/?page=9', { auth: user })).body).toMatchObject({ count: 4, results: [] });

    expect((await server.api('GET', '/topups/?status=paid', { auth: user })).status).toBe(400);
    expect((await server.api('GET', '/topups/?payment_type=wallet', { auth: user })).status).toBe(400);
    expect((await server.api('GET', '/topups/')).status).toBe(401);
  });

  it('answers 404 for another user’s top-up, an unknown id or a malformed one', async () => {
    const mine = await postTopup(server, alice, { amount: 10000, payment_type: 'bank_transfer' });
    expect((await server.api('GET', `/topups/${mine.body.id}/`, { auth: alice })).status).toBe(200);
    const theirs = await server.api('GET', `/topups/${mine.body.id}/`, { auth: bob });
    expect(theirs.status).toBe(404);
    expect(theirs.body.code).toBe('not_found');
    expect((await server.api('GET', '/topups/00000000-0000-4000-8000-000000000000/', { auth: alice })).status).toBe(404);
    expect((await server.api('GET', '/topups/not-a-uuid/', { auth: alice })).status).toBe(404);
  });

  describe('bad input: a 400 problem, nothing written, nothing charged', () => {
    const cases: [string, unknown, string][] = [
      ['below the minimum', { amount: 9999, payment_type: 'bank_transfer' }, 'amount'],
      ['above the maximum', { amount: 50000001, payment_type: 'bank_transfer' }, 'amount'],
      ['negative', { amount: -10000, payment_type: 'bank_transfer' }, 'amount'],
      ['negative as a string', { amount: '-10000', payment_type: 'bank_transfer' }, 'amount'],
      ['zero', { amount: 0, payment_type: 'bank_transfer' }, 'amount'],
      ['too many decimals', { amount: '10000.001', payment_type: 'bank_transfer' }, 'amount'],
      ['decimals for IDR (number)', { amount: 10000.5, payment_type: 'bank_transfer' }, 'amount'],
      ['decimals for IDR (string)', { amount: '10000.50', payment_type: 'bank_transfer' }, 'amount'],
      ['non-numeric', { amount: 'lots', payment_type: 'bank_transfer' }, 'amount'],
      ['a boolean', { amount: true, payment_type: 'bank_transfer' }, 'amount'],
      ['absurdly long string', { amount: '1'.repeat(200), payment_type: 'bank_transfer' }, 'amount'],
      ['a long string within the contract', { amount: '1'.repeat(25), payment_type: 'bank_transfer' }, 'amount'],
      ['a huge number', { amount: 1e30, payment_type: 'bank_transfer' }, 'amount'],
      ['missing amount', { payment_type: 'bank_transfer' }, 'amount'],
      ['unknown payment type', { amount: 10000, payment_type: 'bitcoin' }, 'payment_type'],
      ['the wallet as payment type', { amount: 10000, payment_type: 'wallet' }, 'payment_type'],
      ['missing payment type', { amount: 10000 }, 'payment_type'],
      ['unknown bank', { amount: 10000, payment_type: 'bank_transfer', bank: 'hsbc' }, 'bank'],
      ['a bank for gopay', { amount: 10000, payment_type: 'gopay', bank: 'bca' }, 'bank'],
      ['a card without a token', { amount: 10000, payment_type: 'credit_card' }, 'token'],
      ['a blank token', { amount: 10000, payment_type: 'credit_card', token: '  ' }, 'token'],
      ['a token for a bank transfer', { amount: 10000, payment_type: 'bank_transfer', token: 'sim-card-accept' }, 'token'],
      ['an unknown field', { amount: 10000, payment_type: 'bank_transfer', currency: 'USD' }, 'currency'],
    ];

    it.each(cases)('%s', async (_name, body, field) => {
      const before = { topups: await em().count(Topup, {}), charges: chargeCount(server) };
      const res = await postTopup(server, alice, body as Record<string, unknown>);
      expect(res.status, res.text).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 400, code: 'validation_error' });
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      expect(await em().count(Topup, {})).toBe(before.topups);
      expect(chargeCount(server)).toBe(before.charges);
    });

    it('names the bounds in the message', async () => {
      const low = await postTopup(server, alice, { amount: 5000, payment_type: 'bank_transfer' });
      expect(low.body.errors).toEqual([{ field: 'amount', message: 'must be at least 10000 IDR' }]);
      const high = await postTopup(server, alice, { amount: 60000000, payment_type: 'bank_transfer' });
      expect(high.body.errors).toEqual([{ field: 'amount', message: 'must be at most 50000000 IDR' }]);
    });

    it('accepts exactly the bounds', async () => {
      expect((await postTopup(server, alice, { amount: 10000, payment_type: 'bank_transfer' })).status).toBe(201);
      expect((await postTopup(server, alice, { amount: '50000000', payment_type: 'bank_transfer' })).status).toBe(201);
    });

    it('refuses a body that is not JSON, or not an object', async () => {
      const broken = await server.api('POST', '/topups/', { auth: alice, rawBody: '{"amount": 10000,', headers: { 'content-type': 'application/json' } });
      expect(broken.status).toBe(400);
      const list = await server.api('POST', '/topups/', { auth: alice, body: [10000] });
      expect(list.status).toBe(400);
      const form = await server.api('POST', '/topups/', { auth: alice, rawBody: 'amount=10000', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(form.status).toBe(415);
    });
  });

  describe('gateway failures', () => {
    it('marks the top-up failed and answers 502 when the gateway refuses it', async () => {
      const user = await server.createUser();
      server.running.billing.simulator!.setFault({ mode: 'refuse', count: 1, operations: ['charge'] });
      const res = await postTopup(server, user, { amount: 15000, payment_type: 'bank_transfer' });
      expect(res.status, res.text).toBe(502);
      expect(res.body.code).toBe('gateway_error');
      const [topup] = await em().find(Topup, { user: user.id });
      expect(topup.status).toBe('failed');
      // The code says what happened; the detail only has to name the order, its wording is free.
      expect(res.body.detail).toContain(topup.orderId);
      expect(await notificationsOf(user.id, 'topup_failed')).toHaveLength(1);
      // Nothing secret leaks into the answer.
      expect(res.text).not.toContain(server.config.gateway.serverKey);
    });

    it('keeps the top-up pending with an unknown outcome when the gateway does not answer in time', async () => {
      const user = await server.createUser();
      server.running.billing.simulator!.setFault({ mode: 'timeout', count: 1, operations: ['charge'] });
      const res = await postTopup(server, user, { amount: 15000, payment_type: 'bank_transfer' });
      expect(res.status, res.text).toBe(503);
      expect(res.body.code).toBe('gateway_unavailable');
      const [topup] = await em().find(Topup, { user: user.id });
      expect(topup).toMatchObject({ status: 'pending', outcomeUnknown: true });
      expect(res.body.detail).toContain(topup.orderId);
      expect((await server.api('GET', '/topups/?status=pending', { auth: user })).body.count).toBe(1);
    });

    it('keeps the top-up pending when the gateway’s answer is unreadable', async () => {
      const user = await server.createUser();
      server.running.billing.simulator!.setFault({ mode: 'malformed', count: 1, operations: ['charge'] });
      const res = await postTopup(server, user, { amount: 15000, payment_type: 'bank_transfer' });
      expect(res.status, res.text).toBe(502);
      expect(res.body.code).toBe('gateway_error');
      const [topup] = await em().find(Topup, { user: user.id });
      expect(topup).toMatchObject({ status: 'pending', outcomeUnknown: true });
    });
  });

  describe('Idempotency-Key', () => {
    it('replays the first top-up for the same key and body, charging once', async () => {
      const user = await server.createUser();
      const body = { amount: 20000, payment_type: 'bank_transfer', bank: 'bri' };
      const charges = chargeCount(server);
      const first = await postTopup(server, user, body, { 'Idempotency-Key': 'topup-key-1' });
      const second = await postTopup(server, user, body, { 'Idempotency-Key': 'topup-key-1' });
      expect(first.status).toBe(201);
      expect(second.status).toBe(201);
      expect(second.body).toEqual(first.body);
      expect(chargeCount(server)).toBe(charges + 1);
      expect(await em().count(Topup, { user: user.id })).toBe(1);

      const other = await postTopup(server, user, { ...body, amount: 30000 }, { 'Idempotency-Key': 'topup-key-1' });
      expect(other.status).toBe(422);
      expect(other.body.code).toBe('idempotency_key_reused');
      expect(await em().count(Topup, { user: user.id })).toBe(1);

      // Keys belong to their user: another user's request under the same key is its own.
      const bobs = await postTopup(server, bob, body, { 'Idempotency-Key': 'topup-key-1' });
      expect(bobs.status).toBe(201);
      expect(bobs.body.id).not.toBe(first.body.id);
    });

    it('replays a validation failure too, and does not remember a gateway failure', async () => {
      const user = await server.createUser();
      const bad = await postTopup(server, user, { amount: 1, payment_type: 'bank_transfer' }, { 'Idempotency-Key': 'topup-key-2' });
      const again = await postTopup(server, user, { amount: 1, payment_type: 'bank_transfer' }, { 'Idempotency-Key': 'topup-key-2' });
      expect([bad.status, again.status]).toEqual([400, 400]);
      expect(again.body).toEqual(bad.body);

      server.running.billing.simulator!.setFault({ mode: 'refuse', count: 1, operations: ['charge'] });
      const body = { amount: 20000, payment_type: 'gopay' };
      const failed = await postTopup(server, user, body, { 'Idempotency-Key': 'topup-key-3' });
      expect(failed.status).toBe(502);
      const retried = await postTopup(server, user, body, { 'Idempotency-Key': 'topup-key-3' });
      expect(retried.status).toBe(201);
      expect(await em().count(Topup, { user: user.id, status: 'failed' })).toBe(1);
      expect(await em().count(Topup, { user: user.id, status: 'pending' })).toBe(1);
    });
  });

  it('works with a session cookie and its CSRF token', async () => {
    const session = await server.login(alice);
    const ok = await server.api('POST', '/topups/', { session, body: { amount: 10000, payment_type: 'qris' } });
    expect(ok.status, ok.text).toBe(201);
    const noCsrf = await server.api('POST', '/topups/', { session, body: { amount: 10000, payment_type: 'qris' }, headers: { 'x-csrf-token': 'wrong' } });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body.code).toBe('csrf_failed');
  });
});
