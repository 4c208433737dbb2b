import { beforeAll, describe, expect, it } from 'vitest';
import { DeliveryAttempt } from '../../../src/db/entities/delivery-attempt.js';
import { Notification } from '../../../src/db/entities/notification.js';
import { verifyWebhookSignature } from '../../../src/services/delivery/webhook-signature.js';
import { DATABASES } from '../../helpers/database.js';
import type { TestServer } from '../../helpers/server.js';
import { serverDeliveringTo, type Receiver, type SmtpCapture } from '../../helpers/delivery.js';

const SECRET = 'whsec_end_to_end';

/** Waits for something the server's own background worker does; fails the test if it never happens. */
async function eventually<T>(what: string, probe: () => T | undefined | null | false | Promise<T | undefined | null | false>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const value = await probe();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe.each(DATABASES)('notification delivery through a running server on %s', (kind) => {
  const delivering = serverDeliveringTo(kind, {
    MAIL_FROM: 'Billing <billing@shop.example>',
    OUTBOUND_WEBHOOK_SECRET: SECRET,
    OUTBOUND_WEBHOOK_TIMEOUT_MS: '2000',
    DELIVERY_INTERVAL_SECONDS: '1',
  });
  let server: TestServer;
  let smtp: SmtpCapture;
  let receiver: Receiver;
  beforeAll(() => {
    ({ server, smtp, receiver } = delivering);
  });

  const postsOfType = (type: string) => receiver.posts.filter((p) => JSON.parse(p.body).type === type);

  it('emails payment instructions and posts a signed webhook for a top-up, then does the same when it is paid', async () => {
    const user = await server.createUser({ firstName: 'Budi' });
    const created = await server.api('POST', '/topups/', { auth: user, body: { amount: 100000, payment_type: 'bank_transfer', bank: 'bni' } });
    expect(created.status, created.text).toBe(201);
    const { order_id: orderId, payment_details: details } = created.body;

    // The request answered before anything was sent; the server's worker sends on its interval.
    const instructions = await eventually('the payment instructions email', () => smtp.messages.find((m) => m.subject.includes(orderId)));
    expect(instructions.to).toEqual([`${user.username}@example.com`]);
    expect(instructions.from).toBe('billing@shop.example');
    expect(instructions.text).toContain(details.va_number);
    expect(instructions.text).toContain('Rp 100.000');
    expect(instructions.html).toContain(details.va_number);

    const [pendingPost] = await eventually('the payment_pending webhook', () => postsOfType('payment_pending').length > 0 && postsOfType('payment_pending'));
    const pendingBody = JSON.parse(pendingPost.body);
    expect(pendingBody.data).toMatchObject({ order_id: orderId, amount: '100000.00', va_number: details.va_number });
    expect(pendingPost.headers['x-billing-event-id']).toBe(pendingBody.id);
    const nowSeconds = Math.floor(Date.now() / 1000);
    expect(verifyWebhookSignature(SECRET, String(pendingPost.headers['x-billing-signature']), pendingPost.body, { nowSeconds })).toBe(true);
    expect(verifyWebhookSignature('another secret', String(pendingPost.headers['x-billing-signature']), pendingPost.body, { nowSeconds })).toBe(false);

    // Paying at the gateway: the simulator notifies the webhook, which records topup_succeeded.
    const settled = await server.request('POST', `/_simulator/v2/${orderId}/settle`, { body: {} });
    expect(settled.status, settled.text).toBe(200);
    const receipt = await eventually('the top-up receipt email', () => smtp.messages.find((m) => m.subject === 'Top-up Rp 100.000 diterima'));
    expect(receipt.text).toContain(orderId);
    await eventually('the topup_succeeded webhook', () => postsOfType('topup_succeeded').length > 0);

    // The receiver has the request a moment before the worker records the answer.
    const em = server.running.billing.orm.em.fork();
    const entries = await eventually('all four entries sent', async () => {
      const found = await server.running.billing.orm.em.fork().find(Notification, { user: user.id, channel: { $in: ['email', 'webhook'] } });
      return found.length === 4 && found.every((n) => n.status !== 'queued') && found;
    });
    expect(entries.map((n) => `${n.notificationType}/${n.channel}/${n.status}`).sort()).toEqual([
      'payment_pending/email/sent',
      'payment_pending/webhook/sent',
      'topup_succeeded/email/sent',
      'topup_succeeded/webhook/sent',
    ]);
    expect(await em.count(DeliveryAttempt, { notification: { $in: entries.map((n) => n.id) } })).toBe(4);
    // The in-app entries are left for the user to read.
    expect(await em.count(Notification, { user: user.id, channel: 'in_app', status: 'queued' })).toBe(2);
  });

  it('keeps answering requests while a receiver hangs, and the entry waits for its retry', async () => {
    receiver.behaviour = 'hang';
    receiver.posts.length = 0;
    const user = await server.createUser();
    const created = await server.api('POST', '/topups/', { auth: user, body: { amount: 50000, payment_type: 'bank_transfer' } });
    expect(created.status, created.text).toBe(201);

    await eventually('the hanging webhook request', () => postsOfType('payment_pending').length > 0);
    // While the receiver holds the worker's request open, the API still answers.
    const wallet = await server.api('GET', '/wallet/me/', { auth: user });
    expect(wallet.status).toBe(200);

    const entry = await eventually('the timed-out attempt', () =>
      server.running.billing.orm.em.fork().findOne(Notification, { user: user.id, channel: 'webhook', lastError: { $ne: null } }),
    );
    expect(entry.status).toBe('queued');
    expect(entry.lastError).toBe('no answer within 2000 ms');
    expect(entry.nextAttemptAt!.getTime()).toBeGreaterThan(Date.now());
    receiver.behaviour = 'ok';
  });
});
