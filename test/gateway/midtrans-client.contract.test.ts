// The client against the simulator over real HTTP: the same code path production uses, with
// only the base URL different.
import { describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/gateway/signature.js';
import type { Bank, ChargeRequest, GatewayTransaction } from '../../src/gateway/types.js';
import { BANK_REJECT_REASON } from '../../src/simulator/index.js';
import { gatewayFailure } from '../helpers/gateway-failure.js';
import { NotificationReceiver, SERVER_KEY, orderId, harnessForFile } from '../helpers/simulator.js';

const h = harnessForFile();

const req = (change: Partial<ChargeRequest> = {}): ChargeRequest => ({
  orderId: orderId(),
  grossAmount: '150000.00',
  currency: 'IDR',
  paymentType: 'bank_transfer',
  ...change,
});

/** Waits for the order's notifications to reach `statuses` and checks each one like the webhook will. */
async function notificationsFor(id: string, statuses: string[]): Promise<Record<string, unknown>[]> {
  await h.receiver.waitFor(() => h.receiver.for(id).length >= statuses.length);
  const got = h.receiver.for(id);
  expect(got.map((n) => n.body['transaction_status'])).toEqual(statuses);
  for (const n of got) {
    expect(n.headers['user-agent']).toBe('Veritrans');
    expect(n.headers['content-type']).toMatch(/^application\/json/);
    expect(verifySignature(n.body, SERVER_KEY)).toBe(true);
    expect(n.body['gross_amount']).toMatch(/^\d+\.00$/);
    expect(n.body['status_message']).toBe('midtrans payment notification');
  }
  return got.map((n) => n.body);
}

/** The status answer agrees with what happened, and is itself signed. */
async function statusIs(id: string, transactionStatus: string, fraudStatus?: string): Promise<GatewayTransaction> {
  const tx = await h.client().status(id);
  expect(tx.transactionStatus).toBe(transactionStatus);
  if (fraudStatus) expect(tx.fraudStatus).toBe(fraudStatus);
  expect(verifySignature(tx.raw, SERVER_KEY)).toBe(true);
  return tx;
}

function chargesSeen(): number {
  return h.sim.requests().filter((r) => r.operation === 'charge').length;
}

describe('bank transfer', () => {
  it.each<[Bank, RegExp]>([
    ['bca', /^12345\d{6}$/],
    ['bni', /^9880\d{12}$/],
    ['bri', /^\d{18}$/],
    ['cimb', /^1899\d{12}$/],
  ])('charges a %s VA, settles it and notifies', async (bank, vaPattern) => {
    const r = req({ bank });
    const tx = await h.client().charge(r);
    expect(tx).toMatchObject({ orderId: r.orderId, transactionStatus: 'pending', statusCode: '201', grossAmount: '150000.00', paymentType: 'bank_transfer' });
    expect(tx.paymentDetails.bank).toBe(bank);
    expect(tx.paymentDetails.va_number).toMatch(vaPattern);
    const created = new Date(String(tx.raw['transaction_time']).replace(' ', 'T') + '+07:00');
    expect(tx.expiryTime!.getTime() - created.getTime()).toBe(24 * 3600_000);
    expect(tx.paymentDetails.expiry_time).toBe(tx.expiryTime!.toISOString());

    const result = await h.sim.act(r.orderId, 'settle');
    expect(result).toMatchObject({ order_id: r.orderId, transaction_status: 'settlement', notification: { url: h.receiver.url, http_status: 200, error: null } });
    const [pendingNote, settled] = await notificationsFor(r.orderId, ['pending', 'settlement']);
    expect(pendingNote).toMatchObject({ status_code: '201', va_numbers: [{ bank, va_number: tx.paymentDetails.va_number }], payment_amounts: [] });
    expect(settled).toMatchObject({ status_code: '200', fraud_status: 'accept', transaction_id: tx.transactionId, merchant_id: 'G000000001', currency: 'IDR' });
    expect(settled!['settlement_time']).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(settled!['payment_amounts']).toEqual([{ paid_at: settled!['settlement_time'], amount: '150000.00' }]);
    await statusIs(r.orderId, 'settlement');
  });

  it('charges a Permata VA through bank_transfer and reports permata_va_number only', async () => {
    const r = req({ bank: 'permata' });
    const tx = await h.client().charge(r);
    expect(tx.paymentDetails).toMatchObject({ bank: 'permata', va_number: expect.stringMatching(/^8562\d{12}$/) });
    expect(tx.raw['permata_va_number']).toBe(tx.paymentDetails.va_number);
    expect(tx.raw).not.toHaveProperty('va_numbers');
    await h.sim.act(r.orderId, 'settle');
    const [, settled] = await notificationsFor(r.orderId, ['pending', 'settlement']);
    expect(settled!['permata_va_number']).toBe(tx.paymentDetails.va_number);
  });

  it('cannot be refunded through the gateway', async () => {
    const r = req();
    await h.client().charge(r);
    await h.sim.act(r.orderId, 'settle');
    expect((await gatewayFailure(h.client().refund({ orderId: r.orderId, refundKey: 'bt-r1', amount: '150000' }))).kind).toBe('cannot_modify');
  });
});

describe('Mandiri bill (echannel)', () => {
  it('gives a bill key and biller code and settles', async () => {
    const r = req({ paymentType: 'echannel' });
    const tx = await h.client().charge(r);
    expect(tx.paymentDetails).toEqual({ bank: 'mandiri', bill_key: expect.stringMatching(/^\d{12}$/), biller_code: '70012', expiry_time: tx.expiryTime!.toISOString() });
    await h.sim.act(r.orderId, 'settle');
    const [, settled] = await notificationsFor(r.orderId, ['pending', 'settlement']);
    expect(settled).toMatchObject({ bill_key: tx.paymentDetails.bill_key, biller_code: '70012', payment_type: 'echannel' });
    await statusIs(r.orderId, 'settlement');
  });
});

describe('e-wallets', () => {
  it('gives GoPay a QR image served by the simulator, a deeplink and a 15-minute expiry', async () => {
    const r = req({ paymentType: 'gopay' });
    const tx = await h.client().charge(r);
    expect(tx.paymentDetails.qr_code_url).toBe(`${h.origin}/_simulator/v2/gopay/${tx.transactionId}/qr-code`);
    expect(tx.paymentDetails.deeplink_url).toMatch(/^gojek:\/\/gopay\/merchanttransfer\?tref=/);
    const created = new Date(String(tx.raw['transaction_time']).replace(' ', 'T') + '+07:00');
    expect(tx.expiryTime!.getTime() - created.getTime()).toBe(15 * 60_000);
    const image = await fetch(tx.paymentDetails.qr_code_url!);
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect(await image.text()).toContain('<svg');
    await h.sim.act(r.orderId, 'settle');
    const [, settled] = await notificationsFor(r.orderId, ['pending', 'settlement']);
    expect(settled).toMatchObject({ payment_type: 'gopay', payment_option_type: 'GOPAY_WALLET' });
  });

  it('gives QRIS a QR image and the QRIS notification fields', async () => {
    const r = req({ paymentType: 'qris' });
    const tx = await h.client().charge(r);
    expect(tx.paymentDetails.qr_code_url).toBe(`${h.origin}/_simulator/v2/qris/${tx.transactionId}/qr-code`);
    expect(tx.raw).toMatchObject({ acquirer: 'gopay', qr_string: expect.stringMatching(/^000201/) });
    expect((await fetch(tx.paymentDetails.qr_code_url!)).status).toBe(200);
    await h.sim.act(r.orderId, 'settle');
    const [, settled] = await notificationsFor(r.orderId, ['pending', 'settlement']);
    expect(settled).toMatchObject({ payment_type: 'qris', acquirer: 'gopay', issuer: 'gopay', transaction_type: 'on-us' });
  });

  it('gives ShopeePay a deeplink, refunds it in full only', async () => {
    const r = req({ paymentType: 'shopeepay', callbackUrl: 'https://app.example/back' });
    const tx = await h.client().charge(r);
    expect(tx.paymentDetails).toEqual({ deeplink_url: expect.stringMatching(/^https:\/\//), expiry_time: tx.expiryTime!.toISOString() });
    await h.sim.act(r.orderId, 'settle');
    const partial = await gatewayFailure(h.client().refund({ orderId: r.orderId, refundKey: `${r.orderId}-p`, amount: '50000' }));
    expect(partial.kind).toBe('refund_rejected');
    const full = await h.client().refund({ orderId: r.orderId, refundKey: `${r.orderId}-f`, amount: '150000' });
    expect(full).toMatchObject({ accepted: true, transactionStatus: 'refund', refundAmount: '150000.00' });
    const notes = await notificationsFor(r.orderId, ['pending', 'settlement', 'refund']);
    expect(notes[1]).toMatchObject({ shopeepay_reference_number: expect.stringMatching(/^\d{18}$/) });
  });
});

describe('cards', () => {
  it('captures an accept token at once, saves the card, and the saved token renews at once too', async () => {
    const r = req({ paymentType: 'credit_card', cardToken: 'sim-card-accept-1', saveCard: true });
    const tx = await h.client().charge(r);
    expect(tx).toMatchObject({ transactionStatus: 'capture', fraudStatus: 'accept', statusCode: '200' });
    expect(tx.savedTokenId).toMatch(/^sim-card-accept-saved-/);
    expect(tx.raw['saved_token_id_expired_at']).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(tx.paymentDetails).toEqual({ masked_card: '48111111-1114' });
    const [captured] = await notificationsFor(r.orderId, ['capture']);
    expect(captured).toMatchObject({ status_code: '200', fraud_status: 'accept', saved_token_id: tx.savedTokenId, approval_code: expect.any(String) });

    const renewal = req({ paymentType: 'credit_card', cardToken: tx.savedTokenId!, merchantInitiated: true });
    const renewed = await h.client().charge(renewal);
    expect(renewed).toMatchObject({ transactionStatus: 'capture', fraudStatus: 'accept' });
    expect(h.sim.transaction(renewal.orderId)?.card?.initiated_by).toBe('merchant');

    await h.sim.act(r.orderId, 'settle');
    await notificationsFor(r.orderId, ['capture', 'settlement']);
    await statusIs(r.orderId, 'settlement');
  });

  it('holds a challenged capture until the capture command accepts it', async () => {
    const r = req({ paymentType: 'credit_card', cardToken: 'sim-card-challenge' });
    const tx = await h.client().charge(r);
    expect(tx).toMatchObject({ transactionStatus: 'capture', fraudStatus: 'challenge', statusCode: '201' });
    await statusIs(r.orderId, 'capture', 'challenge');
    const result = await h.sim.act(r.orderId, 'capture', { fraudStatus: 'accept' });
    expect(result.transaction_status).toBe('capture');
    const notes = await notificationsFor(r.orderId, ['capture', 'capture']);
    expect(notes.map((n) => [n['fraud_status'], n['status_code']])).toEqual([
      ['challenge', '201'],
      ['accept', '200'],
    ]);
    await statusIs(r.orderId, 'capture', 'accept');
  });

  it('denies a deny token with 202 and notifies', async () => {
    const r = req({ paymentType: 'credit_card', cardToken: 'sim-card-deny' });
    const tx = await h.client().charge(r);
    expect(tx).toMatchObject({ transactionStatus: 'deny', statusCode: '202' });
    const [denied] = await notificationsFor(r.orderId, ['deny']);
    expect(denied).toMatchObject({ status_code: '202', channel_response_code: '05' });
    expect(denied).not.toHaveProperty('approval_code');
    await statusIs(r.orderId, 'deny');
  });

  it('sends any other token to 3-D Secure and waits for a command', async () => {
    const r = req({ paymentType: 'credit_card', cardToken: 'browser-token-123' });
    const tx = await h.client().charge(r);
    expect(tx).toMatchObject({ transactionStatus: 'pending', statusCode: '201' });
    expect(tx.paymentDetails.redirect_url).toBe(`${h.origin}/_simulator/3ds/${tx.transactionId}`);
    const page = await fetch(tx.paymentDetails.redirect_url!);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(r.orderId);
    await h.sim.act(r.orderId, 'capture');
    await notificationsFor(r.orderId, ['pending', 'capture']);
    await statusIs(r.orderId, 'capture', 'accept');
  });

  it('denies a 3-D Secure charge on the deny command', async () => {
    const r = req({ paymentType: 'credit_card', cardToken: 'browser-token-456' });
    await h.client().charge(r);
    await h.sim.act(r.orderId, 'deny');
    await notificationsFor(r.orderId, ['pending', 'deny']);
    await statusIs(r.orderId, 'deny');
  });

  it('refunds a card directly, and reports a bank rejection as not accepted', async () => {
    const r = req({ paymentType: 'credit_card', cardToken: 'sim-card-accept' });
    await h.client().charge(r);
    await h.sim.act(r.orderId, 'settle');
    const rejected = await h.client().directRefund({ orderId: r.orderId, refundKey: `${r.orderId}-x`, amount: '10000', reason: BANK_REJECT_REASON });
    expect(rejected).toMatchObject({ accepted: false, statusCode: '202', refundAmount: '0.00', transactionStatus: 'settlement' });
    const done = await h.client().directRefund({ orderId: r.orderId, refundKey: `${r.orderId}-d`, amount: '40000' });
    expect(done).toMatchObject({ accepted: true, statusCode: '200', refundAmount: '40000.00', transactionStatus: 'partial_refund', refundKey: `${r.orderId}-d` });
    const notes = await notificationsFor(r.orderId, ['capture', 'settlement', 'partial_refund']);
    expect(notes[2]).toMatchObject({ refund_amount: '40000.00', refunds: [expect.objectContaining({ refund_key: `${r.orderId}-d`, refund_amount: '40000.00' })] });
    const status = await statusIs(r.orderId, 'partial_refund');
    expect(status.refundAmount).toBe('40000.00');
  });
});

describe('actions', () => {
  it('cancels a pending charge through the client; the order id can then be reused', async () => {
    const r = req();
    const first = await h.client().charge(r);
    const cancelled = await h.client().cancel(r.orderId);
    expect(cancelled).toMatchObject({ transactionStatus: 'cancel', statusCode: '200' });
    const [, note] = await notificationsFor(r.orderId, ['pending', 'cancel']);
    expect(note!['status_code']).toBe('202');
    await statusIs(r.orderId, 'cancel');
    expect((await gatewayFailure(h.client().cancel(r.orderId))).kind).toBe('cannot_modify');
    const second = await h.client().charge(r);
    expect(second.transactionId).not.toBe(first.transactionId);
    await statusIs(r.orderId, 'pending');
  });

  it('expires a pending charge through the client with 407; the order id can then be reused', async () => {
    const r = req({ paymentType: 'gopay' });
    await h.client().charge(r);
    const expired = await h.client().expire(r.orderId);
    expect(expired).toMatchObject({ transactionStatus: 'expire', statusCode: '407' });
    const [, note] = await notificationsFor(r.orderId, ['pending', 'expire']);
    expect(note!['status_code']).toBe('202');
    const status = await statusIs(r.orderId, 'expire');
    expect(status.statusCode).toBe('407');
    await h.client().charge(r);
  });

  it.each(['cancel', 'expire', 'deny'] as const)('moves a pending charge with the %s command and notifies', async (action) => {
    const r = req({ paymentType: 'qris' });
    await h.client().charge(r);
    const result = await h.sim.act(r.orderId, action);
    expect(result.transaction_status).toBe(action);
    const [, note] = await notificationsFor(r.orderId, ['pending', action]);
    expect(note!['status_code']).toBe('202');
    const status = await statusIs(r.orderId, action);
    expect(status.statusCode).toBe(action === 'expire' ? '407' : '202');
  });

  it('resends the pending notification on the pending command', async () => {
    const r = req({ paymentType: 'echannel' });
    await h.client().charge(r);
    await h.sim.act(r.orderId, 'pending');
    const notes = await notificationsFor(r.orderId, ['pending', 'pending']);
    expect(notes[0]).toEqual(notes[1]);
  });

  it('refunds partially then fully through the client, with cumulative amounts', async () => {
    const r = req({ paymentType: 'gopay' });
    await h.client().charge(r);
    await h.sim.act(r.orderId, 'settle');
    const first = await h.client().refund({ orderId: r.orderId, refundKey: `${r.orderId}-1`, amount: '50000.00', reason: 'downgrade' });
    expect(first).toMatchObject({ accepted: true, transactionStatus: 'partial_refund', refundAmount: '50000.00' });
    expect((await gatewayFailure(h.client().refund({ orderId: r.orderId, refundKey: `${r.orderId}-2`, amount: '100001' }))).kind).toBe('refund_rejected');
    const second = await h.client().refund({ orderId: r.orderId, refundKey: `${r.orderId}-3`, amount: '100000' });
    expect(second).toMatchObject({ transactionStatus: 'refund', refundAmount: '100000.00' });
    const notes = await notificationsFor(r.orderId, ['pending', 'settlement', 'partial_refund', 'refund']);
    expect(notes.slice(2).map((n) => n['refund_amount'])).toEqual(['50000.00', '150000.00']);
    const status = await statusIs(r.orderId, 'refund');
    expect(status.refundAmount).toBe('150000.00');
    expect((await gatewayFailure(h.client().refund({ orderId: r.orderId, refundKey: `${r.orderId}-4`, amount: '1' }))).kind).toBe('cannot_modify');
  });

  it('replays a refund retried with the same refund_key and refuses the key for another amount', async () => {
    const r = req({ paymentType: 'qris' });
    await h.client().charge(r);
    await h.sim.act(r.orderId, 'settle');
    const refund = { orderId: r.orderId, refundKey: `${r.orderId}-k`, amount: '30000' };
    const first = await h.client().refund(refund);
    const again = await h.client().refund(refund);
    expect(again.raw).toEqual(first.raw);
    expect(h.sim.transaction(r.orderId)!.refunds).toHaveLength(1);
    const reused = await gatewayFailure(h.client().refund({ ...refund, amount: '40000' }));
    expect(reused).toMatchObject({ kind: 'duplicate_order', statusCode: '406' });
    await statusIs(r.orderId, 'partial_refund');
  });

  it('refunds with the command, in part and then the rest', async () => {
    const r = req({ paymentType: 'credit_card', cardToken: 'sim-card-accept' });
    await h.client().charge(r);
    await h.sim.act(r.orderId, 'settle');
    expect((await h.sim.act(r.orderId, 'refund', { amount: 20000 })).transaction_status).toBe('partial_refund');
    expect((await h.sim.act(r.orderId, 'refund')).transaction_status).toBe('refund');
    const notes = await notificationsFor(r.orderId, ['capture', 'settlement', 'partial_refund', 'refund']);
    expect(notes[3]!['refund_amount']).toBe('150000.00');
    await statusIs(r.orderId, 'refund');
  });

  it('answers not_found for an unknown order', async () => {
    const e = await gatewayFailure(h.client().status('NO-SUCH-ORDER'));
    expect(e).toMatchObject({ kind: 'not_found', statusCode: '404', httpStatus: 200 });
  });
});

describe('order ids and idempotency', () => {
  it('refuses a second charge with a live order id', async () => {
    const r = req();
    await h.client().charge(r);
    const e = await gatewayFailure(h.client().charge({ ...r, paymentType: 'gopay' }));
    expect(e).toMatchObject({ kind: 'duplicate_order', statusCode: '406' });
  });

  it('replays a charge retried with the same Idempotency-Key instead of refusing it', async () => {
    const r = req({ paymentType: 'gopay', idempotencyKey: `idem-${orderId()}` });
    const before = chargesSeen();
    const first = await h.client().charge(r);
    const second = await h.client().charge(r);
    expect(second.transactionId).toBe(first.transactionId);
    expect(second.raw).toEqual(first.raw);
    expect(chargesSeen() - before).toBe(2);
    expect(h.sim.transaction(r.orderId)).toBeDefined();
    await notificationsFor(r.orderId, ['pending']);
  });

  it('sends notifications only to the override URL when one is given', async () => {
    const other = await new NotificationReceiver().start();
    try {
      const r = req({ notificationUrl: other.url });
      await h.client().charge(r);
      const result = await h.sim.act(r.orderId, 'settle');
      expect(result.notification!.url).toBe(other.url);
      await other.waitFor((all) => all.length === 2);
      expect(other.received.map((n) => n.body['transaction_status'])).toEqual(['pending', 'settlement']);
      expect(h.receiver.for(r.orderId)).toHaveLength(0);
    } finally {
      await other.stop();
    }
  });
});

describe('validation', () => {
  it('rejects decimals for IDR in the client, before the simulator sees anything', async () => {
    const before = chargesSeen();
    const e = await gatewayFailure(h.client().charge(req({ grossAmount: '150000.50' })));
    expect(e.kind).toBe('validation');
    expect(chargesSeen()).toBe(before);
  });

  it.each<[string, Partial<ChargeRequest>]>([
    ['an unknown bank', { bank: 'bsi' as Bank }],
    ['a missing card token', { paymentType: 'credit_card' }],
    ['an over-long order id', { orderId: 'X'.repeat(51) }],
  ])('rejects %s in the client too', async (_name, change) => {
    const before = chargesSeen();
    expect((await gatewayFailure(h.client().charge(req(change)))).kind).toBe('validation');
    expect(chargesSeen()).toBe(before);
  });

  it('gets the same answers from the simulator when they are sent anyway', async () => {
    const send = (body: unknown) => h.request('POST', '/_simulator/v2/charge', { body: JSON.stringify(body) });
    const details = { order_id: orderId(), gross_amount: 150000 };
    const bank = await send({ payment_type: 'bank_transfer', transaction_details: details, bank_transfer: { bank: 'bsi' } });
    expect(bank.status).toBe(400);
    expect(bank.json).toMatchObject({ status_code: '400', validation_messages: [expect.stringContaining('bank_transfer.bank')] });
    const token = await send({ payment_type: 'credit_card', transaction_details: details, credit_card: {} });
    expect(token.json).toMatchObject({ status_code: '411', status_message: 'Token id is missing, invalid, or timed out' });
    const long = await send({ payment_type: 'gopay', transaction_details: { ...details, order_id: 'X'.repeat(51) } });
    expect(long.status).toBe(400);
    expect(long.json['validation_messages']).toEqual([expect.stringContaining('order_id')]);
    const decimals = await send({ payment_type: 'gopay', transaction_details: { ...details, gross_amount: 150000.5 } });
    expect(decimals.status).toBe(400);
  });
});

describe('faults', () => {
  it('maps a 500 to unavailable with an unknown outcome (it may come after the charge) and does not retry the charge', async () => {
    h.sim.setFault({ mode: 'http_500', operations: ['charge'] });
    const before = chargesSeen();
    const e = await gatewayFailure(h.client({ statusRetries: 3 }).charge(req()));
    expect(e).toMatchObject({ kind: 'unavailable', httpStatus: 500, statusCode: '500', outcomeUnknown: true });
    expect(chargesSeen() - before).toBe(1);
  });

  it('times a held charge out as outcome unknown; the simulator saw exactly one charge', async () => {
    h.sim.setFault({ mode: 'timeout', operations: ['charge'] });
    const before = chargesSeen();
    const r = req();
    const e = await gatewayFailure(h.client({ timeoutMs: 150 }).charge(r));
    expect(e).toMatchObject({ kind: 'timeout', outcomeUnknown: true });
    expect(chargesSeen() - before).toBe(1);
    h.sim.setFault({ mode: 'none' });
    // The held charge was never processed, which status confirms.
    expect((await gatewayFailure(h.client().status(r.orderId))).kind).toBe('not_found');
  });

  it('maps a malformed answer to bad_response', async () => {
    h.sim.setFault({ mode: 'malformed', count: 1 });
    const e = await gatewayFailure(h.client().charge(req()));
    expect(e).toMatchObject({ kind: 'bad_response', httpStatus: 200 });
  });

  it('retries status through a 500 and a timeout and then answers', async () => {
    const r = req();
    await h.client().charge(r);
    const statusCalls = () => h.sim.requests().filter((x) => x.operation === 'status').length;
    const before = statusCalls();
    h.sim.setFault({ mode: 'http_500', count: 1, operations: ['status'] });
    await statusIs(r.orderId, 'pending');
    expect(statusCalls() - before).toBe(2);

    h.sim.setFault({ mode: 'timeout', count: 2, operations: ['status'] });
    const tx = await h.client({ timeoutMs: 100, statusRetries: 2 }).status(r.orderId);
    expect(tx.transactionStatus).toBe('pending');
    expect(statusCalls() - before).toBe(2 + 3);
  });

  it('gives up on status after its retries', async () => {
    h.sim.setFault({ mode: 'http_500', operations: ['status'] });
    const before = h.sim.requests().length;
    const e = await gatewayFailure(h.client({ statusRetries: 2 }).status('ANY-ORDER'));
    expect(e).toMatchObject({ kind: 'unavailable', outcomeUnknown: false });
    expect(h.sim.requests().length - before).toBe(3);
  });

  it('limits a fault to its operations', async () => {
    h.sim.setFault({ mode: 'http_500', operations: ['refund'] });
    const r = req({ paymentType: 'gopay' });
    await h.client().charge(r);
    await h.sim.act(r.orderId, 'settle');
    expect((await gatewayFailure(h.client().refund({ orderId: r.orderId, refundKey: `${r.orderId}-f`, amount: '1000' }))).kind).toBe('unavailable');
    await statusIs(r.orderId, 'settlement');
  });
});

describe('authentication', () => {
  it('answers a wrong server key with unauthorized, without echoing the key', async () => {
    const wrongKey = 'SB-Mid-server-WRONG-key';
    const e = await gatewayFailure(h.client({ serverKey: wrongKey }).charge(req()));
    expect(e).toMatchObject({ kind: 'unauthorized', httpStatus: 401, statusCode: '401' });
    expect(JSON.stringify({ m: e.message, ms: e.messages })).not.toContain(wrongKey);
  });
});
