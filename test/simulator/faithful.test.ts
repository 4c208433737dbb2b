import { afterEach, describe, expect, it, vi } from 'vitest';
import { verifySignature } from '../../src/gateway/signature.js';
import { SimulatorCore } from '../../src/simulator/core.js';
import { MIDTRANS_RETRY_DELAYS_MS, type SimulatorOptions } from '../../src/simulator/index.js';
import { completeThreeDs } from '../helpers/three-ds.js';
import { SERVER_KEY, orderId, startHarness, type Harness } from '../helpers/simulator.js';

/*
 * The simulator against Midtrans where the service depends on how the gateway really behaves
 * (docs/gateway.md, 'How the simulator behaves'): 3-D Secure only when asked, time at the gateway
 * (expiry, card settlement the day after), refunds of an unsettled capture, two refund
 * notifications, the notification retry schedule, and a gateway that does the work and loses the
 * answer.
 */

const harnesses: Harness[] = [];
async function harness(opts: Partial<SimulatorOptions> = {}): Promise<Harness> {
  const h = await startHarness({ sweepIntervalMs: 0, ...opts });
  harnesses.push(h);
  return h;
}
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.stop();
  vi.useRealTimers();
});

const post = (h: Harness, path: string, body?: unknown, headers?: Record<string, string>) =>
  h.request('POST', `/_simulator${path}`, { body: body === undefined ? undefined : JSON.stringify(body), headers });
const card = (id: string, token: string, extra: Record<string, unknown> = {}) => ({
  payment_type: 'credit_card',
  transaction_details: { order_id: id, gross_amount: 150000 },
  credit_card: { token_id: token, ...extra },
});
const statuses = (h: Harness, id: string) => h.receiver.for(id).map((n) => [n.body['transaction_status'], n.body['fraud_status'], n.body['status_code']]);

describe('3-D Secure', () => {
  it('when_asked: every charge asking for authentication waits on the page; the page completes it and notifies with the saved token', async () => {
    const h = await harness({ threeDsMode: 'when_asked' });
    const id = orderId('3ds');
    const res = await post(h, '/v2/charge', card(id, 'sim-card-accept-4811', { authentication: true, save_token_id: true }));
    expect(res.json).toMatchObject({ status_code: '201', transaction_status: 'pending', redirect_url: expect.stringContaining('/_simulator/3ds/') });
    expect(res.json['saved_token_id']).toBeUndefined();

    const done = await completeThreeDs(res.json['redirect_url'] as string, 'authenticate');
    expect(done).toBe('capture');
    await h.receiver.waitFor(() => h.receiver.for(id).length === 2);
    const [pending, captured] = h.receiver.for(id);
    expect(pending!.body).toMatchObject({ transaction_status: 'pending', status_code: '201' });
    expect(captured!.body).toMatchObject({
      transaction_status: 'capture',
      fraud_status: 'accept',
      status_code: '200',
      saved_token_id: expect.any(String),
      saved_token_id_expired_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
    });
    expect(verifySignature(captured!.body, SERVER_KEY)).toBe(true);
    // The status call agrees (the signature does not cover saved_token_id).
    const status = await h.request('GET', `/_simulator/v2/${id}/status`);
    expect(status.json['saved_token_id']).toBe(captured!.body['saved_token_id']);

    // The saved token charges a merchant-initiated renewal without 3-D Secure.
    const renewal = orderId('3ds-renew');
    const again = await post(h, '/v2/charge', card(renewal, captured!.body['saved_token_id'] as string, { authentication: false, initiated_by: 'merchant' }));
    expect(again.json).toMatchObject({ status_code: '200', transaction_status: 'capture', fraud_status: 'accept' });
    expect(again.json['redirect_url']).toBeUndefined();
  });

  it('when_asked: the token still picks the outcome after authentication; a failed authentication denies; no save, no token', async () => {
    const h = await harness({ threeDsMode: 'when_asked' });
    const cases = [
      ['sim-card-deny-1', 'authenticate', 'deny'],
      ['sim-card-challenge-1', 'authenticate', 'capture'],
      ['sim-card-accept-1', 'fail', 'deny'],
      ['tok-any-card', 'authenticate', 'capture'],
    ] as const;
    for (const [token, result, expected] of cases) {
      const id = orderId('3ds');
      const res = await post(h, '/v2/charge', card(id, token, { authentication: true }));
      expect(res.json['transaction_status']).toBe('pending');
      expect(await completeThreeDs(res.json['redirect_url'] as string, result)).toBe(expected);
      const tx = h.sim.transaction(id)!;
      expect(tx.card!.saved_token_id).toBeNull();
      if (token.startsWith('sim-card-challenge')) expect(tx.fraud_status).toBe('challenge');
    }
    // The page answers once; a second answer is refused.
    const id = orderId('3ds');
    const res = await post(h, '/v2/charge', card(id, 'tok', { authentication: true }));
    await completeThreeDs(res.json['redirect_url'] as string, 'authenticate');
    const second = await fetch(res.json['redirect_url'] as string, { method: 'POST', body: 'result=fail', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(second.status).toBe(409);
  });

  it('without authentication there is no 3-D Secure, whatever the token, in both modes', async () => {
    for (const threeDsMode of ['when_asked', 'test_tokens_skip'] as const) {
      const h = await harness({ threeDsMode });
      for (const [token, status] of [
        ['tok-plain-card', 'capture'],
        ['sim-card-accept-2', 'capture'],
        ['sim-card-deny-2', 'deny'],
      ] as const) {
        const res = await post(h, '/v2/charge', card(orderId('no3ds'), token, { authentication: false }));
        expect(res.json['transaction_status']).toBe(status);
        expect(res.json['redirect_url']).toBeUndefined();
      }
    }
  });

  it('test_tokens_skip (the default): sim-card-* tokens decide at once even when authentication is asked; other tokens wait', async () => {
    const h = await harness();
    const accept = await post(h, '/v2/charge', card(orderId('skip'), 'sim-card-accept-3', { authentication: true }));
    expect(accept.json).toMatchObject({ status_code: '200', transaction_status: 'capture' });
    const other = await post(h, '/v2/charge', card(orderId('skip'), 'tok-3ds', { authentication: true }));
    expect(other.json).toMatchObject({ status_code: '201', transaction_status: 'pending', redirect_url: expect.any(String) });
  });
});

describe('time at the gateway', () => {
  it('expires an unpaid transaction on its own clock and pushes expire, with nobody asking', async () => {
    let now = new Date('2030-01-01T00:00:00Z');
    const h = await harness({ now: () => now, sweepIntervalMs: 10 });
    const id = orderId('exp');
    await post(h, '/v2/charge', { payment_type: 'gopay', transaction_details: { order_id: id, gross_amount: 1000 } });
    await h.receiver.waitFor(() => h.receiver.for(id).length === 1);
    now = new Date('2030-01-01T00:15:01Z');
    // No status call, no command: the sweeper alone moves it.
    await h.receiver.waitFor(() => h.receiver.for(id).length === 2);
    expect(statuses(h, id)).toEqual([
      ['pending', 'accept', '201'],
      ['expire', 'accept', '202'],
    ]);
    expect(verifySignature(h.receiver.for(id)[1]!.body, SERVER_KEY)).toBe(true);
  });

  it('settles a card capture at 16:00 GMT+7 the next day; an unreviewed challenge is cancelled then', async () => {
    let now = new Date('2030-01-01T10:00:00Z'); // 17:00 GMT+7 on 1 January
    const h = await harness({ now: () => now });
    const accepted = orderId('d1');
    const challenged = orderId('d1');
    await post(h, '/v2/charge', card(accepted, 'sim-card-accept-1'));
    await post(h, '/v2/charge', card(challenged, 'sim-card-challenge-1'));
    now = new Date('2030-01-02T08:59:59Z'); // 15:59:59 GMT+7 on 2 January
    expect(h.sim.tick()).toEqual([]);
    now = new Date('2030-01-02T09:00:00Z'); // 16:00 GMT+7
    expect(h.sim.tick().sort()).toEqual([accepted, challenged].sort());
    expect(h.sim.transaction(accepted)).toMatchObject({ transaction_status: 'settlement', settlement_time: now });
    expect(h.sim.transaction(challenged)!.transaction_status).toBe('cancel');
    await h.receiver.waitFor(() => h.receiver.for(accepted).length === 2 && h.receiver.for(challenged).length === 2);
    expect(statuses(h, accepted).at(-1)).toEqual(['settlement', 'accept', '200']);
    expect(statuses(h, challenged).at(-1)).toEqual(['cancel', 'challenge', '202']);
  });

  it('POST /_simulator/next-day runs the card settlement batch at once', async () => {
    const h = await harness();
    const id = orderId('nd');
    await post(h, '/v2/charge', card(id, 'sim-card-accept-1'));
    const res = await h.request('POST', '/_simulator/next-day', { auth: false });
    expect(res.json).toEqual({ changed: [id] });
    expect(h.sim.transaction(id)!.transaction_status).toBe('settlement');
  });
});

describe('refunds', () => {
  it('an unsettled card capture cannot be refunded (412) but can be cancelled; after settlement it refunds', async () => {
    const h = await harness();
    const id = orderId('rf');
    await post(h, '/v2/charge', card(id, 'sim-card-accept-1'));
    const early = await post(h, `/v2/${id}/refund`, { refund_key: `${id}-r1`, amount: 150000 });
    expect(early.status).toBe(200);
    expect(early.json).toMatchObject({ status_code: '412', status_message: 'Merchant cannot modify the status of the transaction' });
    const cancel = await post(h, `/v2/${id}/cancel`, null);
    expect(cancel.json).toMatchObject({ status_code: '200', transaction_status: 'cancel' });

    const later = orderId('rf');
    await post(h, '/v2/charge', card(later, 'sim-card-accept-1'));
    h.sim.nextDay();
    expect((await post(h, `/v2/${later}/cancel`, null)).json['status_code']).toBe('412');
    const refund = await post(h, `/v2/${later}/refund`, { refund_key: `${later}-r1`, amount: 50000 });
    expect(refund.json).toMatchObject({ status_code: '200', transaction_status: 'partial_refund', refund_amount: '50000.00' });
  });

  it('sends two notifications per refund: without, then with refunds[].bank_confirmed_at', async () => {
    let now = new Date('2030-01-01T00:00:00Z');
    const h = await harness({ now: () => now, refundConfirmationDelayMs: 60_000 });
    const id = orderId('rf2');
    await post(h, '/v2/charge', { payment_type: 'gopay', transaction_details: { order_id: id, gross_amount: 9000 } });
    await h.sim.act(id, 'settle');
    await post(h, `/v2/${id}/refund`, { refund_key: `${id}-r1` });
    await h.receiver.waitFor(() => h.receiver.for(id).length === 3);
    const first = h.receiver.for(id)[2]!.body;
    expect(first).toMatchObject({ transaction_status: 'refund', status_code: '200', refund_amount: '9000.00' });
    expect((first['refunds'] as Record<string, unknown>[])[0]).not.toHaveProperty('bank_confirmed_at');

    now = new Date('2030-01-01T00:00:59Z');
    expect(h.sim.tick()).toEqual([]);
    now = new Date('2030-01-01T00:01:00Z');
    expect(h.sim.tick()).toEqual([id]);
    await h.receiver.waitFor(() => h.receiver.for(id).length === 4);
    const second = h.receiver.for(id)[3]!.body;
    expect(second).toMatchObject({ transaction_status: 'refund', status_code: '200', refund_amount: '9000.00' });
    expect((second['refunds'] as Record<string, unknown>[])[0]).toMatchObject({ refund_key: `${id}-r1`, bank_confirmed_at: '2030-01-01 07:01:00' });
    expect(verifySignature(second, SERVER_KEY)).toBe(true);
    // Nothing more to confirm.
    expect(h.sim.tick()).toEqual([]);
  });
});

describe('notification retries', () => {
  const MINUTE = 60_000;

  /** A core with the default schedule, a fake clock and a merchant that always answers `status`. */
  function failingMerchant(status: number | 'network') {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const attempts: number[] = [];
    const fetchStub = (async () => {
      attempts.push(Date.now());
      if (status === 'network') throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } });
      return new Response('{}', { status });
    }) as unknown as typeof fetch;
    const core = new SimulatorCore({ serverKey: SERVER_KEY, notificationUrl: () => 'http://merchant.example/hook', publicBaseUrl: () => 'http://sim', fetch: fetchStub, sweepIntervalMs: 0 });
    const answer = core.charge({ payment_type: 'gopay', transaction_details: { order_id: 'RETRY-1', gross_amount: 1000 } }, {});
    core.notifyInBackground(answer.notify!, answer.notifyDelayMs);
    return { core, attempts };
  }

  it('by default retries 5 times, each within 2, 10, 30, 90 and 210 minutes of the previous failure', async () => {
    const { core, attempts } = failingMerchant('network');
    await vi.advanceTimersByTimeAsync(100); // the charge's own notification
    expect(attempts).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(MIDTRANS_RETRY_DELAYS_MS.reduce((a, b) => a + b, 0));
    expect(attempts).toHaveLength(6);
    const gaps = attempts.slice(1).map((at, i) => at - attempts[i]!);
    gaps.forEach((gap, i) => {
      expect(gap).toBeGreaterThan(0);
      expect(gap).toBeLessThanOrEqual(MIDTRANS_RETRY_DELAYS_MS[i]!);
    });
    await vi.advanceTimersByTimeAsync(24 * 60 * MINUTE);
    expect(attempts).toHaveLength(6);
    expect(MIDTRANS_RETRY_DELAYS_MS).toEqual([2, 10, 30, 90, 210].map((m) => m * MINUTE));
    core.notifier.close();
  });

  it.each([
    [500, 1],
    [503, 4],
    [404, 2],
    [400, 2],
    [302, 0],
    [200, 0],
    [418, 5],
  ])('after HTTP %s retries %s times', async (status, retries) => {
    const { core, attempts } = failingMerchant(status);
    await vi.advanceTimersByTimeAsync(2 * 24 * 60 * MINUTE);
    expect(attempts).toHaveLength(1 + retries);
    core.notifier.close();
  });
});

describe('faults after the effect: the gateway does the work, the answer is lost', () => {
  it('malformed after a charge: garbage comes back, yet the transaction exists and is notified', async () => {
    const h = await harness();
    h.sim.setFault({ mode: 'malformed', when: 'after', count: 1, operations: ['charge'] });
    const id = orderId('after');
    const res = await post(h, '/v2/charge', { payment_type: 'qris', transaction_details: { order_id: id, gross_amount: 1000 } });
    expect(res.status).toBe(200);
    expect(() => JSON.parse(res.text)).toThrow();
    expect(h.sim.transaction(id)!.transaction_status).toBe('pending');
    await h.receiver.waitFor(() => h.receiver.for(id).length === 1);
  });

  it('redirect after a cancel: a 302 comes back, the transaction is cancelled', async () => {
    const h = await harness();
    const id = orderId('after');
    await post(h, '/v2/charge', { payment_type: 'qris', transaction_details: { order_id: id, gross_amount: 1000 } });
    h.sim.setFault({ mode: 'redirect', when: 'after', count: 1, operations: ['cancel'] });
    const res = await fetch(`${h.baseUrl}/v2/${id}/cancel`, { method: 'POST', redirect: 'manual', headers: { Authorization: `Basic ${Buffer.from(`${SERVER_KEY}:`).toString('base64')}` } });
    expect(res.status).toBe(302);
    expect(h.sim.transaction(id)!.transaction_status).toBe('cancel');
  });

  it('timeout after a refund: no answer, the refund is made once and a retry with the same refund_key is answered as before', async () => {
    const h = await harness();
    const id = orderId('after');
    await post(h, '/v2/charge', { payment_type: 'gopay', transaction_details: { order_id: id, gross_amount: 9000 } });
    await h.sim.act(id, 'settle');
    h.sim.setFault({ mode: 'timeout', when: 'after', count: 1, operations: ['refund'] });
    const lost = await h.client({ timeoutMs: 300 }).refund({ orderId: id, refundKey: `${id}-r1`, amount: '4000.00' }).then(
      () => 'answered',
      (e: { kind?: string }) => e.kind,
    );
    expect(lost).toBe('timeout');
    expect(h.sim.transaction(id)!.refunds.map((r) => r.refund_amount)).toEqual([4000]);
    const retried = await post(h, `/v2/${id}/refund`, { refund_key: `${id}-r1`, amount: 4000 });
    expect(retried.json).toMatchObject({ status_code: '200', refund_key: `${id}-r1` });
    expect(h.sim.transaction(id)!.refunds).toHaveLength(1);
  });

  it('an Idempotency-Key remembers the charge whose answer was lost', async () => {
    const h = await harness();
    h.sim.setFault({ mode: 'http_500', when: 'after', count: 1, operations: ['charge'] });
    const id = orderId('after');
    const body = { payment_type: 'qris', transaction_details: { order_id: id, gross_amount: 1000 } };
    const lost = await post(h, '/v2/charge', body, { 'Idempotency-Key': `${id}-k` });
    expect(lost.status).toBe(500);
    const replay = await post(h, '/v2/charge', body, { 'Idempotency-Key': `${id}-k` });
    expect(replay.json).toMatchObject({ status_code: '201', order_id: id, transaction_id: h.sim.transaction(id)!.transaction_id });
  });

  it('before (the default) changes nothing at the gateway', async () => {
    const h = await harness();
    h.sim.setFault({ mode: 'malformed', count: 1, operations: ['charge'] });
    const id = orderId('before');
    await post(h, '/v2/charge', { payment_type: 'qris', transaction_details: { order_id: id, gross_amount: 1000 } });
    expect(h.sim.transaction(id)).toBeUndefined();
    const bad = await h.request('POST', '/_simulator/faults', { auth: false, body: JSON.stringify({ mode: 'timeout', when: 'later' }) });
    expect(bad.status).toBe(400);
  });
});
