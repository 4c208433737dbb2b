import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Topup } from '../../src/db/entities/topup.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { processRecordedNotification } from '../../src/services/gateway-events/process-notification.js';
import { DATABASES } from '../helpers/database.js';
import { makeTopup, signedNotification } from '../helpers/factories.js';
import { parsePrometheusText, sampleValue } from '../helpers/prometheus-text.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/*
 * Issue 28 row 1: what the webhook keeps of what anyone posts to it is bounded.
 * A body over 64 KiB is refused before it is stored; an invalid one keeps a 4 KiB excerpt and the
 * hash of the whole; a source's invalid notifications beyond WEBHOOK_INVALID_PER_MINUTE are
 * answered but not stored. Each server runs with TRUST_PROXY, so each test speaks from its own
 * address (X-Forwarded-For) and one test's quota does not reach into another.
 */

const TOKEN = 'webhook-bounds-metrics-token';
const KIB = 1024;
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

describe.each(DATABASES)('webhook bounds on %s', (kind) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer(kind, { env: { TRUST_PROXY: 'true', METRICS_TOKEN: TOKEN } });
    key = server.config.gateway.serverKey;
  });
  afterAll(() => server?.stop());

  const em = (): EntityManager => server.running.billing.orm.em.fork() as EntityManager;
  const from = (ip: string) => ({ 'content-type': 'application/json', 'x-forwarded-for': ip });
  const postRaw = (rawBody: string, ip: string) => server.api('POST', '/webhook/notification/', { rawBody, headers: from(ip) });
  const logCount = (ip?: string) => em().count(WebhookLog, ip ? { ipAddress: ip } : {});
  const dropped = async (reason: string) => {
    const res = await server.request('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    return sampleValue(parsePrometheusText(res.text), 'billing_webhook_dropped_total', { reason });
  };
  /** An unsigned notification (a forged signature) padded to about `bytes`. */
  const forged = (bytes: number, orderId = 'SUB-FORGED') =>
    JSON.stringify({ order_id: orderId, transaction_status: 'settlement', status_code: '200', gross_amount: '150000.00', signature_key: 'f'.repeat(128), padding: 'x'.repeat(bytes) });
  /** A correctly signed notification for an order of ours, padded to about `bytes`. */
  async function signed(bytes = 0) {
    const topup = await makeTopup(em());
    return { topup, body: JSON.stringify({ ...signedNotification(key, { order_id: topup.orderId, transaction_status: 'settlement', gross_amount: '100000.00' }), padding: 'x'.repeat(bytes) }) };
  }

  it('a correctly signed body of 70 KiB answers 413 problem+json, stores nothing and is counted', async () => {
    const { topup, body } = await signed(70 * KIB);
    const logsBefore = await logCount();
    const countedBefore = await dropped('too_large');
    const res = await postRaw(body, '198.51.100.1');
    expect(res.status).toBe(413);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(res.body.code).toBe('payload_too_large');
    expect(await logCount()).toBe(logsBefore);
    expect((await em().findOneOrFail(Topup, topup.id)).status).toBe('pending');
    expect(await dropped('too_large')).toBe(countedBefore + 1);
  });

  it('an invalid 1 MB body answers 413, also when sent without a length (chunked), and stores nothing', async () => {
    const logsBefore = await logCount();
    const body = forged(1024 * KIB);
    expect((await postRaw(body, '198.51.100.2')).status).toBe(413);
    // No Content-Length: the limit is on the bytes read, not on what the client declared.
    const bytes = Buffer.from(body);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 16 * KIB) controller.enqueue(bytes.subarray(i, i + 16 * KIB));
        controller.close();
      },
    });
    const chunked = await fetch(`${server.url}/api/subscriptions/webhook/notification/`, {
      method: 'POST',
      headers: from('198.51.100.2'),
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect((await chunked.json()).code).toBe('payload_too_large');
    expect(await logCount()).toBe(logsBefore);
  });

  it('a body of exactly 64 KiB is still read and judged (the limit is beyond it)', async () => {
    const base = forged(0);
    const body = forged(64 * KIB - Buffer.byteLength(base));
    expect(Buffer.byteLength(body)).toBe(64 * KIB);
    const res = await postRaw(body, '198.51.100.3');
    expect(res.status).toBe(403);
    expect(res.body.status).toBe('invalid');
  });

  it('a 60 KiB body with a forged signature answers 403; its log keeps the first 4 KiB and the SHA-256 of the whole', async () => {
    const body = forged(60 * KIB);
    const res = await postRaw(body, '198.51.100.4');
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ status: 'invalid', webhook_log_id: expect.any(String) });
    const log = await em().findOneOrFail(WebhookLog, res.body.webhook_log_id);
    expect(log.status).toBe('invalid');
    expect(Buffer.byteLength(log.payload)).toBeLessThanOrEqual(4 * KIB);
    expect(body.startsWith(log.payload)).toBe(true);
    expect(log.payloadTruncated).toBe(true);
    expect(log.payloadSha256).toBe(sha256(body));
    expect(log.orderId).toBe('SUB-FORGED');
  });

  it('a replay of an excerpt does not judge the excerpt: it stays invalid, saying why', async () => {
    const res = await postRaw(forged(8 * KIB), '198.51.100.7');
    const ctx = { em: em(), config: server.config, clock: server.running.billing.clock };
    const replayed = await processRecordedNotification(ctx, res.body.webhook_log_id);
    expect(replayed.result).toBe('invalid');
    expect(replayed.error).toMatch(/first 4 KiB/);
    expect(replayed.log).toMatchObject({ status: 'invalid', payloadTruncated: true, attempts: 2 });
  });

  it('the excerpt never cuts a character in two, and the hash is of the bytes as sent', async () => {
    // 3-byte characters from the start: 4096 is not a multiple of 3.
    const body = JSON.stringify({ order_id: 'SUB-X', note: '€'.repeat(3000), transaction_status: 'settlement', status_code: '200', gross_amount: '1.00', signature_key: 'bad' });
    const res = await postRaw(body, '198.51.100.5');
    expect(res.status).toBe(403);
    const log = await em().findOneOrFail(WebhookLog, res.body.webhook_log_id);
    expect(log.payload).not.toContain('\uFFFD');
    expect(Buffer.byteLength(log.payload)).toBeLessThanOrEqual(4 * KIB);
    expect(body.startsWith(log.payload)).toBe(true);
    expect(log.payloadSha256).toBe(sha256(Buffer.from(body, 'utf8')));
  });

  it('a small invalid body is kept whole (not marked as an excerpt); a processed one keeps its whole payload and hash', async () => {
    const small = forged(10);
    const invalid = await postRaw(small, '198.51.100.6');
    const invalidLog = await em().findOneOrFail(WebhookLog, invalid.body.webhook_log_id);
    expect(invalidLog).toMatchObject({ payload: small, payloadTruncated: false, payloadSha256: sha256(small) });

    const { body } = await signed(20 * KIB);
    const ok = await postRaw(body, '198.51.100.6');
    expect(ok.body.status).toBe('ok');
    const okLog = await em().findOneOrFail(WebhookLog, ok.body.webhook_log_id);
    expect(okLog).toMatchObject({ payload: body, payloadTruncated: false, payloadSha256: sha256(body) });
  });

  it('61+ invalid notifications from one source within a minute: all 403, 60 stored, the rest counted; other sources and valid notifications unaffected', async () => {
    const source = '203.0.113.7';
    const countedBefore = await dropped('invalid_over_quota');
    const answers = [];
    for (let i = 0; i < 65; i++) answers.push(await postRaw(forged(2 * KIB, `SUB-FLOOD-${i}`), source));
    expect(answers.map((a) => a.status)).toEqual(Array(65).fill(403));
    expect(answers.every((a) => a.body.status === 'invalid')).toBe(true);
    expect(answers.slice(0, 60).every((a) => typeof a.body.webhook_log_id === 'string')).toBe(true);
    expect(answers.slice(60).map((a) => a.body.webhook_log_id)).toEqual(Array(5).fill(null));
    expect(await logCount(source)).toBe(60);

    // An unreadable body over the quota: still 400, and says it was not logged.
    const unreadable = await postRaw('not json at all', source);
    expect(unreadable.status).toBe(400);
    expect(unreadable.body.detail).toMatch(/not logged/);
    expect(await logCount(source)).toBe(60);
    expect(await dropped('invalid_over_quota')).toBe(countedBefore + 6);

    // Another source has a quota of its own.
    const other = await postRaw(forged(10), '203.0.113.8');
    expect(other.status).toBe(403);
    expect(other.body.webhook_log_id).toEqual(expect.any(String));

    // The quota never touches a valid notification, even from the flooding source.
    const { topup, body } = await signed();
    const valid = await postRaw(body, source);
    expect(valid.status).toBe(200);
    expect(valid.body).toEqual({ status: 'ok', webhook_log_id: expect.any(String) });
    expect((await em().findOneOrFail(Topup, topup.id)).status).toBe('success');
    expect(await logCount(source)).toBe(61);
  });
});

describe.each(DATABASES)('WEBHOOK_INVALID_PER_MINUTE on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind, { env: { WEBHOOK_INVALID_PER_MINUTE: '2' } });
  });
  afterAll(() => server?.stop());

  it('sets the quota: the third invalid notification of the minute is answered 403 with no log', async () => {
    const post = () => server.api('POST', '/webhook/notification/', { body: { order_id: 'SUB-Q', transaction_status: 'settlement', status_code: '200', gross_amount: '1.00', signature_key: 'bad' } });
    const ids = [];
    for (let i = 0; i < 3; i++) {
      const res = await post();
      expect(res.status).toBe(403);
      ids.push(res.body.webhook_log_id);
    }
    expect(ids[0]).toEqual(expect.any(String));
    expect(ids[1]).toEqual(expect.any(String));
    expect(ids[2]).toBeNull();
    expect(await server.running.billing.orm.em.fork().count(WebhookLog, {})).toBe(2);
  });
});
