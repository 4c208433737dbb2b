import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Notification } from '../../../src/db/entities/notification.js';
import { openOrm } from '../../../src/db/orm.js';
import { createDeliveryChannels } from '../../../src/services/delivery/channels.js';
import { deliverDueNotifications } from '../../../src/services/delivery/deliver-due-notifications.js';
import {
  HOUR,
  MINUTE,
  PAYMENT_PENDING_DATA,
  closedPort,
  deliveryHarness,
  entry,
  recordEvent,
} from '../../helpers/delivery.js';
import { DATABASES } from '../../helpers/database.js';

const SECRET = 'whsec_test_secret';

describe.each(DATABASES)('outbound webhook delivery on %s', (kind) => {
  const h = deliveryHarness(kind);
  const useReceiver = (url: string, env: Record<string, string> = {}) => h.configure({ OUTBOUND_WEBHOOK_URL: url, ...env });
  async function newEntry(type: Notification['notificationType'] = 'payment_pending', data: Record<string, unknown> = PAYMENT_PENDING_DATA): Promise<string> {
    const user = await h.user();
    return (await recordEvent(h.store.orm, h.config, h.clock, user, type, data)).find((n) => n.channel === 'webhook')!.id;
  }

  it('posts {id, type, created_at, data} with an HMAC-SHA256 signature over "<t>.<raw body>" and the event id', async () => {
    useReceiver(h.receiver.url);
    const id = await newEntry();

    expect((await h.deliver()).delivered).toEqual([id]);

    expect(h.receiver.posts).toHaveLength(1);
    const { headers, body } = h.receiver.posts[0];
    expect(headers['content-type']).toBe('application/json');
    expect(headers['x-billing-event-id']).toBe(id);
    expect(JSON.parse(body)).toEqual({ id, type: 'payment_pending', created_at: '2026-11-22T10:00:00.000Z', data: PAYMENT_PENDING_DATA });
    // Verified independently of the code under test, as a receiver would.
    const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(headers['x-billing-signature']));
    expect(match).not.toBeNull();
    const [, t, v1] = match!;
    expect(Number(t)).toBe(Math.floor(h.clock.now().getTime() / 1000));
    expect(v1).toBe(createHmac('sha256', SECRET).update(`${t}.${body}`).digest('hex'));

    expect(await entry(h.store.orm, id)).toMatchObject({ status: 'sent', attempts: 1, lastError: null });
    const attempts = await h.attemptsOf(id);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ outcome: 'delivered', httpStatus: 200, error: null });
    expect(attempts[0].attemptedAt.toISOString()).toBe(h.clock.now().toISOString());
    expect(attempts[0].durationMs).toBeGreaterThanOrEqual(0);
  });

  it('retries a receiver that answers 500 and delivers once it recovers, with one record per attempt', async () => {
    useReceiver(h.receiver.url);
    h.receiver.behaviour = 'fail';
    const id = await newEntry('payment_succeeded');

    expect((await h.deliver()).retrying).toEqual([id]);
    const waiting = await entry(h.store.orm, id);
    expect(waiting).toMatchObject({ status: 'queued', attempts: 1, lastError: 'HTTP 500: Internal Server Error: database is down' });
    expect(waiting.nextAttemptAt!.getTime() - h.clock.now().getTime()).toBe(MINUTE);

    h.receiver.behaviour = 'ok';
    h.clock.advance(MINUTE);
    expect((await h.deliver()).delivered).toEqual([id]);
    expect(h.receiver.posts.map((p) => p.headers['x-billing-event-id'])).toEqual([id, id]);
    expect(await entry(h.store.orm, id)).toMatchObject({ status: 'sent', attempts: 2, lastError: null });
    const attempts = await h.attemptsOf(id);
    expect(attempts.map((a) => [a.outcome, a.httpStatus])).toEqual([
      ['failed', 500],
      ['delivered', 200],
    ]);
  });

  it('gives up on a receiver that never answers after the configured timeout, and retries it', async () => {
    useReceiver(h.receiver.url, { OUTBOUND_WEBHOOK_TIMEOUT_MS: '300' });
    h.receiver.behaviour = 'hang';
    const id = await newEntry('subscription_canceled', { plan_name: 'Pro' });

    expect((await h.deliver()).retrying).toEqual([id]);
    expect((await entry(h.store.orm, id)).lastError).toBe('no answer within 300 ms');
    const [attempt] = await h.attemptsOf(id);
    expect(attempt).toMatchObject({ outcome: 'failed', httpStatus: null, error: 'no answer within 300 ms' });
  });

  it('reads only the start of a huge error response and records a bounded reason', async () => {
    useReceiver(h.receiver.url, { OUTBOUND_WEBHOOK_TIMEOUT_MS: '5000' });
    h.receiver.behaviour = 'huge';
    h.receiver.hugeBytesWritten = 0;
    const id = await newEntry('payment_refunded', { order_id: 'SUB-R1', amount: '150000.00', refunded_amount: '50000.00', currency: 'IDR' });

    expect((await h.deliver()).retrying).toEqual([id]);
    const waiting = await entry(h.store.orm, id);
    expect(waiting.lastError).toMatch(/^HTTP 500: x+/);
    expect(waiting.lastError!.length).toBeLessThanOrEqual(500);
    // The client hung up long before the receiver could push its 200 MB.
    expect(h.receiver.hugeBytesWritten).toBeLessThan(h.receiver.hugeBytesTotal / 4);
  });

  it('counts a 2xx with a huge body as delivered without reading it', async () => {
    useReceiver(h.receiver.url, { OUTBOUND_WEBHOOK_TIMEOUT_MS: '5000' });
    h.receiver.behaviour = 'huge';
    h.receiver.hugeStatus = 200;
    const id = await newEntry('topup_succeeded', { order_id: 'TOPUP-9', amount: '50000.00', currency: 'IDR' });
    expect((await h.deliver()).delivered).toEqual([id]);
    expect((await h.attemptsOf(id))[0]).toMatchObject({ outcome: 'delivered', httpStatus: 200 });
  });

  it('keeps retrying for more than 24 hours (1m, 5m, 30m, 2h, 6h, 12h, 24h), then fails with the last reason', async () => {
    useReceiver(`http://127.0.0.1:${await closedPort()}/hooks`);
    const id = await newEntry('subscription_past_due', { plan_name: 'Pro' });
    const created = h.clock.now().getTime();

    const waits = [1 * MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR, 12 * HOUR, 24 * HOUR];
    for (const wait of waits) {
      expect((await h.deliver()).retrying).toEqual([id]);
      const waiting = await entry(h.store.orm, id);
      expect(waiting.nextAttemptAt!.getTime() - h.clock.now().getTime()).toBe(wait);
      expect(waiting.lastError).toMatch(/connection failed: ECONNREFUSED/);
      h.clock.advance(wait);
    }
    expect((await h.deliver()).failed).toEqual([id]);
    const failed = await entry(h.store.orm, id);
    expect(failed).toMatchObject({ status: 'failed', attempts: 8, nextAttemptAt: null });
    expect(failed.lastError).toMatch(/ECONNREFUSED/);
    const attempts = await h.attemptsOf(id);
    expect(attempts).toHaveLength(8);
    expect(attempts[7].attemptedAt.getTime() - created).toBeGreaterThanOrEqual(24 * HOUR);
  });

  it('never sends unsigned: without OUTBOUND_WEBHOOK_SECRET the entry waits with the reason', async () => {
    useReceiver(h.receiver.url, { OUTBOUND_WEBHOOK_SECRET: '' });
    const id = await newEntry('topup_failed', { order_id: 'TOPUP-8' });
    expect((await h.deliver()).retrying).toEqual([id]);
    expect((await entry(h.store.orm, id)).lastError).toMatch(/OUTBOUND_WEBHOOK_SECRET is not set/);
    expect(h.receiver.posts).toHaveLength(0);
  });

  it('sends each entry exactly once when several workers with their own connections run at the same time', async () => {
    useReceiver(h.receiver.url);
    h.receiver.behaviour = 'slow';
    h.receiver.slowMs = 30;
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await newEntry('subscription_renewed', { plan_name: 'Pro', n: i }));

    const workers = await Promise.all([1, 2, 3].map(() => openOrm(h.store.db.url)));
    try {
      const reports = await Promise.all(
        workers.map((orm) => deliverDueNotifications({ em: orm.em.fork(), config: h.config, clock: h.clock, channels: createDeliveryChannels(h.config) })),
      );
      const delivered = reports.flatMap((r) => r.delivered).sort();
      expect(delivered).toEqual([...ids].sort());
    } finally {
      await Promise.all(workers.map((orm) => orm.close(true)));
    }
    const received = h.receiver.posts.map((p) => String(p.headers['x-billing-event-id'])).sort();
    expect(received).toEqual([...ids].sort());
    for (const id of ids) {
      expect(await entry(h.store.orm, id)).toMatchObject({ status: 'sent', attempts: 1 });
      expect(await h.attemptsOf(id)).toHaveLength(1);
    }
  });
});
