import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import { TrialGrant } from '../../src/db/entities/trial-grant.js';
import { ManualClock } from '../../src/domain/clock.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { activeSubscription, dbOf, fundWallet, simulate, subscribe, walletBalance, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 14, items 1-4: the sequences a hostile customer tried with nothing but the public API,
 * each now held by a money rule (docs/billing.md, 'Money rules').
 */

const DAY = 24 * 60 * 60 * 1000;
const MINUTE = 60 * 1000;
const START = new Date('2026-01-15T03:00:00.000Z');
const PLANS = [
  ...STANDARD_PLANS,
  { slug: 'pro-yearly', name: 'Pro yearly', description: 'Pro, billed yearly', price: 1490000, currency: 'IDR', interval: 12, interval_unit: 'month' as const, sort_order: 7 },
];

describe.each(DATABASES)('money rules of plan changes, refunds and trials on %s', (kind) => {
  let server: TestServer;
  let user: TestUser;
  const clock = new ManualClock(START);
  beforeAll(async () => {
    server = await startTestServer(kind, { clock });
    await server.seedPlans(PLANS);
  });
  afterAll(() => server?.stop());
  beforeEach(async () => {
    clock.set(START);
    user = await server.createUser();
  });

  const change = (id: string, body: unknown) => server.api('POST', `/subscriptions/${id}/change-plan/`, { auth: user, body });
  const refund = (id: string, body?: unknown) => server.api('POST', `/payments/${id}/refund/`, { auth: user, body });
  const getSub = async (id: string) => (await server.api('GET', `/subscriptions/${id}/`, { auth: user })).body;
  const getPayment = async (id: string) => (await server.api('GET', `/payments/${id}/`, { auth: user })).body;
  const at = (ms: number) => new Date(START.getTime() + ms).toISOString();

  describe('1. a change that costs money takes effect when it is paid', () => {
    it('upgrading and downgrading again without paying creates no money: each unpaid upgrade is dropped and its payment canceled', async () => {
      const { subscription } = await activeSubscription(server, user, 'basic-monthly');
      const dropped: string[] = [];
      for (let round = 1; round <= 3; round++) {
        clock.set(new Date(START.getTime() + round * DAY));
        const up = await change(subscription.id, { plan_id: 'pro-monthly' });
        expect(up.status).toBe(200);
        expect(up.body.payment).toMatchObject({ status: 'pending', payment_type: 'bank_transfer' });
        expect(up.body.subscription).toMatchObject({ plan: { slug: 'basic-monthly' }, pending_change: { plan: { slug: 'pro-monthly' }, payment_id: up.body.payment.id } });
        dropped.push(up.body.payment.id);

        clock.advance(MINUTE);
        const back = await change(subscription.id, { plan_id: 'basic-monthly' });
        expect(back.status).toBe(200);
        expect(back.body.payment).toBeNull();
        expect(back.body.subscription).toMatchObject({ status: 'active', plan: { slug: 'basic-monthly' }, pending_change: null });
        expect(await walletBalance(server, user)).toBe('0.00');
      }
      const em = dbOf(server);
      for (const id of dropped) {
        const payment = await em.findOneOrFail(Payment, id, { populate: ['invoice'] });
        expect(payment.status).toBe('canceled');
        expect(payment.invoice!.status).toBe('void');
      }

      // Paid, the upgrade applies; the downgrade then credits exactly what the upgrade cost, never more.
      clock.set(new Date(START.getTime() + 10 * DAY));
      const up = await change(subscription.id, { plan_id: 'pro-monthly' });
      expect(up.body.payment.gross_amount).toBe('67742.00'); // 150 000 × 21/31 − 50 000 × 21/31
      await simulate(server, up.body.payment.order_id, 'settle');
      expect(await getSub(subscription.id)).toMatchObject({ plan: { slug: 'pro-monthly' }, pending_change: null });
      const down = await change(subscription.id, { plan_id: 'basic-monthly' });
      expect(down.status).toBe(200);
      expect(await walletBalance(server, user)).toBe('67742.00');
      // That credit came from the upgrade's payment: nothing of it is left to refund.
      expect(await getPayment(up.body.payment.id)).toMatchObject({ credited_amount: '67742.00', refunded_amount: '0.00' });
      expect((await refund(up.body.payment.id)).status).toBe(409);
    });

    it('when the change payment expires, the change is dropped and the subscription stays active on its plan', async () => {
      const { subscription } = await activeSubscription(server, user, 'basic-monthly');
      clock.advance(10 * DAY);
      const up = await change(subscription.id, { plan_id: 'pro-monthly' });
      await simulate(server, up.body.payment.order_id, 'expire');
      expect(await getSub(subscription.id)).toMatchObject({ status: 'active', plan: { slug: 'basic-monthly' }, pending_change: null });
      expect((await dbOf(server).findOneOrFail(Invoice, up.body.payment.invoice_id)).status).toBe('void');
    });
  });

  describe('1b. every switch credits what it frees, even several in the same millisecond', () => {
    it('down, up (paid by the saved card) and down again at one instant: the wallet holds both credits, each with its own credit note', async () => {
      const created = await subscribe(server, user, { plan_id: 'pro-yearly', payment_type: 'credit_card', token: 'sim-card-accept-0' });
      expect(created.status).toBe(201);
      const id = created.body.subscription.id;
      expect((await getSub(id)).status).toBe('active');
      expect((await change(id, { plan_id: 'basic-monthly', immediate: true })).status).toBe(200);
      const first = await walletBalance(server, user);
      expect(Number(first)).toBeGreaterThan(0);
      const up = await change(id, { plan_id: 'pro-yearly', immediate: true });
      expect(up.status).toBe(200);
      expect((await getSub(id)).plan.slug).toBe('pro-yearly');
      expect((await change(id, { plan_id: 'basic-monthly', immediate: true })).status).toBe(200);

      const payments = (await server.api('GET', '/payments/', { auth: user })).body.results as { credited_amount: string }[];
      const credited = payments.reduce((sum, p) => sum + Number(p.credited_amount), 0);
      expect(credited).toBeGreaterThan(Number(first));
      expect(Number(await walletBalance(server, user))).toBe(credited);
      const notes = (await server.api('GET', '/credit-notes/', { auth: user })).body.results as { amount: string; wallet_transaction_id: string }[];
      expect(notes.reduce((sum, n) => sum + Number(n.amount), 0)).toBe(credited);
      expect(new Set(notes.map((n) => n.wallet_transaction_id)).size).toBe(2);
    });
  });

  describe('2. a refund gives back at most what is unused, and ends what it pays back', () => {
    it('yearly from the wallet, downgrade, then a full refund of the original payment: back no more than was paid, and the subscription ends', async () => {
      await fundWallet(server, user, '1490000.00');
      const { subscription, payment } = await activeSubscription(server, user, 'pro-yearly', 'wallet');
      clock.advance(10 * DAY);
      // 1 490 000 × 355/365 = 1 449 178 unused; the new monthly period costs 50 000 of it.
      const down = await change(subscription.id, { plan_id: 'basic-monthly' });
      expect(down.status).toBe(200);
      expect(await walletBalance(server, user)).toBe('1399178.00');
      expect(await getPayment(payment.id)).toMatchObject({ credited_amount: '1399178.00' });

      // Asking for everything gets the unused share of what the payment still pays for: 50 000.
      expect((await refund(payment.id, { amount: '90822.00' })).status).toBe(400);
      const res = await refund(payment.id);
      expect(res.status).toBe(200);
      expect(res.body.refund).toMatchObject({ amount: '50000.00', destination: 'wallet', status: 'succeeded' });
      expect(await walletBalance(server, user)).toBe('1449178.00');
      expect(await getSub(subscription.id)).toMatchObject({ status: 'canceled', cancel_reason: 'refunded' });
      expect((await refund(payment.id)).status).toBe(409);
    });

    it('a full refund of the payment that paid the current period gives back its unused share and cancels the subscription', async () => {
      const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly');
      clock.advance(10 * DAY);
      expect((await refund(payment.id, { amount: '50000.00' })).status).toBe(400);
      const res = await refund(payment.id);
      expect(res.status).toBe(200);
      expect(res.body.payment).toMatchObject({ status: 'partially_refunded', refunded_amount: '33871.00' }); // 50 000 × 21/31
      expect(await walletBalance(server, user)).toBe('33871.00');
      expect(await getSub(subscription.id)).toMatchObject({ status: 'canceled', cancel_reason: 'refunded', next_billing_date: null });
    });
  });

  describe('2c. a refund made at the gateway never pays out twice what a wallet credit already gave back', () => {
    it('after a downgrade credited the unused year, a dashboard refund takes its overlap back from the wallet, and the credit notes stay within what was paid', async () => {
      // By card: the gateway refunds cards (not bank transfers) from its dashboard.
      const created = await subscribe(server, user, { plan_id: 'pro-yearly', payment_type: 'credit_card', token: 'sim-card-accept-0' });
      expect(created.status).toBe(201);
      const { subscription, payment } = created.body;
      await server.request('POST', `/_simulator/v2/${payment.order_id}/settle`, { body: {} });
      expect((await getSub(subscription.id)).status).toBe('active');
      clock.advance(DAY);
      const down = await change(subscription.id, { plan_id: 'basic-monthly', immediate: true });
      expect(down.status).toBe(200);
      const credited = (await getPayment(payment.id)).credited_amount as string;
      expect(await walletBalance(server, user)).toBe(credited);
      const left = 1490000 - Number(credited); // what the downgrade did not give back: it pays for the new plan's period

      // Staff refund 4 % at the gateway's dashboard: more than the payment has left.
      const refunded = 59600;
      expect(refunded).toBeGreaterThan(left);
      const res = await simulate(server, payment.order_id, 'refund', { amount: refunded });
      expect(res.body.notification.http_status).toBe(200);

      const twice = refunded - left;
      const after = await getPayment(payment.id);
      expect(after).toMatchObject({ refunded_amount: '59600.00', credited_amount: (Number(credited) - twice).toFixed(2) });
      expect(await walletBalance(server, user)).toBe((Number(credited) - twice).toFixed(2));
      // Money out (the wallet's net credit and the card refund) is exactly what came in.
      expect(Number(after.credited_amount) + Number(after.refunded_amount)).toBe(1490000);
      const notes = (await server.api('GET', '/credit-notes/', { auth: user })).body.results.filter((n: { invoice_id: string }) => n.invoice_id === payment.invoice_id);
      expect(notes.reduce((sum: number, n: { amount: string }) => sum + Number(n.amount), 0)).toBe(1490000);
    });
  });

  describe('2b. paused time is not used time', () => {
    it('after a pause and resume, the unused share is what it was when the pause began', async () => {
      const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly');
      clock.advance(10 * DAY);
      expect((await server.api('POST', `/subscriptions/${subscription.id}/pause/`, { auth: user })).status).toBe(200);
      clock.advance(5 * DAY);
      expect((await server.api('POST', `/subscriptions/${subscription.id}/resume/`, { auth: user })).status).toBe(200);
      const res = await refund(payment.id);
      expect(res.body.refund.amount).toBe('33871.00'); // 50 000 × 21/31, as on day 10
    });
  });

  describe('3. different intervals reset the period', () => {
    it('monthly to yearly: the yearly price less the unused credit, a new period from the change, billed again a year later', async () => {
      const { subscription } = await activeSubscription(server, user, 'basic-monthly');
      clock.advance(10 * DAY);
      const up = await change(subscription.id, { plan_id: 'pro-yearly' });
      expect(up.status).toBe(200);
      expect(up.body.payment.gross_amount).toBe('1456129.00'); // 1 490 000 − 50 000 × 21/31
      expect(up.body.subscription.pending_change).toMatchObject({ period_start: at(10 * DAY), period_end: '2027-01-25T03:00:00.000Z' });
      await simulate(server, up.body.payment.order_id, 'settle');
      expect(await getSub(subscription.id)).toMatchObject({
        plan: { slug: 'pro-yearly' },
        current_period_start: at(10 * DAY),
        current_period_end: '2027-01-25T03:00:00.000Z',
        next_billing_date: '2027-01-25T03:00:00.000Z',
      });
    });

    it('yearly to monthly: the unused yearly credit less the monthly price goes to the wallet, billed again a month after the change; the new month stands on an invoice of 0', async () => {
      await fundWallet(server, user, '1490000.00');
      const { subscription } = await activeSubscription(server, user, 'pro-yearly', 'wallet');
      clock.advance(10 * DAY);
      const down = await change(subscription.id, { plan_id: 'basic-monthly' });
      // The credit pays the new month on its invoice; a payment of nothing settles it at once.
      expect(down.body.payment).toMatchObject({ status: 'settled', gross_amount: '0.00' });
      const invoice = (await server.api('GET', `/invoices/${down.body.payment.invoice_id}/`, { auth: user })).body;
      expect(invoice).toMatchObject({ status: 'paid', total_amount: '0.00' });
      const stored = await dbOf(server).findOneOrFail(Invoice, invoice.id);
      expect([stored.billingReason, stored.periodStart?.toISOString(), stored.periodEnd?.toISOString()]).toEqual(['subscription_update', at(10 * DAY), '2026-02-25T03:00:00.000Z']);
      expect(invoice.lines.map((l: { kind: string; amount: string }) => [l.kind, l.amount])).toEqual([['proration', '-50000.00'], ['subscription', '50000.00']]);
      expect(down.body.subscription).toMatchObject({
        plan: { slug: 'basic-monthly' },
        current_period_start: at(10 * DAY),
        next_billing_date: '2026-02-25T03:00:00.000Z',
      });
      expect(await walletBalance(server, user)).toBe('1399178.00');
    });
  });

  describe('4. one trial per user per plan, ever', () => {
    it('trial, change plan, cancel, subscribe to the trial plan again: no second trial', async () => {
      const first = await subscribe(server, user, { plan_id: 'pro-trial', payment_type: 'qris' });
      expect(first.body.subscription.status).toBe('trialing');
      const id = first.body.subscription.id;
      expect((await change(id, { plan_id: 'basic-monthly' })).body.subscription).toMatchObject({ status: 'trialing', plan: { slug: 'basic-monthly' } });
      expect((await server.api('POST', `/subscriptions/${id}/cancel/`, { auth: user, body: { immediate: true } })).status).toBe(200);

      const again = await subscribe(server, user, { plan_id: 'pro-trial', payment_type: 'qris' });
      expect(again.status).toBe(201);
      expect(again.body.subscription).toMatchObject({ status: 'pending', trial_end: null });
      expect(again.body.payment).toMatchObject({ status: 'pending', gross_amount: '150000.00' });
      expect(await dbOf(server).count(TrialGrant, { user: user.id })).toBe(1);
    });
  });
});
