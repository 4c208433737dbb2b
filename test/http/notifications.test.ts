import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Notification, type NotificationType } from '../../src/db/entities/notification.js';
import { User } from '../../src/db/entities/user.js';
import { notificationStates } from '../../src/domain/states/notification-states.js';
import { notify } from '../../src/services/notifications/notify.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type Credentials, type TestServer } from '../helpers/server.js';
import { expectLedgerExact } from '../helpers/expect-ledger-exact.js';
import { postTopup, settleTopup } from '../helpers/topups.js';

describe.each(DATABASES)('notifications on %s', (kind) => {
  let server: TestServer;
  let alice: Credentials & { id: string };
  let bob: Credentials & { id: string };
  let tick = 0;

  beforeAll(async () => {
    server = await startTestServer(kind);
    alice = await server.createUser();
    bob = await server.createUser();
  });
  afterAll(() => server?.stop());
  afterEach(() => expectLedgerExact(server.running.billing.orm));

  const em = () => server.running.billing.orm.em.fork();

  /**
   * Records an event for a user through notify(), each a second after the previous, so that
   * "newest first" is well defined. `email: true` makes the deployment have SMTP set up.
   */
  async function record(userId: string, type: NotificationType, opts: { email?: boolean; data?: Record<string, unknown> } = {}): Promise<Notification[]> {
    const fork = em();
    const at = new Date(Date.UTC(2026, 0, 1) + ++tick * 1000);
    const config = opts.email ? { ...server.config, smtpUrl: 'smtp://127.0.0.1:2525' } : server.config;
    const user = await fork.findOneOrFail(User, { id: userId });
    const made = notify({ em: fork, config, clock: { now: () => at } }, user, type, opts.data ?? { order_id: `ORDER-${tick}` });
    await fork.flush();
    return made;
  }

  async function setStatus(id: string, event: 'mark_sent' | 'mark_failed') {
    const fork = em();
    const n = await fork.findOneOrFail(Notification, { id });
    notificationStates.apply(n, event, new Date());
    await fork.flush();
  }

  const ids = (body: { results: { id: string }[] }) => body.results.map((n) => n.id);

  it('records top-up events for the user: payment instructions, then success', async () => {
    const user = await server.createUser();
    const topup = await postTopup(server, user, { amount: 50000, payment_type: 'bank_transfer', bank: 'permata' });
    await settleTopup(server, topup.body.order_id);
    const res = await server.api('GET', '/notifications/', { auth: user });
    expect(res.status).toBe(200);
    expect(res.body.results.map((n: { notification_type: string }) => n.notification_type)).toEqual(['topup_succeeded', 'payment_pending']);
    const pending = res.body.results[1];
    expect(pending).toMatchObject({ channel: 'in_app', status: 'queued', read_at: null, title: expect.any(String) });
    expect(pending.data).toMatchObject({ order_id: topup.body.order_id, amount: '50000.00', currency: 'IDR', bank: 'permata', va_number: topup.body.payment_details.va_number });
    expect(pending.message).toContain(topup.body.payment_details.va_number);
    expect(res.body.results[0].message).toContain('Rp 50.000');
  });

  it('lists the caller’s notifications newest first, filtered by type, channel and status, paginated', async () => {
    const user = await server.createUser();
    const a = await record(user.id, 'payment_pending', { email: true });
    const b = await record(user.id, 'payment_succeeded');
    const c = await record(user.id, 'subscription_activated', { email: true });
    await record(bob.id, 'payment_pending');
    await setStatus(c[1].id, 'mark_sent');

    const all = await server.api('GET', '/notifications/', { auth: user });
    expect(all.body.count).toBe(5);
    const times = all.body.results.map((n: { created_at: string }) => n.created_at);
    expect(times).toEqual([...times].sort().reverse());
    expect(all.body.results[all.body.results.length - 1].notification_type).toBe('payment_pending');

    expect(ids((await server.api('GET', '/notifications/?notification_type=payment_succeeded', { auth: user })).body)).toEqual([b[0].id]);
    expect(ids((await server.api('GET', '/notifications/?channel=email', { auth: user })).body)).toEqual([c[1].id, a[1].id]);
    expect(ids((await server.api('GET', '/notifications/?channel=email&status=queued', { auth: user })).body)).toEqual([a[1].id]);
    expect(ids((await server.api('GET', '/notifications/?status=sent', { auth: user })).body)).toEqual([c[1].id]);
    expect((await server.api('GET', '/notifications/?channel=in_app', { auth: user })).body.count).toBe(3);

    const page1 = await server.api('GET', '/notifications/?page_size=2', { auth: user });
    const page3 = await server.api('GET', '/notifications/?page_size=2&page=3', { auth: user });
    expect(page1.body.next).toMatch(/page=2/);
    expect(page3.body.results).toHaveLength(1);
    expect(page3.body.next).toBeNull();

    for (const bad of ['channel=sms', 'status=unread', 'notification_type=nope', 'page_size=500']) {
      const res = await server.api('GET', `/notifications/?${bad}`, { auth: user });
      expect(res.status, bad).toBe(400);
      expect(res.body.code).toBe('validation_error');
    }
    expect((await server.api('GET', '/notifications/')).status).toBe(401);
  });

  it('shows one notification to its owner only', async () => {
    const [mine] = await record(alice.id, 'topup_failed', { data: { order_id: 'TOPUP-X' } });
    const res = await server.api('GET', `/notifications/${mine.id}/`, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: mine.id, notification_type: 'topup_failed', data: { order_id: 'TOPUP-X' } });
    const theirs = await server.api('GET', `/notifications/${mine.id}/`, { auth: bob });
    expect(theirs.status).toBe(404);
    expect(theirs.body.code).toBe('not_found');
    expect((await server.api('GET', '/notifications/00000000-0000-4000-8000-000000000000/', { auth: alice })).status).toBe(404);
    expect((await server.api('GET', '/notifications/42/', { auth: alice })).status).toBe(404);
  });

  it('lists unread in-app entries newest first: at most 50, with the total count', async () => {
    const user = await server.createUser();
    const made: string[] = [];
    for (let i = 0; i < 53; i++) made.push((await record(user.id, 'payment_pending', { email: i === 0 }))[0].id);
    await record(bob.id, 'payment_pending');
    const res = await server.api('GET', '/notifications/unread/', { auth: user });
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(53);
    expect(res.body.results).toHaveLength(50);
    expect(ids(res.body)).toEqual(made.slice(-50).reverse());
    expect(res.body.results.every((n: { channel: string; status: string }) => n.channel === 'in_app' && n.status === 'queued')).toBe(true);
    expect(Object.keys(res.body).sort()).toEqual(['count', 'results']);
    // The unread path is not taken for an id.
    expect((await server.api('GET', '/notifications/unread', { auth: user })).status).toBe(200);
  });

  it('marks a notification read, idempotently, and it leaves the unread list', async () => {
    const user = await server.createUser();
    const [first] = await record(user.id, 'payment_pending');
    await record(user.id, 'payment_succeeded');
    expect((await server.api('GET', '/notifications/unread/', { auth: user })).body.count).toBe(2);

    const marked = await server.api('POST', `/notifications/${first.id}/mark-read/`, { auth: user });
    expect(marked.status, marked.text).toBe(200);
    expect(marked.body).toMatchObject({ id: first.id, status: 'read', read_at: expect.any(String) });
    const again = await server.api('POST', `/notifications/${first.id}/mark-read/`, { auth: user });
    expect(again.status).toBe(200);
    expect(again.body.read_at).toBe(marked.body.read_at);

    const unread = await server.api('GET', '/notifications/unread/', { auth: user });
    expect(unread.body.count).toBe(1);
    expect(ids(unread.body)).not.toContain(first.id);
    expect((await server.api('GET', '/notifications/?status=read', { auth: user })).body.count).toBe(1);
  });

  it('answers 404 for marking another user’s notification, and changes nothing', async () => {
    const [theirs] = await record(bob.id, 'payment_pending');
    const res = await server.api('POST', `/notifications/${theirs.id}/mark-read/`, { auth: alice });
    expect(res.status).toBe(404);
    expect((await em().findOneOrFail(Notification, { id: theirs.id })).status).toBe('queued');
    expect((await server.api('POST', '/notifications/00000000-0000-4000-8000-000000000000/mark-read/', { auth: alice })).status).toBe(404);
  });

  it('lets an email entry be marked read once delivered, but not while queued or after it failed', async () => {
    const user = await server.createUser();
    const [, queued] = await record(user.id, 'payment_pending', { email: true });
    const [, sent] = await record(user.id, 'payment_succeeded', { email: true });
    const [, failed] = await record(user.id, 'payment_failed', { email: true });
    await setStatus(sent.id, 'mark_sent');
    await setStatus(failed.id, 'mark_failed');

    const notYet = await server.api('POST', `/notifications/${queued.id}/mark-read/`, { auth: user });
    expect(notYet.status).toBe(409);
    expect(notYet.body.code).toBe('invalid_state');
    expect((await em().findOneOrFail(Notification, { id: queued.id })).status).toBe('queued');
    expect((await server.api('POST', `/notifications/${failed.id}/mark-read/`, { auth: user })).status).toBe(409);
    const ok = await server.api('POST', `/notifications/${sent.id}/mark-read/`, { auth: user });
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe('read');
  });

  it('honours Idempotency-Key and CSRF on mark-read', async () => {
    const [n] = await record(alice.id, 'payment_pending');
    const first = await server.api('POST', `/notifications/${n.id}/mark-read/`, { auth: alice, headers: { 'Idempotency-Key': 'read-1' } });
    const replay = await server.api('POST', `/notifications/${n.id}/mark-read/`, { auth: alice, headers: { 'Idempotency-Key': 'read-1' } });
    expect(replay.body).toEqual(first.body);
    const session = await server.login(alice);
    const [m] = await record(alice.id, 'payment_pending');
    expect((await server.api('POST', `/notifications/${m.id}/mark-read/`, { session, headers: { 'x-csrf-token': 'nope' } })).status).toBe(403);
    expect((await server.api('POST', `/notifications/${m.id}/mark-read/`, { session })).status).toBe(200);
  });
});
