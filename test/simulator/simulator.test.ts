import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/gateway/signature.js';
import { SimulatorError } from '../../src/simulator/index.js';
import { SERVER_KEY, basic, orderId, harnessForFile, startHarness, until } from '../helpers/simulator.js';

const h = harnessForFile();

const charge = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  h.request('POST', '/_simulator/v2/charge', { body: JSON.stringify(body), headers });

const gopay = (id = orderId(), amount = 150000) => ({ payment_type: 'gopay', transaction_details: { order_id: id, gross_amount: amount } });

describe('mounting', () => {
  it('passes requests outside /_simulator to the next middleware', async () => {
    const res = await h.request('GET', '/api/anything', { auth: false });
    expect(res.status).toBe(418);
    const lookalike = await h.request('GET', '/_simulatorx/v2/x/status');
    expect(lookalike.status).toBe(418);
  });

  it('answers unknown simulator paths itself with 404', async () => {
    const res = await h.request('GET', '/_simulator/nothing-here');
    expect(res.status).toBe(404);
  });
});

describe('Core API requests', () => {
  it('refuses a missing or wrong server key with 401 and a status_code body', async () => {
    for (const auth of [false, basic('SB-Mid-server-other'), `Basic ${Buffer.from(`${SERVER_KEY}:secret`).toString('base64')}`] as const) {
      const res = await h.request('POST', '/_simulator/v2/charge', { body: JSON.stringify(gopay()), auth });
      expect(res.status).toBe(401);
      expect(res.json).toMatchObject({ status_code: '401' });
    }
    const approve = await h.request('POST', '/_simulator/v2/any/approve', { auth: false });
    expect(approve.status).toBe(401);
  });

  it('accepts a literal null body on actions and a GET status carrying {}', async () => {
    const id = orderId();
    await charge(gopay(id));
    const status = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const r = httpRequest(
        `${h.origin}/_simulator/v2/${id}/status`,
        { method: 'GET', headers: { Authorization: basic(SERVER_KEY), 'Content-Type': 'application/json', 'Content-Length': '2' } },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      r.on('error', reject);
      r.end('{}');
    });
    expect(status.status).toBe(200);
    expect(JSON.parse(status.body)).toMatchObject({ status_code: '201', transaction_status: 'pending' });
    const cancel = await h.request('POST', `/_simulator/v2/${id}/cancel`, { body: 'null' });
    expect(cancel.json).toMatchObject({ status_code: '200', transaction_status: 'cancel' });
  });

  it('answers a body over the limit with 413 and malformed JSON with status_code 413', async () => {
    const big = JSON.stringify({ ...gopay(), padding: 'x'.repeat(1024 * 1024) });
    const tooBig = await h.request('POST', '/_simulator/v2/charge', { body: big });
    expect(tooBig.status).toBe(413);
    expect(tooBig.json).toMatchObject({ status_code: '413' });
    const garbage = await h.request('POST', '/_simulator/v2/charge', { body: '{"payment_type": ' });
    expect(garbage.status).toBe(400);
    expect(garbage.json).toMatchObject({ status_code: '413' });
  });

  it('reports every validation problem of a charge with HTTP 400', async () => {
    const res = await charge({
      payment_type: 'bank_transfer',
      transaction_details: { order_id: 'bad id!', gross_amount: 0 },
      item_details: [{ id: 'a', price: 100, quantity: 1 }],
      bank_transfer: { bank: 'mandiri' },
    });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ status_code: '400', status_message: 'One or more parameters in the payload is invalid.', id: expect.any(String) });
    const messages = (res.json['validation_messages'] as string[]).join('\n');
    expect(messages).toContain('order_id');
    expect(messages).toContain('gross_amount');
    expect(messages).toContain('item_details[0].name');
    expect(messages).toContain('bank_transfer.bank');
  });

  it.each([
    ['a null body', null],
    ['an unknown payment_type', { ...gopay(), payment_type: 'cstore' }],
    ['items that do not add up', { ...gopay(undefined, 1000), item_details: [{ id: 'a', name: 'A', price: 400, quantity: 2 }] }],
    ['a decimal amount', gopay(undefined, 1000.5)],
    ['echannel without bill info', { ...gopay(), payment_type: 'echannel', echannel: {} }],
    ['shopeepay without its object', { ...gopay(), payment_type: 'shopeepay' }],
    ['a custom expiry beyond the method maximum', { ...gopay(), custom_expiry: { expiry_duration: 8, unit: 'day' } }],
  ])('rejects %s with 400', async (_name, body) => {
    const res = await h.request('POST', '/_simulator/v2/charge', { body: JSON.stringify(body) });
    expect(res.status).toBe(400);
    expect(res.json['status_code']).toBe('400');
  });

  it('accepts the legacy payment_type permata', async () => {
    const res = await charge({ payment_type: 'permata', transaction_details: { order_id: orderId(), gross_amount: 10000 } });
    expect(res.json).toMatchObject({ status_code: '201', payment_type: 'bank_transfer', permata_va_number: expect.stringMatching(/^8562\d{12}$/) });
  });

  it('honours a custom VA number and a custom expiry', async () => {
    const res = await charge({
      payment_type: 'bank_transfer',
      transaction_details: { order_id: orderId(), gross_amount: 10000 },
      bank_transfer: { bank: 'bni', va_number: '12345678' },
      custom_expiry: { order_time: '2030-01-01 10:00:00 +0700', expiry_duration: 2, unit: 'hour' },
      custom_field1: 'tenant-42',
      metadata: { subscription_id: 'sub-7' },
    });
    expect(res.json).toMatchObject({
      va_numbers: [{ bank: 'bni', va_number: '9880000012345678' }],
      expiry_time: '2030-01-01 12:00:00',
      custom_field1: 'tenant-42',
      metadata: { subscription_id: 'sub-7' },
    });
  });

  it('finds a transaction by transaction_id as well as order_id', async () => {
    const created = await charge(gopay());
    const res = await h.request('GET', `/_simulator/v2/${created.json['transaction_id']}/status`);
    expect(res.json).toMatchObject({ order_id: created.json['order_id'], status_code: '201' });
    expect(verifySignature(res.json, SERVER_KEY)).toBe(true);
  });

  it('answers unknown ids with body 404 on HTTP 200, and disallowed moves with 412', async () => {
    const missing = await h.request('GET', '/_simulator/v2/NOPE/status');
    expect(missing.status).toBe(200);
    expect(missing.json).toMatchObject({ status_code: '404', status_message: "Transaction doesn't exist." });
    const id = orderId();
    await charge(gopay(id));
    const refund = await h.request('POST', `/_simulator/v2/${id}/refund`, { body: JSON.stringify({ refund_key: 'early', amount: 1000 }) });
    expect(refund.status).toBe(200);
    expect(refund.json).toMatchObject({ status_code: '412' });
    const approve = await h.request('POST', `/_simulator/v2/${id}/approve`, { body: 'null' });
    expect(approve.json).toMatchObject({ status_code: '412' });
  });

  it('approves and denies challenged card captures through the Core API', async () => {
    const approveId = orderId();
    const denyId = orderId();
    for (const id of [approveId, denyId]) {
      await charge({ payment_type: 'credit_card', transaction_details: { order_id: id, gross_amount: 5000 }, credit_card: { token_id: 'sim-card-challenge' } });
    }
    const approved = await h.request('POST', `/_simulator/v2/${approveId}/approve`, { body: 'null' });
    expect(approved.json).toMatchObject({ status_code: '200', transaction_status: 'capture', fraud_status: 'accept' });
    const denied = await h.request('POST', `/_simulator/v2/${denyId}/deny`, { body: 'null' });
    expect(denied.json).toMatchObject({ status_code: '200', transaction_status: 'deny', fraud_status: 'deny' });
    await h.receiver.waitFor(() => h.receiver.for(denyId).length === 2 && h.receiver.for(approveId).length === 2);
    expect(h.receiver.for(denyId).map((n) => [n.body['transaction_status'], n.body['fraud_status'], n.body['status_code']])).toEqual([
      ['capture', 'challenge', '201'],
      ['deny', 'deny', '202'],
    ]);
  });

  it('answers 411 for an invalid card token', async () => {
    const res = await charge({ payment_type: 'credit_card', transaction_details: { order_id: orderId(), gross_amount: 5000 }, credit_card: { token_id: 'sim-card-invalid' } });
    expect(res.json).toMatchObject({ status_code: '411' });
  });

  it('replays an Idempotency-Key across endpoints, ignoring the new body', async () => {
    const key = `k-${orderId()}`;
    const first = await charge(gopay(), { 'Idempotency-Key': key });
    const other = await charge(gopay(), { 'Idempotency-Key': key });
    expect(other.json).toEqual(first.json);
    const tooLong = 'k'.repeat(47);
    const a = await charge(gopay(), { 'Idempotency-Key': tooLong });
    const b = await charge(gopay(), { 'Idempotency-Key': tooLong });
    expect(b.json['order_id']).not.toBe(a.json['order_id']);
  });

  it('ignores Idempotency-Key for Permata VA, as Midtrans does', async () => {
    const key = `k-${orderId()}`;
    const body = { payment_type: 'bank_transfer', transaction_details: { order_id: orderId(), gross_amount: 10000 }, bank_transfer: { bank: 'permata' } };
    expect((await charge(body, { 'Idempotency-Key': key })).json['status_code']).toBe('201');
    expect((await charge(body, { 'Idempotency-Key': key })).json['status_code']).toBe('406');
  });

  it('does not remember failed answers under an Idempotency-Key', async () => {
    const key = `k-${orderId()}`;
    const bad = await charge({ ...gopay(), payment_type: 'nope' }, { 'Idempotency-Key': key });
    expect(bad.status).toBe(400);
    const good = await charge(gopay(), { 'Idempotency-Key': key });
    expect(good.json['status_code']).toBe('201');
  });

  it('takes the full remaining amount when a refund has none, and generates a refund_key', async () => {
    const id = orderId();
    await charge(gopay(id, 9000));
    await h.sim.act(id, 'settle');
    const res = await h.request('POST', `/_simulator/v2/${id}/refund`, { body: 'null' });
    expect(res.json).toMatchObject({ status_code: '200', transaction_status: 'refund', refund_amount: '9000.00', refund_key: expect.any(String) });
  });
});

describe('commands', () => {
  it('answers with the new status and the first delivery attempt', async () => {
    const id = orderId();
    await charge(gopay(id));
    const res = await h.request('POST', `/_simulator/v2/${id}/settle`, { auth: false });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ order_id: id, transaction_status: 'settlement', notification: { url: h.receiver.url, http_status: 200, error: null } });
    // The effect is visible as soon as the command answered.
    expect(h.receiver.for(id).at(-1)?.body['transaction_status']).toBe('settlement');
  });

  it('treats the shared action paths as commands without Authorization and as Core API calls with it', async () => {
    const id = orderId();
    await charge(gopay(id));
    const command = await h.request('POST', `/_simulator/v2/${id}/cancel`, { auth: false });
    expect(command.json).toMatchObject({ order_id: id, transaction_status: 'cancel', notification: expect.any(Object) });
    const core = await h.request('POST', `/_simulator/v2/${id}/cancel`, { body: 'null' });
    expect(core.json).toMatchObject({ status_code: '412' });
  });

  it('answers 404 for an unknown order, 409 for an impossible move, 400/404 for bad input', async () => {
    expect((await h.request('POST', '/_simulator/v2/NOPE/settle', { auth: false })).status).toBe(404);
    const id = orderId();
    await charge(gopay(id));
    const capture = await h.request('POST', `/_simulator/v2/${id}/capture`, { auth: false });
    expect(capture.status).toBe(409);
    expect(capture.json['error']).toContain('credit_card');
    await h.request('POST', `/_simulator/v2/${id}/settle`, { auth: false });
    const again = await h.request('POST', `/_simulator/v2/${id}/expire`, { auth: false });
    expect(again.status).toBe(409);
    expect(again.json).toEqual({ error: expect.stringContaining('settlement') });
    const tooMuch = await h.request('POST', `/_simulator/v2/${id}/refund`, { auth: false, body: JSON.stringify({ amount: 150001 }) });
    expect(tooMuch.status).toBe(409);
    const unknown = await h.request('POST', `/_simulator/v2/${id}/explode`, { auth: false });
    expect(unknown.status).toBe(404);
    const card = orderId();
    await charge({ payment_type: 'credit_card', transaction_details: { order_id: card, gross_amount: 5000 }, credit_card: { token_id: 'x' } });
    const fraud = await h.request('POST', `/_simulator/v2/${card}/capture?fraud_status=maybe`, { auth: false });
    expect(fraud.status).toBe(400);
  });

  it('throws SimulatorError from act() with the same statuses', async () => {
    await expect(h.sim.act('NOPE', 'settle')).rejects.toMatchObject({ httpStatus: 404 });
    await expect(h.sim.act('NOPE', 'fly' as never)).rejects.toBeInstanceOf(SimulatorError);
  });

  it('reverses a Permata settlement with deny', async () => {
    const id = orderId();
    await charge({ payment_type: 'bank_transfer', transaction_details: { order_id: id, gross_amount: 10000 }, bank_transfer: { bank: 'permata' } });
    await h.sim.act(id, 'settle');
    expect((await h.sim.act(id, 'deny')).transaction_status).toBe('deny');
  });

  it('refunds with a JSON amount given as a string too', async () => {
    const id = orderId();
    await charge(gopay(id));
    await h.sim.act(id, 'settle');
    const res = await h.request('POST', `/_simulator/v2/${id}/refund`, { auth: false, body: JSON.stringify({ amount: '1000' }) });
    expect(res.json).toMatchObject({ transaction_status: 'partial_refund' });
    expect(h.sim.transaction(id)!.refunds.map((r) => r.refund_amount)).toEqual([1000]);
  });

  it('exposes the stored record', async () => {
    const id = orderId();
    await charge(gopay(id));
    const res = await h.request('GET', `/_simulator/transactions/${id}`, { auth: false });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ order_id: id, payment_type: 'gopay', gross_amount: 150000, transaction_status: 'pending' });
    expect((await h.request('GET', '/_simulator/transactions/NOPE', { auth: false })).status).toBe(404);
  });
});

describe('notification delivery', () => {
  it('retries a 503 answer in the background until it is accepted', async () => {
    const id = orderId();
    await charge(gopay(id));
    await h.receiver.waitFor(() => h.receiver.for(id).length === 1);
    h.receiver.statuses.push(503, 503);
    const result = await h.sim.act(id, 'settle');
    expect(result.notification).toEqual({ url: h.receiver.url, http_status: 503, error: null });
    const attempts = () => h.sim.deliveries().filter((d) => d.order_id === id && d.transaction_status === 'settlement');
    await until(() => attempts().length === 3);
    expect(attempts().map((d) => [d.attempt, d.http_status])).toEqual([
      [0, 503],
      [1, 503],
      [2, 200],
    ]);
  });

  it('retries a 500 answer only once', async () => {
    const id = orderId();
    await charge(gopay(id));
    await h.receiver.waitFor(() => h.receiver.for(id).length === 1);
    h.receiver.statuses.push(500, 500, 500, 500);
    await h.sim.act(id, 'expire');
    await h.receiver.waitFor(() => h.receiver.for(id).length === 3);
    await new Promise((r) => setTimeout(r, 200));
    expect(h.receiver.for(id)).toHaveLength(3);
    h.receiver.statuses.length = 0;
  });

  it('reports an unreachable URL as an error and retries it', async () => {
    const dead = await startHarness({ notificationUrl: () => 'http://127.0.0.1:1/hook', retryDelaysMs: [10] });
    try {
      const id = orderId();
      await dead.request('POST', '/_simulator/v2/charge', { body: JSON.stringify(gopay(id)) });
      const result = await dead.sim.act(id, 'settle');
      expect(result.notification).toMatchObject({ url: 'http://127.0.0.1:1/hook', http_status: null, error: expect.any(String) });
      const settled = () => dead.sim.deliveries().filter((d) => d.transaction_status === 'settlement');
      await until(() => settled().length === 2);
      await new Promise((r) => setTimeout(r, 50));
      expect(settled().map((d) => d.attempt)).toEqual([0, 1]);
    } finally {
      await dead.stop();
    }
  });

  it('stops retrying after close()', async () => {
    const slow = await startHarness({ retryDelaysMs: [150, 150, 150] });
    try {
      const id = orderId();
      await slow.request('POST', '/_simulator/v2/charge', { body: JSON.stringify(gopay(id)) });
      await slow.receiver.waitFor(() => slow.receiver.received.length === 1);
      slow.receiver.statuses.push(503, 503, 503, 503);
      await slow.sim.act(id, 'settle');
      slow.sim.close();
      await new Promise((r) => setTimeout(r, 400));
      expect(slow.receiver.for(id)).toHaveLength(2);
    } finally {
      await slow.stop();
    }
  });
});

describe('faults', () => {
  it('can be set over HTTP, limited by count and operation, and validated', async () => {
    const set = await h.request('POST', '/_simulator/faults', { auth: false, body: JSON.stringify({ mode: 'http_500', count: 1, operations: ['status'] }) });
    expect(set.json).toEqual({ mode: 'http_500', when: 'before', remaining: 1, operations: ['status'] });
    const id = orderId();
    expect((await charge(gopay(id))).status).toBe(200);
    expect((await h.request('GET', `/_simulator/v2/${id}/status`)).status).toBe(500);
    expect((await h.request('GET', `/_simulator/v2/${id}/status`)).status).toBe(200);
    const bad = await h.request('POST', '/_simulator/faults', { auth: false, body: JSON.stringify({ mode: 'explode' }) });
    expect(bad.status).toBe(400);
    expect(() => h.sim.setFault({ mode: 'timeout', count: 0 })).toThrow(TypeError);
  });

  it('answers malformed with a non-JSON HTTP 200', async () => {
    h.sim.setFault({ mode: 'malformed', count: 1 });
    const res = await charge(gopay());
    expect(res.status).toBe(200);
    expect(() => JSON.parse(res.text)).toThrow();
  });

  it('holds a timed-out request open until close() releases it', async () => {
    const held = await startHarness();
    try {
      held.sim.setFault({ mode: 'timeout' });
      const pendingRequest = fetch(`${held.baseUrl}/v2/x/status`, { headers: { Authorization: basic(SERVER_KEY) } }).then(
        () => 'answered',
        () => 'dropped',
      );
      const early = await Promise.race([pendingRequest, new Promise((r) => setTimeout(() => r('still open'), 150))]);
      expect(early).toBe('still open');
      held.sim.close();
      expect(await pendingRequest).toBe('dropped');
    } finally {
      await held.stop();
    }
  });
});

describe('time', () => {
  it('expires a pending charge once its expiry has passed, notifying expire', async () => {
    let now = new Date('2030-01-01T00:00:00Z');
    const clocked = await startHarness({ now: () => now });
    try {
      const id = orderId();
      const created = await clocked.request('POST', '/_simulator/v2/charge', { body: JSON.stringify(gopay(id)) });
      expect(created.json).toMatchObject({ transaction_time: '2030-01-01 07:00:00', expiry_time: '2030-01-01 07:15:00' });
      now = new Date('2030-01-01T00:16:00Z');
      const status = await clocked.request('GET', `/_simulator/v2/${id}/status`);
      expect(status.json).toMatchObject({ status_code: '407', transaction_status: 'expire' });
      await clocked.receiver.waitFor(() => clocked.receiver.for(id).length === 2);
      expect(clocked.receiver.for(id).map((n) => [n.body['transaction_status'], n.body['status_code']])).toEqual([
        ['pending', '201'],
        ['expire', '202'],
      ]);
      const reused = await clocked.request('POST', '/_simulator/v2/charge', { body: JSON.stringify(gopay(id)) });
      expect(reused.json['status_code']).toBe('201');
    } finally {
      await clocked.stop();
    }
  });

  it('forgets an Idempotency-Key after five minutes', async () => {
    let now = new Date('2030-01-01T00:00:00Z');
    const clocked = await startHarness({ now: () => now });
    try {
      const body = JSON.stringify({ ...gopay(), custom_expiry: { expiry_duration: 1, unit: 'day' } });
      const headers = { 'Idempotency-Key': 'five-minutes' };
      const first = await clocked.request('POST', '/_simulator/v2/charge', { body, headers });
      now = new Date('2030-01-01T00:04:59Z');
      expect((await clocked.request('POST', '/_simulator/v2/charge', { body, headers })).json).toEqual(first.json);
      now = new Date('2030-01-01T00:05:01Z');
      expect((await clocked.request('POST', '/_simulator/v2/charge', { body, headers })).json['status_code']).toBe('406');
    } finally {
      await clocked.stop();
    }
  });
});
