import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subscription } from '../../src/db/entities/subscription.js';
import { ManualClock } from '../../src/domain/clock.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { activeSubscription, dbOf, notificationTypes, simulate, storedCounts, subscribe, type TestUser } from '../helpers/subscriptions.js';

const DAY = 24 * 60 * 60 * 1000;

describe.each(DATABASES)('subscription lifecycle on %s', (kind) => {
  let server: TestServer;
  let user: TestUser;
  const clock = new ManualClock(new Date('2026-01-15T03:00:00Z'));
  beforeAll(async () => {
    server = await startTestServer(kind, { clock });
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  const newUser = async () => (user = await server.createUser());
  const get = (id: string, as: TestUser = user) => server.api('GET', `/subscriptions/${id}/`, { auth: as });
  const post = (id: string, action: string, body?: unknown, as: TestUser = user) =>
    server.api('POST', `/subscriptions/${id}/${action}/`, { auth: as, body });
  /** Writes a status directly, to set up states the API reaches only through time (renewals, dunning). */
  const forceStatus = (id: string, status: Subscription['status']) =>
    dbOf(server).transactional(async (em) => {
      const sub = await em.findOneOrFail(Subscription, id);
      sub.status = status;
      sub.liveUserId = ['canceled', 'expired'].includes(status) ? null : sub.liveUserId;
    });

  describe('GET /subscriptions/, detail and active/', () => {
    it('lists only the current user\'s subscriptions, filtered, ordered and paginated', async () => {
      await newUser();
      const other = await server.createUser();
      await subscribe(server, other, { plan_id: 'basic-monthly', payment_type: 'qris' });

      const first = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
      clock.advance(60_000);
      const second = await subscribe(server, user, { plan_id: 'weekly', payment_type: 'bank_transfer' }); // replaces the first
      clock.advance(60_000);
      await simulate(server, second.body.payment.order_id, 'settle');
      await post(second.body.subscription.id, 'cancel', { immediate: true });
      clock.advance(60_000);
      const third = await subscribe(server, user, { plan_id: 'pro-trial', payment_type: 'gopay' });
      const ids = [first, second, third].map((r) => r.body.subscription.id);

      const all = await server.api('GET', '/subscriptions/', { auth: user });
      expect(all.status).toBe(200);
      expect(all.body).toMatchObject({ count: 3, next: null, previous: null });
      expect(all.body.results.map((s: { id: string }) => s.id)).toEqual([...ids].reverse());

      const ascending = await server.api('GET', '/subscriptions/?ordering=created_at', { auth: user });
      expect(ascending.body.results.map((s: { id: string }) => s.id)).toEqual(ids);
      // Only the trial has a next billing date; those without one come last in either direction.
      for (const ordering of ['next_billing_date', '-next_billing_date']) {
        const res = await server.api('GET', `/subscriptions/?ordering=${ordering}`, { auth: user });
        expect(res.body.results.map((s: { id: string }) => s.id)[0], ordering).toBe(ids[2]);
      }

      const canceled = await server.api('GET', '/subscriptions/?status=canceled', { auth: user });
      expect(canceled.body.results.map((s: { id: string }) => s.id).sort()).toEqual([ids[0], ids[1]].sort());
      const gopay = await server.api('GET', '/subscriptions/?payment_type=gopay', { auth: user });
      expect(gopay.body.results.map((s: { id: string }) => s.id)).toEqual([ids[2]]);

      const page1 = await server.api('GET', '/subscriptions/?page_size=2', { auth: user });
      expect(page1.body.count).toBe(3);
      expect(page1.body.results).toHaveLength(2);
      expect(page1.body.next).toMatch(/page=2/);
      const page2 = await server.request('GET', new URL(page1.body.next).pathname + new URL(page1.body.next).search, { auth: user });
      expect(page2.body.results).toHaveLength(1);
      expect(page2.body.previous).toMatch(/page=1/);
      const past = await server.api('GET', '/subscriptions/?page=9', { auth: user });
      expect(past.status).toBe(200);
      expect(past.body.results).toEqual([]);
    });

    it('rejects unknown filter values and orderings with 400', async () => {
      await newUser();
      for (const q of ['status=sleeping', 'payment_type=paypal', 'ordering=price', 'page=0', 'page_size=101']) {
        const res = await server.api('GET', `/subscriptions/?${q}`, { auth: user });
        expect(res.status, q).toBe(400);
        expect(res.body.code).toBe('validation_error');
      }
    });

    it('detail: the owner sees it; another user gets 404; a malformed id names nothing (404)', async () => {
      await newUser();
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
      const id = created.body.subscription.id;
      expect((await get(id)).body).toEqual(created.body.subscription);
      const stranger = await server.createUser();
      const res = await get(id, stranger);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
      const malformed = await server.api('GET', '/subscriptions/not-a-uuid/', { auth: user });
      expect(malformed.status).toBe(404);
      expect(malformed.body.code).toBe('not_found');
    });

    it('active/: 404 without an active or trialing subscription, else that subscription', async () => {
      await newUser();
      const none = await server.api('GET', '/subscriptions/active/', { auth: user });
      expect(none.status).toBe(404);
      expect(none.body.code).toBe('not_found');
      const pending = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
      expect((await server.api('GET', '/subscriptions/active/', { auth: user })).status).toBe(404);
      await simulate(server, pending.body.payment.order_id, 'settle');
      const active = await server.api('GET', '/subscriptions/active/', { auth: user });
      expect(active.status).toBe(200);
      expect(active.body).toMatchObject({ id: pending.body.subscription.id, status: 'active' });
    });
  });

  describe('pause and resume', () => {
    it('pauses an active subscription: paused_at is set, access ends, the user is notified', async () => {
      await newUser();
      const { subscription } = await activeSubscription(server, user);
      const res = await post(subscription.id, 'pause');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: subscription.id, status: 'paused', paused_at: clock.now().toISOString() });
      expect((await server.api('GET', '/subscriptions/active/', { auth: user })).status).toBe(404);
      expect(await notificationTypes(server, user)).toContain('subscription_paused');
    });

    it('resumes a paused one: active again, the period and next billing date later by the time spent paused', async () => {
      await newUser();
      const { subscription } = await activeSubscription(server, user);
      await post(subscription.id, 'pause');
      clock.advance(5 * DAY + 3_600_000);
      const res = await post(subscription.id, 'resume');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'active', paused_at: null });
      const shift = 5 * DAY + 3_600_000;
      expect(new Date(res.body.next_billing_date).getTime()).toBe(new Date(subscription.next_billing_date).getTime() + shift);
      expect(new Date(res.body.current_period_end).getTime()).toBe(new Date(subscription.current_period_end).getTime() + shift);
      expect(res.body.current_period_start).toBe(subscription.current_period_start);
      const stored = await dbOf(server).findOneOrFail(Subscription, subscription.id);
      expect(stored.billingAnchor!.getTime()).toBe(new Date(subscription.current_period_start).getTime() + shift);
      expect(await notificationTypes(server, user)).toContain('subscription_resumed');
    });

    it.each([
      ['pending', 'pause'],
      ['trialing', 'pause'],
      ['paused', 'pause'],
      ['canceled', 'pause'],
      ['past_due', 'pause'],
      ['active', 'resume'],
      ['pending', 'resume'],
      ['canceled', 'resume'],
      ['trialing', 'resume'],
    ])('a %s subscription cannot %s: 409 invalid_state and nothing changes', async (status, action) => {
      await newUser();
      let id: string;
      if (status === 'pending') id = (await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' })).body.subscription.id;
      else if (status === 'trialing') id = (await subscribe(server, user, { plan_id: 'pro-trial', payment_type: 'qris' })).body.subscription.id;
      else {
        id = (await activeSubscription(server, user)).subscription.id;
        if (status === 'paused') await post(id, 'pause');
        if (status === 'canceled') await post(id, 'cancel', { immediate: true });
        if (status === 'past_due') await forceStatus(id, 'past_due');
      }
      const before = (await get(id)).body;
      const res = await post(id, action);
      expect(res.status).toBe(409);
      expect(res.headers.get('content-type')).toMatch(/problem\+json/);
      expect(res.body.code).toBe('invalid_state');
      expect((await get(id)).body).toEqual(before);
    });

    it("another user's subscription: 404, and a malformed id names nothing: 404", async () => {
      await newUser();
      const { subscription } = await activeSubscription(server, user);
      const stranger = await server.createUser();
      expect((await post(subscription.id, 'pause', undefined, stranger)).status).toBe(404);
      expect((await post(subscription.id, 'resume', undefined, stranger)).status).toBe(404);
      expect((await server.api('POST', '/subscriptions/123/pause/', { auth: user })).status).toBe(404);
      expect((await get(subscription.id)).body.status).toBe('active');
    });
  });

  describe('cancel', () => {
    it('a pending (never-paid) subscription is canceled now in either mode, its payment canceled at the gateway', async () => {
      await newUser();
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
      const res = await post(created.body.subscription.id, 'cancel', { reason: 'changed my mind' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'canceled', cancel_reason: 'changed my mind', canceled_at: clock.now().toISOString(), cancel_at_period_end: false });
      expect((await server.api('GET', `/payments/${created.body.payment.id}/`, { auth: user })).body.status).toBe('canceled');
      expect((await server.api('GET', `/invoices/${created.body.payment.invoice_id}/`, { auth: user })).body.status).toBe('void');
      expect(server.running.billing.simulator!.transaction(created.body.payment.order_id)!.transaction_status).toBe('cancel');
      expect(await notificationTypes(server, user)).toContain('subscription_canceled');
    });

    it('a never-paid past_due subscription is canceled now', async () => {
      await newUser();
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
      await simulate(server, created.body.payment.order_id, 'deny');
      expect((await get(created.body.subscription.id)).body.status).toBe('past_due');
      const res = await post(created.body.subscription.id, 'cancel', { immediate: false });
      expect(res.body.status).toBe('canceled');
    });

    it.each(['active', 'trialing'])('immediate false on an %s one: unchanged status, cancel_at_period_end, access kept', async (status) => {
      await newUser();
      const id =
        status === 'active'
          ? (await activeSubscription(server, user)).subscription.id
          : (await subscribe(server, user, { plan_id: 'pro-trial', payment_type: 'qris' })).body.subscription.id;
      const res = await post(id, 'cancel', { reason: 'too expensive', immediate: false });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status, cancel_at_period_end: true, cancel_reason: 'too expensive', canceled_at: null });
      expect((await server.api('GET', '/subscriptions/active/', { auth: user })).body.id).toBe(id);
      // Asking again changes nothing.
      expect((await post(id, 'cancel', { immediate: false })).body).toMatchObject({ status, cancel_at_period_end: true });
    });

    it('without a body it cancels at the period end (immediate defaults to false)', async () => {
      await newUser();
      const { subscription } = await activeSubscription(server, user);
      const res = await post(subscription.id, 'cancel');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'active', cancel_at_period_end: true });
    });

    it.each(['active', 'trialing', 'paused', 'past_due'])('immediate true on a %s one: canceled now, access ends', async (status) => {
      await newUser();
      let id: string;
      if (status === 'trialing') id = (await subscribe(server, user, { plan_id: 'pro-trial', payment_type: 'qris' })).body.subscription.id;
      else {
        id = (await activeSubscription(server, user)).subscription.id;
        if (status === 'paused') await post(id, 'pause');
        if (status === 'past_due') await forceStatus(id, 'past_due');
      }
      const res = await post(id, 'cancel', { immediate: true, reason: 'closing the company' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'canceled', cancel_reason: 'closing the company', canceled_at: clock.now().toISOString(), next_billing_date: null });
      expect((await server.api('GET', '/subscriptions/active/', { auth: user })).status).toBe(404);
      // The user may subscribe again right away.
      expect((await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' })).status).toBe(201);
    });

    it.each([
      ['paused', false],
      ['past_due', false],
      ['canceled', false],
      ['canceled', true],
      ['expired', true],
    ])('a %s (paid) subscription with immediate %s: 409 invalid_state and nothing changes', async (status, immediate) => {
      await newUser();
      const id = (await activeSubscription(server, user)).subscription.id;
      if (status === 'paused') await post(id, 'pause');
      if (status === 'canceled') await post(id, 'cancel', { immediate: true });
      if (status === 'past_due' || status === 'expired') await forceStatus(id, status as Subscription['status']);
      const before = (await get(id)).body;
      const res = await post(id, 'cancel', { immediate });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('invalid_state');
      expect((await get(id)).body).toEqual(before);
    });

    it('bad input: an unknown field is 400, another user is 404, and nothing is written', async () => {
      await newUser();
      const { subscription } = await activeSubscription(server, user);
      const before = await storedCounts(server, user);
      expect((await post(subscription.id, 'cancel', { immediate: 'yes' })).status).toBe(400);
      expect((await post(subscription.id, 'cancel', { when: 'now' })).status).toBe(400);
      const stranger = await server.createUser();
      expect((await post(subscription.id, 'cancel', { immediate: true }, stranger)).status).toBe(404);
      expect((await get(subscription.id)).body.status).toBe('active');
      expect(await storedCounts(server, user)).toEqual(before);
    });

    it('works with a session cookie and its CSRF token, and refuses the cookie without it', async () => {
      await newUser();
      const { subscription } = await activeSubscription(server, user);
      const session = await server.login(user);
      const refused = await server.api('POST', `/subscriptions/${subscription.id}/cancel/`, {
        session,
        headers: { 'x-csrf-token': 'wrong' },
        body: { immediate: true },
      });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('csrf_failed');
      const ok = await server.api('POST', `/subscriptions/${subscription.id}/cancel/`, { session, body: { immediate: true } });
      expect(ok.status).toBe(200);
      expect(ok.body.status).toBe('canceled');
    });
  });
});
