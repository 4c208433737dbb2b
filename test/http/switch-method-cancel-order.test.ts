import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { heldNotifications, holdNotifications, releaseNotifications } from '../helpers/simulator.js';
import { dbOf, notificationTypes, type TestUser } from '../helpers/subscriptions.js';

/*
 * Changing one's mind is not a failure: a new customer picks ShopeePay or a BCA virtual account
 * on the hosted checkout, then "Pilih metode lain" and QRIS. The service cancels the first order
 * at the gateway, and the gateway's `cancel` notification of it may be heard before the new
 * order exists, while it is being made, or after. Whatever the order, the never-paid
 * subscription stays `pending`, and the customer is told neither "payment failed" nor "past due".
 *
 * The notification is held at the simulator and released at the moment each case names, through
 * the server's own gateway client (the same object every service calls): right after the
 * gateway answered the cancel (before the new order is recorded), when the new order's charge
 * is on its way (the new payment committed, its order not yet made), or after the switch.
 */
type When = 'before' | 'during' | 'after' | 'as_it_comes';

describe.each(DATABASES)('switching the method of a pending checkout payment (%s)', (kind) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  const gateway = () => server.running.billing.gateway;

  /** Runs `release` once, when the gateway client is next called for `op` (after its answer for a cancel, before the call for a charge). */
  function releaseAt(op: 'cancel' | 'charge', release: () => Promise<unknown>): () => void {
    const gw = gateway() as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const original = gw[op]!;
    gw[op] = async (...args: unknown[]) => {
      gw[op] = original;
      if (op === 'charge') await release();
      const answer = await original.apply(gw, args);
      if (op === 'cancel') await release();
      return answer;
    };
    return () => {
      gw[op] = original;
    };
  }

  /** A new user's checkout, its first choice made: the user, the waiting order, and the page's form poster. */
  async function waitingCheckout(first: Record<string, string>) {
    const user = await server.createUser();
    const made = await server.api('POST', '/checkout-sessions/', { auth: user, body: { plan_id: 'pro-monthly', success_url: `${server.url}/shop/thanks`, cancel_url: `${server.url}/shop` } });
    expect(made.status).toBe(201);
    const path = new URL(made.body.url).pathname;
    const page = await server.request('GET', path);
    const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.text)![1]!;
    const post = (fields: Record<string, string>) =>
      server.request('POST', path, { headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, rawBody: new URLSearchParams({ csrf_token: csrf, ...fields }).toString() });
    expect((await post(first)).status).toBe(303);
    const [payment] = await dbOf(server).find(Payment, { user: user.id });
    expect(payment!.status).toBe('pending');
    return { user, orderId: payment!.orderId, post };
  }

  /** Waits until the simulator has delivered the cancel's notification of `orderId` and the webhook answered it. */
  async function cancelHeard(orderId: string): Promise<void> {
    const sim = server.running.billing.simulator!;
    for (let i = 0; i < 200; i += 1) {
      if (sim.deliveries().some((d) => d.order_id === orderId && d.transaction_status === 'cancel' && d.http_status !== null)) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`the cancel notification of ${orderId} was never answered`);
  }

  const firsts: [string, Record<string, string>][] = [
    ['ShopeePay', { payment_type: 'shopeepay' }],
    ['a BCA virtual account', { payment_type: 'bank_transfer', bank: 'bca' }],
  ];
  const whens: [string, When][] = [
    ['before the new order is recorded', 'before'],
    ['while the new order is made', 'during'],
    ['after the switch', 'after'],
    ['as the gateway sends it (no hold)', 'as_it_comes'],
  ];

  /** The same switch through the API: subscribe, then POST /payments/charge/ with another payment_type. */
  async function waitingSubscription(first: Record<string, string>) {
    const user = await server.createUser();
    const created = await server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'pro-monthly', payment_type: first.payment_type, ...(first.bank ? { metadata: { bank: first.bank } } : {}) } });
    expect(created.status, created.text).toBe(201);
    const subscriptionId = created.body.subscription.id as string;
    const post = async (fields: Record<string, string>) => {
      const charged = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: subscriptionId, payment_type: fields.payment_type } });
      return { status: charged.status === 201 ? 303 : charged.status };
    };
    return { user, orderId: created.body.payment.order_id as string, post };
  }

  type Start = (first: Record<string, string>) => Promise<{ user: TestUser; orderId: string; post: (fields: Record<string, string>) => Promise<{ status: number }> }>;
  const ways: [string, Start][] = [
    ['the hosted checkout', waitingCheckout],
    ['POST /payments/charge/', waitingSubscription],
  ];

  describe.each(firsts.flatMap(([name, first]) => ways.map(([way, start]) => [`${name}, then QRIS, by ${way}`, first, start] as const)))('%s', (_name, first, start) => {
    it.each(whens)('the cancel notification heard %s: the subscription stays pending, no failure is told', async (_when, when) => {
      const { user, orderId, post } = await start(first);
      let restore = () => {};
      if (when !== 'as_it_comes') await holdNotifications(server, orderId);
      const release = async () => {
        const held = (await heldNotifications(server)).filter((h) => h.order_id === orderId && h.transaction_status === 'cancel');
        expect(held).toHaveLength(1);
        const released = await releaseNotifications(server, { ids: held.map((h) => h.id) });
        expect(released.map((r) => r.outcomes.map((o) => o.http_status))).toEqual([[200]]);
      };
      if (when === 'before') restore = releaseAt('cancel', release);
      if (when === 'during') restore = releaseAt('charge', release);
      try {
        expect((await post({ payment_type: 'qris', replaces: orderId })).status).toBe(303);
      } finally {
        restore();
      }
      if (when === 'after') await release();
      await cancelHeard(orderId);
      // Anything the switch could still set off has settled.
      await new Promise((r) => setTimeout(r, 200));

      const payments = await dbOf(server).find(Payment, { user: user.id }, { orderBy: { createdAt: 'asc' } });
      expect(payments.map((p) => [p.paymentType, p.status])).toEqual([[first.payment_type, 'canceled'], ['qris', 'pending']]);
      expect((await dbOf(server).findOneOrFail(Subscription, { user: user.id })).status).toBe('pending');
      const told = await notificationTypes(server, user);
      expect(told).not.toContain('payment_failed');
      expect(told).not.toContain('subscription_past_due');
    });
  });
});
