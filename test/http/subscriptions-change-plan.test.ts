import { beforeEach, describe, expect, it } from 'vitest';
import { Invoice } from '../../src/db/entities/invoice.js';
import { DATABASES } from '../helpers/database.js';
import type { TestServer } from '../helpers/server.js';
import {
  activeSubscription,
  dbOf,
  fundWallet,
  notificationTypes,
  serverOnClock,
  simulate,
  storedCounts,
  subscribe,
  walletBalance,
  type TestUser,
} from '../helpers/subscriptions.js';

const DAY = 24 * 60 * 60 * 1000;
const START = new Date('2026-01-15T03:00:00Z');

/*
 * The period from 15 January to 15 February is 31 days. Ten days in, 21 are unused:
 *   Basic 50 000 × 21/31 = 33 870.97 → 33 871; Pro 150 000 × 21/31 = 101 612.90 → 101 613;
 *   upgrading costs 101 613 − 33 871 = 67 742, downgrading credits the same.
 */
const CREDIT_BASIC = '33871.00';
const CHARGE_PRO = '101613.00';
const NET = '67742.00';

describe.each(DATABASES)('POST /subscriptions/{id}/change-plan/ on %s', (kind) => {
  const suite = serverOnClock(kind, START);
  const { clock } = suite;
  let server: TestServer;
  let user: TestUser;
  beforeEach(() => {
    ({ server, user } = suite);
  });

  const change = (id: string, body: unknown, as: TestUser = user, headers?: Record<string, string>) =>
    server.api('POST', `/subscriptions/${id}/change-plan/`, { auth: as, body, headers });
  const get = (id: string) => server.api('GET', `/subscriptions/${id}/`, { auth: user });

  describe('immediate: true', () => {
    it('an upgrade by bank transfer takes effect when it is paid: pending_change until the proration payment settles', async () => {
      const { subscription } = await activeSubscription(server, user, 'basic-monthly');
      clock.advance(10 * DAY);
      const res = await change(subscription.id, { plan_id: 'pro-monthly', immediate: true });
      expect(res.status).toBe(200);
      const payment = res.body.payment;
      expect(payment).toMatchObject({ status: 'pending', gross_amount: NET, payment_type: 'bank_transfer', subscription_id: subscription.id });
      expect(payment.payment_details.va_number).toBeDefined();
      // Not paid yet: the subscription keeps its plan and shows the change waiting for the payment.
      expect(res.body.subscription).toMatchObject({
        status: 'active',
        plan: { slug: 'basic-monthly' },
        pending_plan: null,
        pending_change: { plan: { slug: 'pro-monthly' }, payment_id: payment.id, effective: 'immediate', credit: CREDIT_BASIC, amount_due: NET },
        current_period_end: subscription.current_period_end,
      });

      const invoice = (await server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: user })).body;
      expect(invoice).toMatchObject({ status: 'open', total_amount: NET, subtotal: NET });
      expect(invoice.lines).toEqual([
        expect.objectContaining({ kind: 'proration', amount: `-${CREDIT_BASIC}`, description: expect.stringContaining('Basic') }),
        expect.objectContaining({ kind: 'proration', amount: CHARGE_PRO, description: expect.stringContaining('Pro') }),
      ]);
      expect(invoice.lines[0].period_end).toBe(subscription.current_period_end);

      // Paying it switches the plan and leaves the period as it was.
      await simulate(server, payment.order_id, 'settle');
      const after = (await get(subscription.id)).body;
      expect(after).toMatchObject({ status: 'active', plan: { slug: 'pro-monthly' }, pending_change: null, cycles_completed: 1, current_period_end: subscription.current_period_end });
      expect((await server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: user })).body.status).toBe('paid');
      expect(await notificationTypes(server, user)).toContain('subscription_plan_changed');
    });

    it('a downgrade credits the unused difference to the wallet and returns no payment', async () => {
      const { subscription } = await activeSubscription(server, user, 'pro-monthly');
      clock.advance(10 * DAY);
      const before = await storedCounts(server, user);
      const res = await change(subscription.id, { plan_id: 'basic-monthly' });
      expect(res.status).toBe(200);
      expect(res.body.payment).toBeNull();
      expect(res.body.subscription.plan.slug).toBe('basic-monthly');
      expect(await walletBalance(server, user)).toBe(NET);
      const tx = (await server.api('GET', '/wallet/transactions/', { auth: user })).body.results[0];
      expect(tx).toMatchObject({ kind: 'credit', source: 'proration', amount: NET });
      const after = await storedCounts(server, user);
      expect(after.invoices).toBe(before.invoices);
      expect(after.payments).toBe(before.payments);
    });

    it('a wallet subscription pays the upgrade from the wallet at once', async () => {
      await fundWallet(server, user, '117742.00');
      const { subscription } = await activeSubscription(server, user, 'basic-monthly', 'wallet');
      clock.advance(10 * DAY);
      const res = await change(subscription.id, { plan_id: 'pro-monthly' });
      expect(res.status).toBe(200);
      expect(res.body.payment).toMatchObject({ status: 'settled', gross_amount: NET, payment_type: 'wallet' });
      expect(await walletBalance(server, user)).toBe('0.00');
      expect((await server.api('GET', `/invoices/${res.body.payment.invoice_id}/`, { auth: user })).body.status).toBe('paid');
      expect(res.body.subscription).toMatchObject({ status: 'active', plan: { slug: 'pro-monthly' }, cycles_completed: 1 });
    });

    it('a wallet subscription without the funds for the upgrade: 409 insufficient_funds, plan and records unchanged', async () => {
      await fundWallet(server, user, '60000.00');
      const { subscription } = await activeSubscription(server, user, 'basic-monthly', 'wallet');
      clock.advance(10 * DAY);
      const before = await storedCounts(server, user);
      const res = await change(subscription.id, { plan_id: 'pro-monthly' });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('insufficient_funds');
      expect((await get(subscription.id)).body.plan.slug).toBe('basic-monthly');
      expect(await storedCounts(server, user)).toEqual(before);
      expect(await walletBalance(server, user)).toBe('10000.00');
    });

    it('a card subscription is charged on its saved card without the customer (captured at once)', async () => {
      const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'credit_card', token: 'sim-card-accept-77' });
      expect(created.body.subscription.status).toBe('active');
      clock.advance(10 * DAY);
      const res = await change(created.body.subscription.id, { plan_id: 'pro-monthly' });
      expect(res.status).toBe(200);
      expect(res.body.payment).toMatchObject({ status: 'settled', gross_amount: NET, payment_type: 'credit_card' });
      const tx = server.running.billing.simulator!.transaction(res.body.payment.order_id)!;
      expect(tx.card).toMatchObject({ initiated_by: 'merchant' });
      expect(tx.card!.token_id).toMatch(/^sim-card-accept-saved-/);
    });

    it('when the gateway refuses the proration charge, the change is dropped (502)', async () => {
      const { subscription } = await activeSubscription(server, user, 'basic-monthly');
      clock.advance(10 * DAY);
      await server.request('POST', '/_simulator/faults', { body: { mode: 'refuse', count: 1, operations: ['charge'] } });
      const res = await change(subscription.id, { plan_id: 'pro-monthly' });
      expect(res.status).toBe(502);
      expect((await get(subscription.id)).body).toMatchObject({ status: 'active', plan: { slug: 'basic-monthly' }, pending_change: null });
      const proration = await dbOf(server).findOneOrFail(Invoice, { user: user.id, billingReason: 'subscription_update' });
      expect(proration.status).toBe('void');
    });

    it('on a trial: switches the plan now, nothing to prorate', async () => {
      const created = await subscribe(server, user, { plan_id: 'pro-trial', payment_type: 'qris' });
      const res = await change(created.body.subscription.id, { plan_id: 'basic-monthly' });
      expect(res.status).toBe(200);
      expect(res.body.payment).toBeNull();
      expect(res.body.subscription).toMatchObject({ status: 'trialing', plan: { slug: 'basic-monthly' }, trial_end: created.body.subscription.trial_end });
      expect((await storedCounts(server, user)).invoices).toBe(0);
    });

    it('clears a scheduled change', async () => {
      await fundWallet(server, user, '150000.00');
      const { subscription } = await activeSubscription(server, user, 'basic-monthly', 'wallet');
      await change(subscription.id, { plan_id: 'weekly', immediate: false });
      const res = await change(subscription.id, { plan_id: 'pro-monthly', immediate: true });
      expect(res.body.subscription).toMatchObject({ plan: { slug: 'pro-monthly' }, pending_plan: null, pending_change: null });
    });
  });

  describe('immediate: false', () => {
    it('schedules the change for the next renewal: pending_plan set, plan unchanged, nothing billed', async () => {
      const { subscription } = await activeSubscription(server, user, 'basic-monthly');
      const before = await storedCounts(server, user);
      const res = await change(subscription.id, { plan_id: 'pro-monthly', immediate: false });
      expect(res.status).toBe(200);
      expect(res.body.payment).toBeNull();
      expect(res.body.subscription).toMatchObject({ plan: { slug: 'basic-monthly' }, pending_plan: { slug: 'pro-monthly', price: '150000.00' } });
      const after = await storedCounts(server, user);
      expect([after.invoices, after.payments]).toEqual([before.invoices, before.payments]);
    });
  });

  describe('refused changes answer a 4xx problem and change nothing', () => {
    it('to the plan it is already on: 409 invalid_state', async () => {
      const { subscription } = await activeSubscription(server, user, 'basic-monthly');
      const res = await change(subscription.id, { plan_id: 'basic-monthly' });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('invalid_state');
    });

    it('to a plan in another currency: 409 invalid_state', async () => {
      const { subscription } = await activeSubscription(server, user, 'basic-monthly');
      const res = await change(subscription.id, { plan_id: 'usd-monthly' });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('invalid_state');
      expect((await get(subscription.id)).body.plan.slug).toBe('basic-monthly');
    });

    it.each([
      ['no-such-plan', 404, 'not_found'],
      ['legacy', 404, 'not_found'],
      ['', 400, 'validation_error'],
    ])('to plan "%s": %s', async (planId, status, code) => {
      const { subscription } = await activeSubscription(server, user, 'basic-monthly');
      const res = await change(subscription.id, { plan_id: planId });
      expect(res.status).toBe(status);
      expect(res.body.code).toBe(code);
      expect((await get(subscription.id)).body.plan.slug).toBe('basic-monthly');
    });

    it.each(['pending', 'paused', 'canceled'])('of a %s subscription: 409 invalid_state', async (status) => {
      let id: string;
      if (status === 'pending') id = (await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' })).body.subscription.id;
      else {
        id = (await activeSubscription(server, user, 'basic-monthly')).subscription.id;
        if (status === 'paused') await server.api('POST', `/subscriptions/${id}/pause/`, { auth: user });
        if (status === 'canceled') await server.api('POST', `/subscriptions/${id}/cancel/`, { auth: user, body: { immediate: true } });
      }
      const before = await storedCounts(server, user);
      for (const immediate of [true, false]) {
        const res = await change(id, { plan_id: 'pro-monthly', immediate });
        expect(res.status).toBe(409);
        expect(res.body.code).toBe('invalid_state');
      }
      expect(await storedCounts(server, user)).toEqual(before);
    });

    it("of another user's subscription: 404", async () => {
      const { subscription } = await activeSubscription(server, user, 'basic-monthly');
      const stranger = await server.createUser();
      const res = await change(subscription.id, { plan_id: 'pro-monthly' }, stranger);
      expect(res.status).toBe(404);
      expect((await get(subscription.id)).body.plan.slug).toBe('basic-monthly');
    });
  });
});
