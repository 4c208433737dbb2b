import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CouponRedemption, PromotionCode } from '../../src/db/entities/coupon.js';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import { User } from '../../src/db/entities/user.js';
import { ManualClock } from '../../src/domain/clock.js';
import { add, subtract } from '../../src/domain/money.js';
import { ppnOf } from '../../src/domain/tax.js';
import { runBilling } from '../../src/services/billing/run-billing.js';
import { previewPlanChange } from '../../src/services/subscriptions/change-subscription-plan.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type HttpResult, type TestServer } from '../helpers/server.js';
import { dbOf, fundWallet, simulate, storedCounts, subscribe, walletBalance, type TestUser } from '../helpers/subscriptions.js';

/*
 * Plan changes and discounts (docs/pricing.md): a code redeemed on change-plan prices the
 * charge after its discount and becomes the subscription's; the credit is always the unused
 * share of the money actually paid (so of a discounted price); the change's invoice totals
 * exactly what the pricing (and its preview or signed quote) says is owed, on an exclusive-PPN
 * plan too; units of per-unit plans are kept (one on a plan that is not per unit).
 *
 * The period from 1 March to 1 April is 31 days; ten days in, 21 are unused.
 */

const DAY = 24 * 60 * 60 * 1000;
const START = new Date('2026-03-01T03:00:00.000Z');
const TEN_DAYS_IN = new Date(START.getTime() + 10 * DAY);
const APR = '2026-04-01T03:00:00.000Z';
const SHOP = 'https://shop.example.com';
const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000', HOSTED_RETURN_ORIGINS: SHOP };
const PLANS = [
  ...STANDARD_PLANS,
  { slug: 'basic-tax', name: 'Basic PPN', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'exclusive' as const, sort_order: 10 },
  { slug: 'pro-tax', name: 'Pro PPN', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'exclusive' as const, sort_order: 11 },
  { slug: 'seat-basic', name: 'Seat Basic', price: 20000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, per_unit: true, sort_order: 12 },
  { slug: 'seat-pro', name: 'Seat Pro', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, per_unit: true, sort_order: 13 },
];

describe.each(DATABASES)('change-plan with discounts (%s)', (kind) => {
  let server: TestServer;
  let user: TestUser;
  const clock = new ManualClock(START);

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: SELLER });
    await server.seedPlans(PLANS);
  });
  afterAll(() => server?.stop());
  beforeEach(async () => {
    clock.set(START);
    user = await server.createUser();
  });

  const em = () => dbOf(server);
  const change = (id: string, body: Record<string, unknown>) => server.api('POST', `/subscriptions/${id}/change-plan/`, { auth: user, body });
  const get = async (id: string) => (await server.api('GET', `/subscriptions/${id}/`, { auth: user })).body;
  const invoiceOf = async (id: string) => (await server.api('GET', `/invoices/${id}/`, { auth: user })).body;
  const lines = (invoice: { lines: { kind: string; quantity: number; amount: string; discount_amount: string }[] }) => invoice.lines.map((l) => [l.kind, l.quantity, l.amount, l.discount_amount]);
  /** The renewal invoice the billing run made, as the API shows it. */
  const renewalOf = async (subscriptionId: string) =>
    invoiceOf((await em().findOneOrFail(Invoice, { subscription: subscriptionId, billingReason: 'subscription_cycle' })).id);
  /** What previewPlanChange (the portal's preview, which signs its quote) says the change costs now. */
  const preview = async (id: string, plan: string, promotionCode?: string) => {
    const ctx = { em: em(), config: server.config, clock: server.running.billing.clock };
    return (await previewPlanChange(ctx, await ctx.em.findOneOrFail(User, user.id), id, plan, { promotionCode })).terms!;
  };

  /** Subscribes (with a code, when given) and pays the first invoice. */
  async function active(body: Record<string, unknown>) {
    const res = await subscribe(server, user, { payment_type: 'bank_transfer', ...body });
    expect(res.status, res.text).toBe(201);
    if (res.body.payment.status === 'pending') await simulate(server, res.body.payment.order_id, 'settle');
    const sub = await get(res.body.subscription.id);
    expect(sub.status).toBe('active');
    return { sub, firstInvoice: await invoiceOf(res.body.payment.invoice_id) };
  }

  const code = async (over: Parameters<typeof makeCoupon>[1] = {}, promo: Parameters<typeof makePromotionCode>[1] = {}) =>
    makePromotionCode(em(), { ...promo, coupon: await makeCoupon(em(), over) });

  describe('a code redeemed on change-plan', () => {
    it('prices the charge after its discount; invoice total = payment = preview net; the discount is the subscription\'s once paid', async () => {
      const { sub } = await active({ plan_id: 'basic-monthly' });
      const promo = await code({ percentOff: '20.00', duration: 'forever', plans: ['pro-monthly'] });
      clock.set(TEN_DAYS_IN);
      const quoted = await preview(sub.id, 'pro-monthly', promo.code.toUpperCase());
      const res = await change(sub.id, { plan_id: 'pro-monthly', promotion_code: ` ${promo.code.toUpperCase()} ` });
      expect(res.status, res.text).toBe(200);
      // Credit 50 000 × 21/31 = 33 871; Pro 150 000 × 21/31 = 101 613, 20 % off (20 322.6 → 20 323) = 81 290.
      expect(quoted).toMatchObject({ credit: '33871.00', chargeLine: '101613.00', chargeDiscount: '20323.00', charge: '81290.00', net: '47419.00' });
      const payment = res.body.payment;
      expect(payment).toMatchObject({ status: 'pending', gross_amount: quoted.net });
      const invoice = await invoiceOf(payment.invoice_id);
      expect(invoice).toMatchObject({ subtotal: '67742.00', discount_amount: '20323.00', total_amount: quoted.net });
      expect(lines(invoice)).toEqual([['proration', 1, '-33871.00', '0.00'], ['proration', 1, '101613.00', '20323.00']]);
      expect(res.body.subscription).toMatchObject({ plan: { slug: 'basic-monthly' }, pending_change: { amount_due: quoted.net, credit: '33871.00' } });
      // Until it is paid, the discount is the pending change's; the subscription keeps its own.
      expect(res.body.subscription.discount).toBeNull();
      expect(res.body.subscription.pending_change.discount).toMatchObject({ promotion_code: promo.code, percent_off: '20.00', starts_at: TEN_DAYS_IN.toISOString(), cycles_left: null });

      await simulate(server, payment.order_id, 'settle');
      const after = await get(sub.id);
      expect(after).toMatchObject({ plan: { slug: 'pro-monthly' }, pending_change: null, current_period_end: APR });
      expect(after.discount).toMatchObject({ promotion_code: promo.code, starts_at: TEN_DAYS_IN.toISOString(), cycles_left: null });
      const redeemed = await em().findOneOrFail(PromotionCode, promo.id, { populate: ['coupon'] });
      expect([redeemed.timesRedeemed, redeemed.coupon.timesRedeemed, await em().count(CouponRedemption, { promotionCode: promo.id })]).toEqual([1, 1, 1]);

      // The next renewal is on Pro, 20 % off.
      clock.set(new Date(APR));
      const { orm, config, gateway } = server.running.billing;
      await runBilling({ em: orm.em.fork(), config, gateway, clock }, {});
      const renewal = await renewalOf(sub.id);
      expect(renewal).toMatchObject({ subtotal: '150000.00', discount_amount: '30000.00', total_amount: '120000.00' });
    });

    it('100 % off on a change to another interval: the new period stands on a paid invoice of 0, access holds, the whole unused credit goes to the wallet', async () => {
      const { sub } = await active({ plan_id: 'basic-monthly' });
      const promo = await code({ percentOff: '100.00', duration: 'forever', plans: ['weekly'] });
      clock.set(TEN_DAYS_IN);
      const res = await change(sub.id, { plan_id: 'weekly', promotion_code: promo.code });
      expect(res.status, res.text).toBe(200);
      // Nothing is owed: a payment of nothing, settled at once, pays the new week's invoice.
      expect(res.body.payment).toMatchObject({ status: 'settled', gross_amount: '0.00' });
      const invoice = await invoiceOf(res.body.payment.invoice_id);
      expect(invoice).toMatchObject({ status: 'paid', subtotal: '20000.00', discount_amount: '20000.00', total_amount: '0.00' });
      expect(lines(invoice)).toEqual([['subscription', 1, '20000.00', '20000.00']]);
      const week = new Date(TEN_DAYS_IN.getTime() + 7 * DAY).toISOString();
      const stored = await em().findOneOrFail(Invoice, invoice.id);
      expect([stored.billingReason, stored.periodStart?.toISOString(), stored.periodEnd?.toISOString()]).toEqual(['subscription_update', TEN_DAYS_IN.toISOString(), week]);
      expect(await get(sub.id)).toMatchObject({ status: 'active', plan: { slug: 'weekly' }, current_period_end: week, pending_change: null });
      expect((await server.api('GET', '/subscriptions/active/', { auth: user })).status).toBe(200);
      // Basic's unused 50 000 × 21/31 = 33 871, all of it: the week costs nothing.
      expect(await walletBalance(server, user)).toBe('33871.00');
    });

    it('refused (not for the new plan): 422 with its reason, the plan, records and counts unchanged', async () => {
      const { sub } = await active({ plan_id: 'basic-monthly' });
      const promo = await code({ plans: ['weekly'] });
      clock.set(TEN_DAYS_IN);
      const before = await storedCounts(server, user);
      const res = await change(sub.id, { plan_id: 'pro-monthly', promotion_code: promo.code });
      expect(res.status, res.text).toBe(422);
      expect(res.body).toMatchObject({ code: 'promotion_code_invalid', reason: 'not_for_plan' });
      expect(await get(sub.id)).toMatchObject({ plan: { slug: 'basic-monthly' }, pending_change: null, discount: null });
      expect(await storedCounts(server, user)).toEqual(before);
      expect((await em().findOneOrFail(PromotionCode, promo.id)).timesRedeemed).toBe(0);
      // first_time_only: this customer has paid.
      const first = await code({}, { firstTimeOnly: true });
      expect((await change(sub.id, { plan_id: 'pro-monthly', promotion_code: first.code })).body).toMatchObject({ code: 'promotion_code_invalid', reason: 'first_time_only' });
      // Asking for the current plan withdraws a scheduled change: no change to redeem a code on (and the withdrawal is not made).
      expect((await change(sub.id, { plan_id: 'pro-monthly', immediate: false })).status).toBe(200);
      const same = await change(sub.id, { plan_id: 'basic-monthly', promotion_code: promo.code });
      expect(same.status, same.text).toBe(400);
      expect(same.body.code).toBe('validation_error');
      expect(await get(sub.id)).toMatchObject({ plan: { slug: 'basic-monthly' }, pending_plan: { slug: 'pro-monthly' } });
    });

    it('on a scheduled change (immediate: false): redeemed now, it first covers the renewal that switches the plan', async () => {
      const { sub } = await active({ plan_id: 'basic-monthly' });
      const promo = await code({ percentOff: '50.00', duration: 'once', plans: ['pro-monthly'] });
      clock.set(TEN_DAYS_IN);
      const before = await storedCounts(server, user);
      const res = await change(sub.id, { plan_id: 'pro-monthly', immediate: false, promotion_code: promo.code });
      expect(res.status, res.text).toBe(200);
      expect(res.body.payment).toBeNull();
      expect(res.body.subscription).toMatchObject({ plan: { slug: 'basic-monthly' }, pending_plan: { slug: 'pro-monthly' }, discount: { promotion_code: promo.code, starts_at: APR, cycles_left: 1 } });
      expect((await storedCounts(server, user)).invoices).toBe(before.invoices);
      expect((await em().findOneOrFail(PromotionCode, promo.id)).timesRedeemed).toBe(1);
      clock.set(new Date(APR));
      const { orm, config, gateway } = server.running.billing;
      await runBilling({ em: orm.em.fork(), config, gateway, clock }, {});
      const after = await get(sub.id);
      expect(after).toMatchObject({ plan: { slug: 'pro-monthly' }, pending_plan: null, discount: { cycles_left: 0 } });
      const renewal = await renewalOf(sub.id);
      expect(renewal).toMatchObject({ subtotal: '150000.00', discount_amount: '75000.00', total_amount: '75000.00' });
    });

    it('on a trial: the plan changes, nothing is billed, and the discount waits for the first paid period', async () => {
      const created = await subscribe(server, user, { plan_id: 'pro-trial', payment_type: 'qris' });
      expect(created.status, created.text).toBe(201);
      const promo = await code({ percentOff: '30.00', duration: 'repeating', durationInCycles: 2 });
      const res = await change(created.body.subscription.id, { plan_id: 'basic-monthly', promotion_code: promo.code });
      expect(res.status, res.text).toBe(200);
      expect(res.body.payment).toBeNull();
      expect(res.body.subscription).toMatchObject({ status: 'trialing', plan: { slug: 'basic-monthly' }, discount: { promotion_code: promo.code, cycles_left: 2, ends_at: null } });
      expect((await storedCounts(server, user)).invoices).toBe(0);
      expect((await em().findOneOrFail(PromotionCode, promo.id)).timesRedeemed).toBe(1);
    });
  });

  describe('proration when the current period was discounted: discounted prices on both sides', () => {
    it('upgrade: the credit is the unused share of the 37 500 paid; the new plan is charged after the same discount', async () => {
      const promo = await code({ percentOff: '25.00', duration: 'forever' });
      const { sub, firstInvoice } = await active({ plan_id: 'basic-monthly', promotion_code: promo.code });
      expect(firstInvoice.total_amount).toBe('37500.00');
      clock.set(TEN_DAYS_IN);
      const quoted = await preview(sub.id, 'pro-monthly');
      const res = await change(sub.id, { plan_id: 'pro-monthly' });
      expect(res.status, res.text).toBe(200);
      // Credit 37 500 × 21/31 = 25 403; Pro 101 613 less 25 % (25 403.25 → 25 403) = 76 210; owed 50 807.
      expect(quoted).toMatchObject({ credit: '25403.00', charge: '76210.00', net: '50807.00' });
      expect(res.body.payment.gross_amount).toBe('50807.00');
      const invoice = await invoiceOf(res.body.payment.invoice_id);
      expect(invoice).toMatchObject({ subtotal: '76210.00', discount_amount: '25403.00', total_amount: '50807.00' });
      expect(lines(invoice)).toEqual([['proration', 1, '-25403.00', '0.00'], ['proration', 1, '101613.00', '25403.00']]);
      // The discount, still the same one, did not count the running period again.
      expect(res.body.subscription.discount).toMatchObject({ promotion_code: promo.code, cycles_left: null, ends_at: null });
    });

    it('downgrade: the credit is the unused share of the 112 500 paid for Pro, less Basic at 25 % off, to the wallet', async () => {
      const promo = await code({ percentOff: '25.00', duration: 'forever' });
      const { sub } = await active({ plan_id: 'pro-monthly', promotion_code: promo.code });
      clock.set(TEN_DAYS_IN);
      const quoted = await preview(sub.id, 'basic-monthly');
      const res = await change(sub.id, { plan_id: 'basic-monthly' });
      expect(res.status, res.text).toBe(200);
      expect(res.body.payment).toBeNull();
      // 112 500 × 21/31 = 76 210 unused; Basic 33 871 less 25 % (8 467.75 → 8 468) = 25 403.
      expect(quoted).toMatchObject({ credit: '76210.00', charge: '25403.00', net: '-50807.00' });
      expect(res.body.subscription.plan.slug).toBe('basic-monthly');
      expect(await walletBalance(server, user)).toBe('50807.00');
    });

    it('a once discount spent on the first period still covers its rest at a change, but not a new period of another interval', async () => {
      const promo = await code({ percentOff: '50.00', duration: 'once' });
      const { sub } = await active({ plan_id: 'basic-monthly', promotion_code: promo.code });
      clock.set(TEN_DAYS_IN);
      expect(await preview(sub.id, 'pro-monthly')).toMatchObject({ credit: '16935.00', chargeDiscount: '50807.00', charge: '50806.00' });
      // Weekly: a new period starts now, which the spent discount does not cover.
      expect(await preview(sub.id, 'weekly')).toMatchObject({ chargeDiscount: '0.00', charge: '20000.00', resetsPeriod: true });
    });
  });

  describe('a change waiting for its payment: the discount is the subscription\'s only once the change applies', () => {
    const WEEK_START = START;
    const DAY_3 = new Date(START.getTime() + 3 * DAY);
    const MAR_8 = new Date(START.getTime() + 7 * DAY);
    const MAR_15 = new Date(START.getTime() + 14 * DAY);
    /** Runs the billing at `at` and pays the renewal it issues by transfer. */
    const renew = async (at: Date) => {
      clock.set(at);
      const { orm, config, gateway } = server.running.billing;
      await runBilling({ em: orm.em.fork(), config, gateway, clock }, {});
      const payment = await em().findOneOrFail(Payment, { invoice: { billingReason: 'subscription_cycle', periodStart: at }, user: user.id });
      await simulate(server, payment.orderId, 'settle');
    };
    const cycleInvoices = async (subscriptionId: string) =>
      (await em().find(Invoice, { subscription: subscriptionId, billingReason: 'subscription_cycle' }, { orderBy: { periodStart: 'asc' } })).map((i) => [i.subtotal, i.discountAmount]);

    it('a change across intervals left unpaid counts no period of the discount: the renewals after it get exactly the periods left', async () => {
      const promo = await code({ percentOff: '20.00', duration: 'repeating', durationInCycles: 2 });
      clock.set(WEEK_START);
      const { sub } = await active({ plan_id: 'weekly', promotion_code: promo.code });
      expect(sub.discount).toMatchObject({ cycles_left: 1, ends_at: null });

      // Three days in, a move to monthly starts a new period: 50 000 less 20 %, less the unused 16 000 × 4/7.
      clock.set(DAY_3);
      const res = await change(sub.id, { plan_id: 'basic-monthly' });
      expect(res.status, res.text).toBe(200);
      expect(res.body.payment.status).toBe('pending');
      expect(res.body.subscription.discount).toMatchObject({ cycles_left: 1, ends_at: null });
      expect(res.body.subscription.pending_change.discount).toMatchObject({ cycles_left: 0, ends_at: '2026-04-04T03:00:00.000Z' });

      // The transfer is never made: the change is dropped and the discount is as it was.
      await simulate(server, res.body.payment.order_id, 'expire');
      const dropped = await get(sub.id);
      expect(dropped).toMatchObject({ plan: { slug: 'weekly' }, pending_change: null });
      expect(dropped.discount).toMatchObject({ cycles_left: 1, ends_at: null });

      // Its second period is discounted, the third is not: two in all, as the coupon says.
      await renew(MAR_8);
      await renew(MAR_15);
      expect(await cycleInvoices(sub.id)).toEqual([['20000.00', '4000.00'], ['20000.00', '0.00']]);
      expect((await get(sub.id)).discount).toMatchObject({ cycles_left: 0, ends_at: MAR_15.toISOString() });
    });

    it('a discount spent on its period covers no renewal of the new period a paid change across intervals starts, and never counts below zero', async () => {
      const promo = await code({ percentOff: '50.00', duration: 'once' });
      const { sub } = await active({ plan_id: 'basic-monthly', promotion_code: promo.code });
      expect(sub.discount).toMatchObject({ cycles_left: 0, ends_at: APR });
      clock.set(TEN_DAYS_IN);
      const res = await change(sub.id, { plan_id: 'weekly' });
      expect(res.status, res.text).toBe(200);
      await simulate(server, res.body.payment.order_id, 'settle');
      const week = new Date(TEN_DAYS_IN.getTime() + 7 * DAY);
      // The spent discount ends where the period it covered was cut short.
      expect(await get(sub.id)).toMatchObject({ plan: { slug: 'weekly' }, current_period_end: week.toISOString(), discount: { cycles_left: 0, ends_at: TEN_DAYS_IN.toISOString() } });

      await renew(week);
      expect(await cycleInvoices(sub.id)).toEqual([['20000.00', '0.00']]);
      const after = await server.api('GET', `/subscriptions/${sub.id}/`, { auth: user });
      expect(after.status, after.text).toBe(200);
      expect(after.body.discount).toMatchObject({ cycles_left: 0 });
      // A change back inside the new week is not priced as if the spent discount still covered it.
      expect(await preview(sub.id, 'basic-monthly')).toMatchObject({ chargeDiscount: '0.00' });
    });

    it('a code typed with a change that is never paid is given back: counted once, uncounted when dropped, redeemable again', async () => {
      const { sub } = await active({ plan_id: 'basic-monthly' });
      const promo = await code({ percentOff: '20.00', duration: 'repeating', durationInCycles: 1, maxRedemptions: 1 });
      const counts = async () => {
        const p = await em().findOneOrFail(PromotionCode, promo.id, { populate: ['coupon'], refresh: true });
        return [p.timesRedeemed, p.coupon.timesRedeemed, await em().count(CouponRedemption, { promotionCode: promo.id })];
      };
      clock.set(TEN_DAYS_IN);
      const first = await change(sub.id, { plan_id: 'pro-monthly', promotion_code: promo.code });
      expect(first.status, first.text).toBe(200);
      expect(first.body.subscription.discount).toBeNull();
      expect(first.body.subscription.pending_change.discount).toMatchObject({ promotion_code: promo.code, cycles_left: 0 });
      expect(await counts()).toEqual([1, 1, 1]);

      await simulate(server, first.body.payment.order_id, 'expire');
      expect(await get(sub.id)).toMatchObject({ plan: { slug: 'basic-monthly' }, pending_change: null, discount: null });
      expect(await counts()).toEqual([0, 0, 0]);

      // Withdrawn (a change back to the current plan) gives it back too.
      const second = await change(sub.id, { plan_id: 'pro-monthly', promotion_code: promo.code });
      expect(second.status, second.text).toBe(200);
      expect((await change(sub.id, { plan_id: 'basic-monthly' })).status).toBe(200);
      expect(await counts()).toEqual([0, 0, 0]);

      // Its one redemption is still there for the change that is paid.
      const third = await change(sub.id, { plan_id: 'pro-monthly', promotion_code: promo.code });
      expect(third.status, third.text).toBe(200);
      await simulate(server, third.body.payment.order_id, 'settle');
      expect(await get(sub.id)).toMatchObject({ plan: { slug: 'pro-monthly' }, discount: { promotion_code: promo.code, cycles_left: 0, ends_at: APR } });
      expect(await counts()).toEqual([1, 1, 1]);
    });
  });

  describe('the same change with a limited code, forty times at once (a double click, two tabs)', () => {
    it('each answer is a 200 or a clear 4xx, and the code ends counted once, for the one change left pending', async () => {
      const { sub } = await active({ plan_id: 'basic-monthly' });
      const promo = await code({ percentOff: '20.00', duration: 'repeating', durationInCycles: 1, maxRedemptions: 1 });
      clock.set(TEN_DAYS_IN);
      const answers = await Promise.all(Array.from({ length: 40 }, () => change(sub.id, { plan_id: 'pro-monthly', promotion_code: promo.code })));
      for (const a of answers) expect([200, 409, 422], a.text).toContain(a.status);
      expect(answers.filter((a) => a.status === 200).length).toBeGreaterThan(0);
      // Each change replaced the one before it and gave its redemption back: one is left.
      const after = await get(sub.id);
      expect(after.pending_change.discount).toMatchObject({ promotion_code: promo.code });
      const p = await em().findOneOrFail(PromotionCode, promo.id, { populate: ['coupon'], refresh: true });
      const redemptions = await em().find(CouponRedemption, { promotionCode: promo.id });
      expect([p.timesRedeemed, p.coupon.timesRedeemed, redemptions.length]).toEqual([1, 1, 1]);
      await simulate(server, (await em().findOneOrFail(Payment, after.pending_change.payment_id)).orderId, 'settle');
      expect(await get(sub.id)).toMatchObject({ plan: { slug: 'pro-monthly' }, pending_change: null, discount: { promotion_code: promo.code } });
    });
  });

  describe('units', () => {
    it('per-unit to per-unit with an amount-off code: price × units for the rest of the period, after the discount; units kept', async () => {
      const { sub } = await active({ plan_id: 'seat-basic', quantity: 3 });
      const promo = await code({ percentOff: null, amountOff: '30000.00', currency: 'IDR', duration: 'once' });
      clock.set(TEN_DAYS_IN);
      const quoted = await preview(sub.id, 'seat-pro', promo.code);
      const res = await change(sub.id, { plan_id: 'seat-pro', promotion_code: promo.code });
      expect(res.status, res.text).toBe(200);
      // Credit 60 000 × 21/31 = 40 645; 3 × 50 000 × 21/31 = 101 613, less 30 000 = 71 613; owed 30 968.
      expect(quoted).toMatchObject({ credit: '40645.00', chargeLine: '101613.00', charge: '71613.00', net: '30968.00' });
      const invoice = await invoiceOf(res.body.payment.invoice_id);
      expect(invoice).toMatchObject({ subtotal: '60968.00', discount_amount: '30000.00', total_amount: '30968.00' });
      await simulate(server, res.body.payment.order_id, 'settle');
      // `once`, redeemed at the change, was used on the change's period: it ends with it.
      expect(await get(sub.id)).toMatchObject({ plan: { slug: 'seat-pro' }, quantity: 3, discount: { cycles_left: 0, ends_at: APR } });
    });

    it('per-unit to a plan not per unit: charged for one, and one unit once the change applies', async () => {
      const { sub } = await active({ plan_id: 'seat-basic', quantity: 3 });
      clock.set(TEN_DAYS_IN);
      const res = await change(sub.id, { plan_id: 'pro-monthly' });
      expect(res.status, res.text).toBe(200);
      expect(res.body.payment.gross_amount).toBe('60968.00');
      expect(res.body.subscription).toMatchObject({ plan: { slug: 'seat-basic' }, quantity: 3 });
      await simulate(server, res.body.payment.order_id, 'settle');
      expect(await get(sub.id)).toMatchObject({ plan: { slug: 'pro-monthly' }, quantity: 1 });
    });
  });

  it('an exclusive-PPN plan: the charge is discounted before PPN, and the invoice asks exactly the previewed net', async () => {
    await fundWallet(server, user, '500000.00');
    const { sub, firstInvoice } = await active({ plan_id: 'basic-tax', payment_type: 'wallet' });
    expect(firstInvoice.total_amount).toBe('55500.00');
    const promo = await code({ percentOff: '10.00', duration: 'forever' });
    clock.set(TEN_DAYS_IN);
    const quoted = await preview(sub.id, 'pro-tax', promo.code);
    const before = await walletBalance(server, user);
    const res = await change(sub.id, { plan_id: 'pro-tax', promotion_code: promo.code });
    expect(res.status, res.text).toBe(200);
    // Credit 55 500 × 21/31 = 37 597. Pro 101 613 less 10 % (10 161) = 91 452 + PPN 10 060 = 101 512; owed 63 915.
    expect(quoted).toMatchObject({ credit: '37597.00', chargeLine: '101613.00', chargeDiscount: '10161.00', charge: '101512.00', net: '63915.00' });
    expect(res.body.payment).toMatchObject({ status: 'settled', gross_amount: quoted.net, payment_type: 'wallet' });
    const invoice = await invoiceOf(res.body.payment.invoice_id);
    expect(invoice).toMatchObject({ status: 'paid', discount_amount: '10161.00', total_amount: quoted.net, tax_behavior: 'exclusive' });
    // DPP is the price after the discount and the credit; the PPN is on it.
    expect(invoice.tax_base).toBe(subtract(invoice.subtotal, invoice.discount_amount));
    expect(invoice.tax_amount).toBe(ppnOf(invoice.tax_base, 'IDR').taxAmount);
    expect(add(invoice.tax_base, invoice.tax_amount)).toBe(invoice.total_amount);
    expect(lines(invoice)[1]).toEqual(['proration', 1, '101613.00', '10161.00']);
    expect(await walletBalance(server, user)).toBe(subtract(before, quoted.net));
    expect(await get(sub.id)).toMatchObject({ plan: { slug: 'pro-tax' }, discount: { percent_off: '10.00' } });
  });

  describe("the portal's preview and its signed quote", () => {
    /** A browser on one portal link, as test/http/hosted-portal.test.ts drives it. */
    async function openPortal(owner: TestUser) {
      const made = await server.api('POST', '/portal-sessions/', { auth: owner, body: { return_url: `${SHOP}/account` } });
      expect(made.status, made.text).toBe(201);
      const path = new URL(made.body.url).pathname;
      let cookie: string | null = null;
      let csrf: string | null = null;
      const keep = (res: HttpResult) => {
        const set = res.headers.get('set-cookie');
        if (set) cookie = set.split(';')[0]!;
        const token = /name="csrf_token" value="([^"]+)"/.exec(res.text)?.[1];
        if (token) csrf = token;
        return res;
      };
      const headers = (): Record<string, string> => (cookie ? { cookie } : {});
      const portal = {
        get: async (params = '') => keep(await server.request('GET', `${path}${params ? `?${params}` : ''}`, { headers: headers() })),
        post: async (action: string, fields: Record<string, string>) =>
          keep(await server.request('POST', `${path}${action}`, {
            headers: { ...headers(), 'content-type': 'application/x-www-form-urlencoded' },
            rawBody: new URLSearchParams({ csrf_token: csrf ?? '', ...fields }).toString(),
          })),
      };
      await portal.get();
      expect((await portal.post('', {})).status).toBe(303);
      return portal;
    }

    it('a discounted subscription: the preview shows the discounted net, and confirming its quote charges exactly that', async () => {
      const promo = await code({ percentOff: '25.00', duration: 'forever' });
      const { sub } = await active({ plan_id: 'basic-monthly', promotion_code: promo.code });
      clock.set(TEN_DAYS_IN);
      const portal = await openPortal(user);
      const page = await portal.get('change=pro-monthly');
      const net = `${/id="preview-net">([^<]+)</.exec(page.text)![1]!.replace(/[^\d]/g, '')}.00`;
      expect(net).toBe('50807.00');
      clock.advance(60_000);
      const quote = new RegExp('name="quote" value="([^"]*)"').exec(page.text)![1]!;
      const confirmed = await portal.post('change-plan', { plan_id: 'pro-monthly', quote });
      expect(confirmed.status).toBe(303);
      const payment = await em().findOneOrFail(Payment, { subscription: sub.id, invoice: { billingReason: 'subscription_update' } }, { populate: ['invoice'] });
      expect([payment.grossAmount, payment.invoice!.totalAmount, payment.invoice!.discountAmount]).toEqual([net, net, '25403.00']);
    });
  });
});
