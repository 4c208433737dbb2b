import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DAY, startBilling, type BillingHarness } from '../helpers/billing.js';
import { DATABASES } from '../helpers/database.js';
import { activeSubscription, fundWallet, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 28, row 10: a customer does nothing after the period ends. Access (the middleware and
 * GET /subscriptions/active/) needs a paid period that covers now, within ACCESS_GRACE_MINUTES,
 * whether or not a billing pass has run (docs/billing.md). The server's own pass is off here
 * (test/helpers/server.ts), so only the clock moves.
 */

const START = new Date('2027-01-31T10:00:00.000Z');
const MINUTE = 60_000;
const SUBSCRIPTION_REQUIRED = { error: 'Active subscription required.', code: 'subscription_required' };

describe.each(DATABASES)('access follows the clock, not the billing pass, on %s', (kind) => {
  let h: BillingHarness;
  let user: TestUser;
  beforeAll(async () => {
    h = await startBilling(kind, START, { SUBSCRIPTION_PROTECTED_PATHS: '/app/' });
  });
  afterAll(() => h?.stop());
  beforeEach(async () => {
    h.clock.set(START);
    user = await h.server.createUser();
  });

  const at = (t: number) => h.clock.set(new Date(t));
  /** The middleware's answer on a protected API path: 404 is Koa's (nothing is mounted there), so it passed. */
  const gate = () => h.server.request('GET', '/app/reports/', { auth: user, headers: { accept: 'application/json' } });
  const active = () => h.server.api('GET', '/subscriptions/active/', { auth: user });
  const stored = async (id: string) => (await h.sub(id)).status;

  async function expectAccess(subscriptionId: string) {
    expect((await gate()).status).toBe(404);
    const res = await active();
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(subscriptionId);
  }

  async function expectNoAccess() {
    const denied = await gate();
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual(SUBSCRIPTION_REQUIRED);
    const res = await active();
    // What it answers for a user who never subscribed.
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  }

  it('a paid period that ended more than ACCESS_GRACE_MINUTES ago gives no access, with no billing pass run', async () => {
    const { subscription } = await activeSubscription(h.server, user);
    const end = Date.parse(subscription.current_period_end);
    expect(end).toBe(Date.parse('2027-02-28T10:00:00.000Z'));
    await expectAccess(subscription.id);

    // Within the grace (default 60 minutes): a pass may still be on its way.
    at(end + 59 * MINUTE);
    await expectAccess(subscription.id);

    // The answer the access cache kept expires with the grace, though nothing was written.
    at(end + 61 * MINUTE);
    await expectNoAccess();
    // Nothing ran: the stored subscription is still active, and access is refused all the same.
    expect(await stored(subscription.id)).toBe('active');
    at(end + 40 * DAY);
    await expectNoAccess();
  });

  it('a renewal invoice a pass issued keeps access until its due date, then none', async () => {
    const { subscription } = await activeSubscription(h.server, user);
    const end = Date.parse(subscription.current_period_end);
    // The pass comes 5 minutes late and issues the renewal invoice (a bank transfer: it waits to be paid).
    at(end + 5 * MINUTE);
    const report = await h.run();
    expect(report.actions.filter((a) => a.subscription_id === subscription.id).map((a) => a.action)).toEqual(['renew']);
    const renewal = (await h.invoices(subscription.id)).at(-1)!;
    expect(renewal.status).toBe('open');
    const dueAt = renewal.createdAt.getTime() + 3 * DAY;

    at(end + 2 * DAY);
    await expectAccess(subscription.id);
    at(dueAt - MINUTE);
    await expectAccess(subscription.id);
    // No pass at the due date: still active in the database, but the due date has passed.
    at(dueAt + MINUTE);
    await expectNoAccess();
    expect(await stored(subscription.id)).toBe('active');

    // The pass then makes it past_due (docs/billing.md, 'Dunning'): the same answer.
    await h.run();
    expect(await stored(subscription.id)).toBe('past_due');
    await expectNoAccess();
  });

  it('a pass within the grace renews from the wallet: access goes on without a gap', async () => {
    await fundWallet(h.server, user, '100000');
    const { subscription } = await activeSubscription(h.server, user, 'basic-monthly', 'wallet');
    const end = Date.parse(subscription.current_period_end);
    at(end + 30 * MINUTE);
    await expectAccess(subscription.id);
    expect((await h.run()).actions.filter((a) => a.subscription_id === subscription.id).map((a) => a.action)).toEqual(['renew']);
    at(end + 2 * 60 * MINUTE);
    await expectAccess(subscription.id);
  });

  it('a trial that ended more than ACCESS_GRACE_MINUTES ago gives no access', async () => {
    const created = await subscribe(h.server, user, { plan_id: 'pro-trial', payment_type: 'qris' });
    expect(created.body.subscription.status).toBe('trialing');
    const trialEnd = Date.parse(created.body.subscription.trial_end);
    at(trialEnd + 30 * MINUTE);
    await expectAccess(created.body.subscription.id);
    at(trialEnd + 2 * 60 * MINUTE);
    await expectNoAccess();
    expect(await stored(created.body.subscription.id)).toBe('trialing');
  });
});

describe.each(DATABASES)('ACCESS_GRACE_MINUTES on %s', (kind) => {
  let h: BillingHarness;
  beforeAll(async () => {
    h = await startBilling(kind, START, { SUBSCRIPTION_PROTECTED_PATHS: '/app/', ACCESS_GRACE_MINUTES: '0' });
  });
  afterAll(() => h?.stop());

  it('0: access ends at the period end itself', async () => {
    const user = await h.server.createUser();
    const { subscription } = await activeSubscription(h.server, user);
    const end = Date.parse(subscription.current_period_end);
    h.clock.set(new Date(end - 1));
    expect((await h.server.api('GET', '/subscriptions/active/', { auth: user })).status).toBe(200);
    h.clock.set(new Date(end));
    expect((await h.server.api('GET', '/subscriptions/active/', { auth: user })).status).toBe(404);
    expect((await h.server.request('GET', '/app/', { auth: user, headers: { accept: 'application/json' } })).status).toBe(403);
  });
});
