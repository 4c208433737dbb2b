import { describe, expect, it } from 'vitest';
import { GatewayError, gatewayErrorToProblemCode, type GatewayErrorKind } from '../../src/gateway/errors.js';
import { MidtransClient } from '../../src/gateway/midtrans-client.js';
import type { ChargeRequest } from '../../src/gateway/types.js';
import { gatewayFailure } from '../helpers/gateway-failure.js';

const KEY = 'SB-Mid-server-UNIT-test-key';
const AUTH = 'Basic ' + Buffer.from(`${KEY}:`).toString('base64');

interface Call {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal | undefined;
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

/** A fetch that records calls and answers with the responder's Response (or throws its error). */
function fakeFetch(responder: (call: Call, n: number) => Response | Promise<Response>) {
  const calls: Call[] = [];
  const fn = (async (input: string | URL | Request, init: RequestInit = {}) => {
    const call: Call = {
      url: String(input),
      method: init.method ?? 'GET',
      headers: Object.fromEntries(new Headers(init.headers).entries()),
      body: typeof init.body === 'string' ? JSON.parse(init.body) : undefined,
      signal: init.signal ?? undefined,
    };
    calls.push(call);
    return responder(call, calls.length);
  }) as typeof fetch;
  return { fn, calls };
}

function clientWith(responder: (call: Call, n: number) => Response | Promise<Response>, extra: { statusRetries?: number; timeoutMs?: number } = {}) {
  const f = fakeFetch(responder);
  const sleeps: number[] = [];
  const client = new MidtransClient({
    baseUrl: 'https://api.sandbox.example/',
    serverKey: KEY,
    fetch: f.fn,
    sleep: async (ms) => void sleeps.push(ms),
    ...extra,
  });
  return { client, calls: f.calls, sleeps };
}

const pending = (extra: Record<string, unknown> = {}) =>
  json({ status_code: '201', transaction_id: 'tx-1', order_id: 'ORD-1', gross_amount: '150000.00', transaction_status: 'pending', ...extra });

const base: ChargeRequest = { orderId: 'ORD-1', grossAmount: '150000.00', currency: 'IDR', paymentType: 'bank_transfer' };

describe('MidtransClient.charge request', () => {
  it('posts the Midtrans body with Basic auth and JSON headers', async () => {
    const { client, calls } = clientWith(() => pending());
    await client.charge({
      ...base,
      bank: 'bni',
      customer: { firstName: 'Siti', lastName: 'Rahma', email: 'siti@example.com', phone: '+628120000000' },
      items: [
        { id: 'plan-pro', name: 'Pro plan', price: '100000.00', quantity: 1 },
        { id: 'seat', name: 'Extra seat', price: '25000', quantity: 2 },
      ],
      expiryMinutes: 60,
      metadata: { subscription_id: 'sub-7' },
      notificationUrl: 'https://merchant.example/hook',
      idempotencyKey: 'charge-ORD-1',
    });
    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call!.url).toBe('https://api.sandbox.example/v2/charge');
    expect(call!.method).toBe('POST');
    expect(call!.headers).toMatchObject({
      authorization: AUTH,
      accept: 'application/json',
      'content-type': 'application/json',
      'x-override-notification': 'https://merchant.example/hook',
      'idempotency-key': 'charge-ORD-1',
    });
    expect(call!.body).toEqual({
      payment_type: 'bank_transfer',
      transaction_details: { order_id: 'ORD-1', gross_amount: 150000 },
      item_details: [
        { id: 'plan-pro', name: 'Pro plan', price: 100000, quantity: 1 },
        { id: 'seat', name: 'Extra seat', price: 25000, quantity: 2 },
      ],
      customer_details: { first_name: 'Siti', last_name: 'Rahma', email: 'siti@example.com', phone: '+628120000000' },
      custom_expiry: { expiry_duration: 60, unit: 'minute' },
      metadata: { subscription_id: 'sub-7' },
      bank_transfer: { bank: 'bni' },
    });
  });

  it.each<[string, Partial<ChargeRequest>, Record<string, unknown>]>([
    ['bank_transfer defaults to bca', {}, { bank_transfer: { bank: 'bca' } }],
    ['permata goes through bank_transfer', { bank: 'permata' }, { bank_transfer: { bank: 'permata' } }],
    ['echannel', { paymentType: 'echannel' }, { echannel: { bill_info1: 'Payment', bill_info2: 'Subscription' } }],
    ['gopay', { paymentType: 'gopay' }, { gopay: { enable_callback: false } }],
    ['qris', { paymentType: 'qris' }, { qris: { acquirer: 'gopay' } }],
    ['shopeepay', { paymentType: 'shopeepay', callbackUrl: 'https://app.example/back' }, { shopeepay: { callback_url: 'https://app.example/back' } }],
    [
      'a customer card charge',
      { paymentType: 'credit_card', cardToken: 'tok-1', saveCard: true },
      { credit_card: { token_id: 'tok-1', authentication: true, save_token_id: true, initiated_by: 'customer' } },
    ],
    [
      'a merchant-initiated renewal',
      { paymentType: 'credit_card', cardToken: 'saved-1', merchantInitiated: true },
      { credit_card: { token_id: 'saved-1', authentication: false, save_token_id: false, initiated_by: 'merchant' } },
    ],
  ])('sends the method object for %s', async (_name, change, expected) => {
    const { client, calls } = clientWith(() => pending());
    await client.charge({ ...base, ...change });
    expect(calls[0]!.body).toMatchObject({ payment_type: change.paymentType ?? 'bank_transfer', ...expected });
  });

  describe('when the request is invalid, it fails before any HTTP', () => {
    it.each<[string, Partial<ChargeRequest>]>([
      ['decimals for IDR', { grossAmount: '150000.50' }],
      ['a non-numeric amount', { grossAmount: '150,000' }],
      ['a zero amount', { grossAmount: '0.00' }],
      ['another currency', { currency: 'USD' }],
      ['an over-long order id', { orderId: 'A'.repeat(51) }],
      ['a forbidden order id character', { orderId: 'ORD/1' }],
      ['an unknown bank', { bank: 'mandiri' as never }],
      ['a card charge without a token', { paymentType: 'credit_card' }],
      ['an unknown payment type', { paymentType: 'cstore' as never }],
      ['items that do not add up', { items: [{ id: 'a', name: 'A', price: '100000', quantity: 1 }] }],
      ['an item price with decimals', { items: [{ id: 'a', name: 'A', price: '150000.10', quantity: 1 }] }],
      ['a fractional quantity', { items: [{ id: 'a', name: 'A', price: '75000', quantity: 1.5 }] }],
      ['a zero expiry', { expiryMinutes: 0 }],
      ['an over-long idempotency key', { idempotencyKey: 'k'.repeat(47) }],
    ])('rejects %s', async (_name, change) => {
      const { client, calls } = clientWith(() => pending());
      const e = await gatewayFailure(client.charge({ ...base, ...change }));
      expect(e.kind).toBe('validation');
      expect(e.outcomeUnknown).toBe(false);
      expect(calls).toHaveLength(0);
    });

    it('accepts a whole amount written with zero decimals or none', async () => {
      const { client, calls } = clientWith(() => pending());
      await client.charge({ ...base, grossAmount: '150000' });
      await client.charge({ ...base, grossAmount: '150000.000' });
      expect(calls.map((c) => (c.body as { transaction_details: { gross_amount: number } }).transaction_details.gross_amount)).toEqual([150000, 150000]);
    });
  });
});

describe('MidtransClient answers', () => {
  it('normalises a transaction: lower-cased status, verbatim amount, details and expiry', async () => {
    const { client } = clientWith(() =>
      json({
        status_code: '201',
        transaction_id: 'tx-1',
        order_id: 'ORD-1',
        gross_amount: '150000.00',
        payment_type: 'bank_transfer',
        transaction_status: 'PENDING',
        fraud_status: 'accept',
        va_numbers: [{ bank: 'bca', va_number: '12345678901' }],
        expiry_time: '2024-05-02 10:00:00',
        unknown_future_field: true,
      }),
    );
    const tx = await client.charge(base);
    expect(tx).toMatchObject({
      orderId: 'ORD-1',
      transactionId: 'tx-1',
      transactionStatus: 'pending',
      fraudStatus: 'accept',
      statusCode: '201',
      grossAmount: '150000.00',
      paymentType: 'bank_transfer',
      paymentDetails: { bank: 'bca', va_number: '12345678901', expiry_time: '2024-05-02T03:00:00.000Z' },
      savedTokenId: null,
      refundAmount: null,
    });
    expect(tx.expiryTime?.toISOString()).toBe('2024-05-02T03:00:00.000Z');
    expect(tx.raw['unknown_future_field']).toBe(true);
  });

  it('returns a denied card charge (202) as a transaction, not an error', async () => {
    const { client } = clientWith(() => json({ status_code: '202', order_id: 'ORD-1', transaction_status: 'deny', fraud_status: 'accept' }));
    const tx = await client.charge({ ...base, paymentType: 'credit_card', cardToken: 't' });
    expect(tx.transactionStatus).toBe('deny');
    expect(tx.statusCode).toBe('202');
  });

  it.each(['status', 'expire'] as const)('treats 407 from %s as the normal answer for an expired transaction', async (op) => {
    const { client } = clientWith(() => json({ status_code: '407', order_id: 'ORD-1', transaction_status: 'expire' }));
    const tx = await client[op]('ORD-1');
    expect(tx.transactionStatus).toBe('expire');
    expect(tx.statusCode).toBe('407');
  });

  it('addresses status, cancel and expire by order id with the right method and body', async () => {
    const { client, calls } = clientWith(() => json({ status_code: '200', order_id: 'ORD-1', transaction_status: 'cancel' }));
    await client.status('ORD-1');
    await client.cancel('ORD-1');
    await client.expire('ORD-1');
    expect(calls.map((c) => `${c.method} ${c.url} ${JSON.stringify(c.body)}`)).toEqual([
      'GET https://api.sandbox.example/v2/ORD-1/status undefined',
      'POST https://api.sandbox.example/v2/ORD-1/cancel null',
      'POST https://api.sandbox.example/v2/ORD-1/expire null',
    ]);
  });

  describe('error mapping', () => {
    it.each<[string, Response, GatewayErrorKind]>([
      ['HTTP 400 validation', json({ status_code: '400', status_message: 'Invalid', validation_messages: ['gross_amount is not valid'] }, 400), 'validation'],
      ['HTTP 401', json({ status_code: '401', status_message: 'Access denied' }, 401), 'unauthorized'],
      ['HTTP 401 without a body', new Response('', { status: 401 }), 'unauthorized'],
      ['body 404 on HTTP 200', json({ status_code: '404', status_message: "Transaction doesn't exist." }), 'not_found'],
      ['HTTP 404 without a status_code', json({ message: 'nope' }, 404), 'not_found'],
      ['body 406', json({ status_code: '406', status_message: 'order_id has been paid and utilized' }), 'duplicate_order'],
      ['body 411', json({ status_code: '411', status_message: 'Token id is missing, invalid, or timed out' }), 'denied_token'],
      ['body 412', json({ status_code: '412', status_message: 'Merchant cannot modify the status of the transaction' }), 'cannot_modify'],
      ['body 414', json({ status_code: '414', status_message: 'Refund rejected' }), 'refund_rejected'],
      ['body 402', json({ status_code: '402', status_message: 'No access' }), 'validation'],
      ['body 500 on HTTP 200', json({ status_code: '500', status_message: 'Sorry' }), 'unavailable'],
      ['HTTP 503 with an HTML page', new Response('<html>busy</html>', { status: 503 }), 'unavailable'],
      ['HTTP 429', json({ status_code: '429', status_message: 'Too many requests' }, 429), 'unavailable'],
      ['HTTP 200 with HTML', new Response('<html>oops</html>', { status: 200 }), 'bad_response'],
      ['HTTP 200 with a JSON array', json([1, 2]), 'bad_response'],
      ['HTTP 200 without status_code', json({ transaction_status: 'pending' }), 'bad_response'],
      ['HTTP 200 with a garbage status_code', json({ status_code: 'ok' }), 'bad_response'],
      ['a success without transaction_status', json({ status_code: '201' }), 'bad_response'],
      ['a redirect', new Response('', { status: 301, headers: { location: 'https://elsewhere.example' } }), 'bad_response'],
    ])('maps %s', async (_name, response, kind) => {
      const { client } = clientWith(() => response.clone());
      const e = await gatewayFailure(client.charge(base));
      expect(e.kind).toBe(kind);
      expect(e.operation).toBe('charge');
      // An unreadable answer to a charge leaves its outcome unknown, never a refusal (issue 15).
      if (kind === 'bad_response') expect(e.outcomeUnknown).toBe(true);
    });

    it.each([
      ['HTML', () => new Response('<html>oops</html>', { status: 200 })],
      ['no status_code', () => json({ refund_key: 'K' })],
      ['a redirect', () => new Response('', { status: 302, headers: { location: 'https://elsewhere.example' } })],
    ])('an unreadable answer (%s) to a refund or cancel is an unknown outcome; to a status query it is not', async (_name, make) => {
      const { client } = clientWith(make);
      expect(await gatewayFailure(client.refund({ orderId: 'ORD-1', refundKey: 'K1', amount: '1000.00' }))).toMatchObject({ kind: 'bad_response', outcomeUnknown: true });
      expect(await gatewayFailure(client.cancel('ORD-1'))).toMatchObject({ kind: 'bad_response', outcomeUnknown: true });
      expect(await gatewayFailure(client.status('ORD-1'))).toMatchObject({ kind: 'bad_response', outcomeUnknown: false });
    });

    it('keeps the body status_code, HTTP status and gateway messages', async () => {
      const { client } = clientWith(() =>
        json({ status_code: '400', status_message: 'One or more parameters in the payload is invalid.', validation_messages: ['a', 'b'] }, 400),
      );
      const e = await gatewayFailure(client.charge(base));
      expect(e).toMatchObject({ statusCode: '400', httpStatus: 400, messages: ['One or more parameters in the payload is invalid.', 'a', 'b'], outcomeUnknown: false });
    });

    it('treats 407 from cancel as cannot_modify', async () => {
      const { client } = clientWith(() => json({ status_code: '407', transaction_status: 'expire' }));
      expect((await gatewayFailure(client.cancel('ORD-1'))).kind).toBe('cannot_modify');
    });

    it('marks a charge answered 5xx as outcome unknown, from a proxy or from Midtrans itself (it may have charged the card), and a 4xx code as a refusal', async () => {
      const proxy = clientWith(() => new Response('<html>502</html>', { status: 502 }));
      expect(await gatewayFailure(proxy.client.charge(base))).toMatchObject({ kind: 'unavailable', outcomeUnknown: true });
      const midtrans = clientWith(() => json({ status_code: '500', status_message: 'Sorry' }, 500));
      expect(await gatewayFailure(midtrans.client.charge(base))).toMatchObject({ kind: 'unavailable', outcomeUnknown: true });
      const inBody = clientWith(() => json({ status_code: '503', status_message: 'Sorry' }, 200));
      expect(await gatewayFailure(inBody.client.charge(base))).toMatchObject({ kind: 'unavailable', outcomeUnknown: true });
      const refused = clientWith(() => json({ status_code: '402', status_message: 'Payment channel is not activated.' }, 200));
      expect(await gatewayFailure(refused.client.charge(base))).toMatchObject({ kind: 'validation', outcomeUnknown: false });
      const status = clientWith(() => json({ status_code: '500', status_message: 'Sorry' }, 500));
      expect(await gatewayFailure(status.client.status('ORD-1'))).toMatchObject({ kind: 'unavailable', outcomeUnknown: false });
    });
  });

  it('never puts the server key or Authorization value in errors, even when the server echoes them', async () => {
    const encoded = AUTH.slice('Basic '.length);
    const { client } = clientWith(() => json({ status_code: '401', status_message: `bad key ${KEY} / ${encoded}`, validation_messages: [KEY] }, 401));
    const e = await gatewayFailure(client.charge(base));
    const everything = JSON.stringify({ message: e.message, messages: e.messages, stack: e.stack });
    expect(everything).not.toContain(KEY);
    expect(everything).not.toContain(encoded);
    expect(e.message).toContain('[redacted]');
  });

  it('does not show the key when the client itself is logged or serialised', async () => {
    const { client } = clientWith(() => pending());
    const { inspect } = await import('node:util');
    expect(inspect(client, { showHidden: true, depth: 5 })).not.toContain(KEY);
    expect(JSON.stringify(client)).not.toContain(KEY);
  });
});

describe('MidtransClient transport failures', () => {
  const hang = (call: Call) =>
    new Promise<Response>((_resolve, reject) => {
      call.signal?.addEventListener('abort', () => reject(call.signal!.reason));
    });

  it('times a charge out as outcome unknown, and does not retry it', async () => {
    const { client, calls } = clientWith(hang, { timeoutMs: 30 });
    const e = await gatewayFailure(client.charge(base));
    expect(e).toMatchObject({ kind: 'timeout', outcomeUnknown: true, operation: 'charge' });
    expect(calls).toHaveLength(1);
  });

  it('times a status read out as a plain timeout after its retries', async () => {
    const { client, calls, sleeps } = clientWith(hang, { timeoutMs: 20, statusRetries: 2 });
    const e = await gatewayFailure(client.status('ORD-1'));
    expect(e).toMatchObject({ kind: 'timeout', outcomeUnknown: false });
    expect(calls).toHaveLength(3);
    expect(sleeps).toHaveLength(2);
    expect(sleeps[1]!).toBeGreaterThan(sleeps[0]! - 250);
  });

  it('retries status after an outage and returns the answer that follows', async () => {
    const { client, calls } = clientWith((_c, n) => (n < 3 ? json({ status_code: '503', status_message: 'busy' }, 503) : json({ status_code: '200', order_id: 'ORD-1', transaction_status: 'settlement' })));
    const tx = await client.status('ORD-1');
    expect(tx.transactionStatus).toBe('settlement');
    expect(calls).toHaveLength(3);
  });

  it('does not retry status on not_found or bad_response', async () => {
    for (const response of [json({ status_code: '404', status_message: 'missing' }), new Response('garbage')]) {
      const { client, calls } = clientWith(() => response.clone());
      await gatewayFailure(client.status('ORD-1'));
      expect(calls).toHaveLength(1);
    }
  });

  it.each(['charge', 'cancel', 'expire', 'refund', 'directRefund'] as const)('never retries %s', async (op) => {
    const { client, calls } = clientWith(() => json({ status_code: '500', status_message: 'Sorry' }, 500), { statusRetries: 5 });
    const call =
      op === 'charge'
        ? client.charge(base)
        : op === 'refund' || op === 'directRefund'
          ? client[op]({ orderId: 'ORD-1', refundKey: 'r1', amount: '1000' })
          : client[op]('ORD-1');
    expect((await gatewayFailure(call)).kind).toBe('unavailable');
    expect(calls).toHaveLength(1);
  });

  it('knows a refused connection never sent the charge, but a reset one may have', async () => {
    const refused = clientWith(() => {
      throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    });
    expect(await gatewayFailure(refused.client.charge(base))).toMatchObject({ kind: 'unavailable', outcomeUnknown: false });
    const reset = clientWith(() => {
      throw new TypeError('fetch failed', { cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) });
    });
    expect(await gatewayFailure(reset.client.charge(base))).toMatchObject({ kind: 'unavailable', outcomeUnknown: true });
    expect(await gatewayFailure(reset.client.status('ORD-1'))).toMatchObject({ kind: 'unavailable', outcomeUnknown: false });
  });
});

describe('MidtransClient refunds', () => {
  it('always sends refund_key and an integer amount', async () => {
    const { client, calls } = clientWith(() =>
      json({ status_code: '200', transaction_status: 'partial_refund', refund_amount: '50000.00', refund_key: 'ORD-1-r1' }),
    );
    const result = await client.refund({ orderId: 'ORD-1', refundKey: 'ORD-1-r1', amount: '50000.00', reason: 'downgrade' });
    expect(calls[0]!.url).toBe('https://api.sandbox.example/v2/ORD-1/refund');
    expect(calls[0]!.body).toEqual({ refund_key: 'ORD-1-r1', amount: 50000, reason: 'downgrade' });
    expect(result).toMatchObject({ refundKey: 'ORD-1-r1', refundAmount: '50000.00', transactionStatus: 'partial_refund', statusCode: '200', accepted: true });
  });

  it('uses the direct endpoint and reports a bank rejection (202) as not accepted', async () => {
    const { client, calls } = clientWith(() => json({ status_code: '202', transaction_status: 'settlement', refund_amount: '0.00' }));
    const result = await client.directRefund({ orderId: 'ORD-1', refundKey: 'r2', amount: '1000' });
    expect(calls[0]!.url).toBe('https://api.sandbox.example/v2/ORD-1/refund/online/direct');
    expect(result).toMatchObject({ accepted: false, refundAmount: '0.00', transactionStatus: 'settlement', refundKey: 'r2' });
  });

  it('reads this refund’s own amount from refunds[] when the answer lists them', async () => {
    const { client } = clientWith(() =>
      json({
        status_code: '200',
        transaction_status: 'partial_refund',
        refund_amount: '12000.00',
        refunds: [
          { refund_key: 'r1', refund_amount: '5000.00' },
          { refund_key: 'r2', refund_amount: '7000.00' },
        ],
      }),
    );
    expect((await client.refund({ orderId: 'ORD-1', refundKey: 'r2', amount: '7000' })).refundAmount).toBe('7000.00');
  });

  it.each([
    ['a refund key with dots', { refundKey: 'r.1' }],
    ['decimals', { amount: '100.50' }],
    ['zero', { amount: '0' }],
  ])('rejects %s before any HTTP', async (_name, change) => {
    const { client, calls } = clientWith(() => json({ status_code: '200' }));
    expect((await gatewayFailure(client.refund({ orderId: 'ORD-1', refundKey: 'r1', amount: '1000', ...change }))).kind).toBe('validation');
    expect(calls).toHaveLength(0);
  });
});

describe('gatewayErrorToProblemCode', () => {
  it.each<[GatewayErrorKind, number | null, string | null, string]>([
    ['unavailable', null, null, 'gateway_unavailable'],
    ['timeout', null, null, 'gateway_unavailable'],
    ['bad_response', 502, null, 'gateway_unavailable'],
    ['bad_response', 200, '503', 'gateway_unavailable'],
    ['validation', 400, '400', 'gateway_error'],
    ['duplicate_order', 200, '406', 'gateway_error'],
    ['not_found', 200, '404', 'gateway_error'],
    ['unauthorized', 401, '401', 'gateway_error'],
    ['bad_response', 200, null, 'gateway_error'],
  ])('maps %s (HTTP %s, body %s) to %s', (kind, httpStatus, statusCode, expected) => {
    expect(gatewayErrorToProblemCode(new GatewayError(kind, 'x', { httpStatus, statusCode }))).toBe(expected);
  });
});
