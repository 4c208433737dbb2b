import { describe, expect, it } from 'vitest';
import { Notification } from '../../../src/db/entities/notification.js';
import { User } from '../../../src/db/entities/user.js';
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

describe.each(DATABASES)('email delivery on %s', (kind) => {
  const h = deliveryHarness(kind);
  const useSmtp = (url: string) => h.configure({ SMTP_URL: url });
  const emailOf = (entries: Notification[]) => entries.find((n) => n.channel === 'email')!;

  it('sends a queued payment_pending email with the payment instructions, marks it sent and records the attempt', async () => {
    useSmtp(h.smtp.url);
    const user = await h.user();
    const entries = await recordEvent(h.store.orm, h.config, h.clock, user, 'payment_pending', PAYMENT_PENDING_DATA);
    expect(entries.map((n) => n.channel).sort()).toEqual(['email', 'in_app']);

    const report = await h.deliver();

    expect(report.delivered).toEqual([emailOf(entries).id]);
    expect(h.smtp.messages).toHaveLength(1);
    const mail = h.smtp.messages[0];
    expect(mail.from).toBe('billing@example.test');
    expect(mail.to).toEqual([user.email]);
    expect(mail.headers['x-billing-notification-id']).toBe(emailOf(entries).id);
    expect(mail.subject).toContain('SUB-8QZ1X2Y3');
    expect(mail.text).toContain('12345678901');
    expect(mail.text).toContain('Rp 150.000');
    expect(mail.text).toContain('Halo Dewi,');
    expect(mail.html).toContain('12345678901');
    expect(mail.html).toContain('Rp 150.000');

    const sent = await entry(h.store.orm, emailOf(entries).id);
    expect(sent).toMatchObject({ status: 'sent', attempts: 1, lastError: null, nextAttemptAt: null });
    expect(sent.sentAt?.toISOString()).toBe(h.clock.now().toISOString());
    expect((await entry(h.store.orm, entries.find((n) => n.channel === 'in_app')!.id)).status).toBe('queued');
    const attempts = await h.attemptsOf(sent.id);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ outcome: 'delivered', httpStatus: null, error: null });

    // A second pass has nothing to do: the entry is never sent twice.
    expect(await h.deliver()).toEqual({ delivered: [], retrying: [], failed: [], errors: {} });
    expect(h.smtp.messages).toHaveLength(1);
  });

  it('fails at once, without retrying, when the SMTP server rejects the recipient with 550', async () => {
    useSmtp(h.smtp.url);
    h.smtp.behaviour = 'reject';
    const user = await h.user();
    const id = emailOf(await recordEvent(h.store.orm, h.config, h.clock, user, 'payment_succeeded', PAYMENT_PENDING_DATA)).id;

    const report = await h.deliver();

    expect(report.failed).toEqual([id]);
    const failed = await entry(h.store.orm, id);
    expect(failed).toMatchObject({ status: 'failed', attempts: 1, nextAttemptAt: null });
    expect(failed.lastError).toMatch(/^SMTP 550/);
    expect(failed.lastError).toMatch(/Mailbox unavailable/);
    expect((await h.attemptsOf(id)).map((a) => a.outcome)).toEqual(['failed']);

    h.smtp.behaviour = 'accept';
    h.clock.advance(48 * HOUR);
    expect((await h.deliver()).delivered).toEqual([]);
    expect(h.smtp.messages).toHaveLength(0);
  });

  it('fails at once when the user\'s address cannot be an email address, without contacting the server', async () => {
    useSmtp(h.smtp.url);
    const user = await h.user();
    const id = emailOf(await recordEvent(h.store.orm, h.config, h.clock, user, 'topup_succeeded', { order_id: 'TOPUP-1', amount: '50000.00', currency: 'IDR' })).id;
    await h.store.orm.em.fork().nativeUpdate(User, { id: user.id }, { email: 'not an address' });

    expect((await h.deliver()).failed).toEqual([id]);
    const failed = await entry(h.store.orm, id);
    expect(failed.status).toBe('failed');
    expect(failed.lastError).toMatch(/invalid email address/);
    expect(h.smtp.messages).toHaveLength(0);
  });

  it('retries with exponential backoff while the SMTP server is down, then fails with the reason after 6 attempts', async () => {
    useSmtp(`smtp://127.0.0.1:${await closedPort()}`);
    const user = await h.user();
    const id = emailOf(await recordEvent(h.store.orm, h.config, h.clock, user, 'subscription_activated', { plan_name: 'Pro' })).id;

    const expectedWaits = [1 * MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR];
    for (const [i, wait] of expectedWaits.entries()) {
      expect((await h.deliver()).retrying).toEqual([id]);
      const waiting = await entry(h.store.orm, id);
      expect(waiting).toMatchObject({ status: 'queued', attempts: i + 1 });
      expect(waiting.lastError).toMatch(/ECONNREFUSED/);
      expect(waiting.nextAttemptAt!.getTime() - h.clock.now().getTime()).toBe(wait);

      // Not due yet: a pass just before the retry time leaves it alone.
      h.clock.advance(wait - 1000);
      expect(await h.deliver()).toEqual({ delivered: [], retrying: [], failed: [], errors: {} });
      h.clock.advance(1000);
    }
    expect((await h.deliver()).failed).toEqual([id]);
    const failed = await entry(h.store.orm, id);
    expect(failed).toMatchObject({ status: 'failed', attempts: 6, nextAttemptAt: null });
    expect(failed.lastError).toMatch(/ECONNREFUSED/);
    const attempts = await h.attemptsOf(id);
    expect(attempts).toHaveLength(6);
    expect(attempts.every((a) => a.outcome === 'failed' && /ECONNREFUSED/.test(a.error ?? ''))).toBe(true);
  });

  it('retries a temporary 451 rejection and sends the email once the server accepts again', async () => {
    useSmtp(h.smtp.url);
    h.smtp.behaviour = 'defer';
    const user = await h.user();
    const id = emailOf(await recordEvent(h.store.orm, h.config, h.clock, user, 'trial_will_end', { plan_name: 'Pro', trial_end: '2026-12-01T00:00:00.000Z' })).id;

    expect((await h.deliver()).retrying).toEqual([id]);
    expect((await entry(h.store.orm, id)).lastError).toMatch(/^SMTP 451/);

    h.smtp.behaviour = 'accept';
    h.clock.advance(MINUTE);
    expect((await h.deliver()).delivered).toEqual([id]);
    expect(h.smtp.messages).toHaveLength(1);
    expect(h.smtp.messages[0].subject).toBe('Masa uji coba Pro Anda berakhir pada 1 Desember 2026');
    expect(await entry(h.store.orm, id)).toMatchObject({ status: 'sent', attempts: 2, lastError: null });
    expect((await h.attemptsOf(id)).map((a) => a.outcome)).toEqual(['failed', 'delivered']);
  });

  it('leaves email entries queued when this process has no SMTP configuration', async () => {
    useSmtp(h.smtp.url);
    const user = await h.user();
    const id = emailOf(await recordEvent(h.store.orm, h.config, h.clock, user, 'topup_expired', { order_id: 'TOPUP-2', amount: '20000.00', currency: 'IDR' })).id;

    h.configure({});
    expect(await h.deliver()).toEqual({ delivered: [], retrying: [], failed: [], errors: {} });
    expect(await entry(h.store.orm, id)).toMatchObject({ status: 'queued', attempts: 0 });

    // And notify() makes no email entries at all without SMTP_URL.
    const without = await recordEvent(h.store.orm, h.config, h.clock, user, 'topup_expired', { order_id: 'TOPUP-3' });
    expect(without.map((n) => n.channel)).toEqual(['in_app']);
  });
});
