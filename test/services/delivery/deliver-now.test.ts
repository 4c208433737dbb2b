import { describe, expect, it } from 'vitest';
import { Notification } from '../../../src/db/entities/notification.js';
import { deliverDueNotifications } from '../../../src/services/delivery/deliver-due-notifications.js';
import { startDeliveryWorker } from '../../../src/services/delivery/delivery-worker.js';
import { DATABASES } from '../../helpers/database.js';
import { deliveryConfig, deliveryHarness, entry, MINUTE, PAYMENT_PENDING_DATA, recordEvent } from '../../helpers/delivery.js';

/*
 * Row 9 of issue 40: SMTP down, then fixed. A failed attempt is logged at warn with its reason,
 * and a forced pass (`notifications deliver --now`) sends the backed-off entries at once instead
 * of waiting for their next attempt time, without taking an entry another worker is sending.
 */
describe.each(DATABASES)('delivery failures and deliver --now on %s', (kind) => {
  const h = deliveryHarness(kind);
  const emailOf = async () => {
    const entries = await recordEvent(h.store.orm, h.config, h.clock, await h.user(), 'payment_pending', PAYMENT_PENDING_DATA);
    return entries.find((n) => n.channel === 'email')!.id;
  };

  it('a deferred email is retried later with its reason; once SMTP is back, a forced pass sends it at once', async () => {
    h.configure({ SMTP_URL: h.smtp.url });
    h.smtp.behaviour = 'defer';
    const id = await emailOf();
    const failed = await h.deliver();
    expect(failed.retrying).toEqual([id]);
    expect(failed.errors[id]).toMatch(/451/);
    const waiting = await entry(h.store.orm, id);
    expect(waiting).toMatchObject({ status: 'queued', attempts: 1, lastError: expect.stringMatching(/451/) });
    expect(waiting.nextAttemptAt!.getTime()).toBe(h.clock.now().getTime() + MINUTE);

    h.smtp.behaviour = 'accept';
    // An ordinary pass waits for the retry time.
    expect(await h.deliver()).toEqual({ delivered: [], retrying: [], failed: [], errors: {} });
    expect(h.smtp.messages).toHaveLength(0);

    const forced = await deliverDueNotifications(h.ctx(), { now: true });
    expect(forced).toEqual({ delivered: [id], retrying: [], failed: [], errors: {} });
    expect(h.smtp.messages).toHaveLength(1);
    expect(await entry(h.store.orm, id)).toMatchObject({ status: 'sent', attempts: 2, lastError: null });
  });

  it('a forced pass tries each backed-off entry once: one that fails again waits for its next retry, with the new reason', async () => {
    h.configure({ SMTP_URL: h.smtp.url });
    h.smtp.behaviour = 'defer';
    const id = await emailOf();
    await h.deliver();
    const forced = await deliverDueNotifications(h.ctx(), { now: true });
    expect(forced.retrying).toEqual([id]);
    expect(forced.errors[id]).toMatch(/451/);
    expect(await entry(h.store.orm, id)).toMatchObject({ status: 'queued', attempts: 2 });
    expect((await h.attemptsOf(id)).map((a) => a.outcome)).toEqual(['failed', 'failed']);
  });

  it('a forced pass leaves alone an entry another worker is sending (claimed: its error cleared, leased ahead)', async () => {
    h.configure({ SMTP_URL: h.smtp.url });
    const id = await emailOf();
    // What a claim leaves: the attempt counted, the lease ahead, no error while it is sent.
    await h.store.orm.em.fork().nativeUpdate(Notification, { id }, { attempts: 1, nextAttemptAt: new Date(h.clock.now().getTime() + 5 * MINUTE), lastError: null });
    expect(await deliverDueNotifications(h.ctx(), { now: true })).toEqual({ delivered: [], retrying: [], failed: [], errors: {} });
    expect(h.smtp.messages).toHaveLength(0);
  });

  it('the server worker logs each failure at warn with its reason', async () => {
    h.smtp.behaviour = 'reject';
    const id = await emailOf();
    const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
    const logger = {
      info: (message: string, fields?: Record<string, unknown>) => void lines.push({ level: 'info', message, fields }),
      warn: (message: string, fields?: Record<string, unknown>) => void lines.push({ level: 'warn', message, fields }),
      error: (message: string, fields?: Record<string, unknown>) => void lines.push({ level: 'error', message, fields }),
    };
    const worker = startDeliveryWorker({
      orm: h.store.orm,
      config: deliveryConfig(h.store.db.url, { SMTP_URL: h.smtp.url, DELIVERY_INTERVAL_SECONDS: '3600' }),
      clock: h.clock,
      logger,
    })!;
    try {
      await worker.runNow();
    } finally {
      await worker.stop();
    }
    expect(lines).toContainEqual({ level: 'warn', message: 'notification failed for good', fields: { id, reason: expect.stringMatching(/550/) } });
    expect(lines.filter((l) => l.level === 'info' && /fail|retr/.test(l.message))).toEqual([]);
  });
});
