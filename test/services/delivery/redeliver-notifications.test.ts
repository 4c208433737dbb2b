import { describe, expect, it } from 'vitest';
import type { Notification } from '../../../src/db/entities/notification.js';
import { DomainError } from '../../../src/domain/errors.js';
import { deliverDueNotifications } from '../../../src/services/delivery/deliver-due-notifications.js';
import { redeliverNotifications } from '../../../src/services/delivery/redeliver-notifications.js';
import { HOUR, PAYMENT_PENDING_DATA, deliveryHarness, entry, recordEvent } from '../../helpers/delivery.js';
import { DATABASES } from '../../helpers/database.js';

describe.each(DATABASES)('redelivering notifications on %s', (kind) => {
  const h = deliveryHarness(kind);
  const byChannel = (entries: Notification[], channel: string) => entries.find((n) => n.channel === channel)!;
  async function event(): Promise<Notification[]> {
    const user = await h.user();
    return recordEvent(h.store.orm, h.config, h.clock, user, 'payment_pending', PAYMENT_PENDING_DATA);
  }
  async function codeOf(promise: Promise<unknown>): Promise<string> {
    try {
      await promise;
      return 'no error';
    } catch (err) {
      return err instanceof DomainError ? err.code : String(err);
    }
  }

  it('sends a failed email again with a fresh set of attempts, keeping the earlier attempts on record', async () => {
    h.smtp.behaviour = 'reject';
    const email = byChannel(await event(), 'email');
    await h.deliver();
    expect((await entry(h.store.orm, email.id)).status).toBe('failed');

    h.smtp.behaviour = 'accept';
    h.clock.advance(HOUR);
    const { entries, report } = await redeliverNotifications(h.ctx(), [email.id]);

    expect(report.delivered).toEqual([email.id]);
    expect(entries[0]).toMatchObject({ id: email.id, status: 'sent', attempts: 1, lastError: null });
    expect(h.smtp.messages).toHaveLength(1);
    const attempts = await h.attemptsOf(email.id);
    expect(attempts.map((a) => a.outcome)).toEqual(['failed', 'delivered']);
  });

  it('posts a sent webhook again with the same event id, so receivers can recognise it', async () => {
    const hook = byChannel(await event(), 'webhook');
    await h.deliver();
    h.clock.advance(HOUR);

    const { entries } = await redeliverNotifications(h.ctx(), [hook.id]);

    expect(entries[0].status).toBe('sent');
    expect(h.receiver.posts.map((p) => p.headers['x-billing-event-id'])).toEqual([hook.id, hook.id]);
    expect(h.receiver.posts[0].body).toBe(h.receiver.posts[1].body);
    expect(h.receiver.posts[0].headers['x-billing-signature']).not.toBe(h.receiver.posts[1].headers['x-billing-signature']);
  });

  it('refuses queued and in-app entries and unknown ids, changing none of the ids given', async () => {
    const entries = await event();
    const [email, hook, inApp] = ['email', 'webhook', 'in_app'].map((c) => byChannel(entries, c));
    await deliverDueNotifications({ ...h.ctx(), channels: { email: h.channels.email, webhook: null } });
    expect((await entry(h.store.orm, email.id)).status).toBe('sent');

    expect(await codeOf(redeliverNotifications(h.ctx(), [email.id, hook.id]))).toBe('invalid_state'); // hook is still queued
    expect(await codeOf(redeliverNotifications(h.ctx(), [inApp.id]))).toBe('invalid_state');
    expect(await codeOf(redeliverNotifications(h.ctx(), [email.id, '0d9c4a7e-1111-4222-8333-944455556666']))).toBe('not_found');
    expect(await codeOf(redeliverNotifications(h.ctx(), ['not-an-id']))).toBe('validation_error');
    expect(await codeOf(redeliverNotifications(h.ctx(), []))).toBe('validation_error');

    expect(await entry(h.store.orm, email.id)).toMatchObject({ status: 'sent', attempts: 1 });
    expect(h.smtp.messages).toHaveLength(1);
  });
});
