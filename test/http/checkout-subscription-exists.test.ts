import { describe, expect, it } from 'vitest';
import { HostedSession } from '../../src/db/entities/hosted-session.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { createApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { DATABASES } from '../helpers/database.js';
import type { Credentials } from '../helpers/server.js';
import { activeSubscription, dbOf, serverOnClock, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * A plan's checkout link for a customer who already subscribes could only refuse them on the
 * page: it is refused when the shop asks for it (409 subscription_exists), with the subscription
 * and a portal link to send the customer to instead. What a new subscribe would replace (a
 * subscription never paid) does not stand in the way, as POST /subscriptions/ has it.
 */
describe.each(DATABASES)('a checkout link for a customer who already subscribes (%s)', { timeout: 120_000 }, (kind) => {
  const stage = serverOnClock(kind, new Date('2026-06-01T03:00:00.000Z'));
  const back = () => `${stage.server.url}/shop/plans`;

  const checkout = (body: Record<string, unknown>, auth: { user?: Credentials; headers?: Record<string, string> } = { user: stage.user }) =>
    stage.server.api('POST', '/checkout-sessions/', { auth: auth.user, headers: auth.headers ?? {}, body: { success_url: `${stage.server.url}/shop/thanks`, cancel_url: back(), ...body } });
  const checkoutLinks = (user: TestUser) => dbOf(stage.server).count(HostedSession, { user: user.id, kind: 'checkout' });

  /** The refusal's shape, and its portal link: a landing page for this customer, leading back to cancel_url. */
  async function expectRefused(res: Awaited<ReturnType<typeof checkout>>, subscriptionId: string) {
    expect(res.status, res.text).toBe(409);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ code: 'subscription_exists', subscription_id: subscriptionId });
    expect(res.body.portal_url).toMatch(new RegExp(`^${stage.server.url}/portal/[A-Za-z0-9_-]{43}/$`));
    expect(new Date(res.body.portal_expires_at).getTime()).toBeGreaterThan(stage.clock.now().getTime());
    const landing = await stage.server.request('GET', new URL(res.body.portal_url).pathname);
    expect(landing.status).toBe(200);
    expect(landing.text).toContain('id="open-portal"');
    const portal = await dbOf(stage.server).findOneOrFail(HostedSession, { user: stage.user.id, kind: 'portal' });
    expect(portal.returnUrl).toBe(back());
  }

  it.each(['active', 'trialing', 'paused'] as const)('%s: 409 with the subscription and a portal link; no checkout link is made', async (status) => {
    let id: string;
    if (status === 'trialing') {
      const made = await subscribe(stage.server, stage.user, { plan_id: 'pro-trial', payment_type: 'gopay' });
      id = made.body.subscription.id;
    } else {
      id = (await activeSubscription(stage.server, stage.user)).subscription.id;
      if (status === 'paused') expect((await stage.server.api('POST', `/subscriptions/${id}/pause/`, { auth: stage.user })).status).toBe(200);
    }
    expect((await dbOf(stage.server).findOneOrFail(Subscription, id)).status).toBe(status);
    await expectRefused(await checkout({ plan_id: 'pro-monthly' }), id);
    expect(await checkoutLinks(stage.user)).toBe(0);
  });

  it('past_due after a paid period: 409', async () => {
    const { subscription } = await activeSubscription(stage.server, stage.user);
    // Its renewal's payment failing makes it past_due; the first period was paid.
    await dbOf(stage.server).nativeUpdate(Subscription, { id: subscription.id }, { status: 'past_due' });
    await expectRefused(await checkout({ plan_id: 'basic-monthly' }), subscription.id);
  });

  it('a subscription never paid (pending, or past_due after its payment expired) does not stand in the way: 201, as a subscribe would replace it', async () => {
    const pending = await subscribe(stage.server, stage.user, { plan_id: 'basic-monthly', payment_type: 'qris' });
    expect((await checkout({ plan_id: 'pro-monthly' })).status).toBe(201);
    await simulate(stage.server, pending.body.payment.order_id, 'expire');
    expect((await dbOf(stage.server).findOneOrFail(Subscription, pending.body.subscription.id)).status).toBe('past_due');
    expect((await checkout({ plan_id: 'pro-monthly' })).status).toBe(201);
  });

  it('a top-up checkout is made whatever the customer subscribes to', async () => {
    await activeSubscription(stage.server, stage.user);
    expect((await checkout({ topup_amount: '100000' })).status).toBe(201);
  });

  it('asked by a write key for the customer the Billing-Customer header names: the same 409', async () => {
    const { billing } = stage.server.running;
    const key = (await createApiKey({ em: billing.orm.em.fork(), config: billing.config, clock: billing.clock }, cliActor(), { name: 'shop', scope: 'write' })).key;
    const { subscription } = await activeSubscription(stage.server, stage.user);
    await expectRefused(await checkout({ plan_id: 'pro-monthly' }, { headers: { authorization: `Bearer ${key}`, 'billing-customer': stage.user.id } }), subscription.id);
  });
});
