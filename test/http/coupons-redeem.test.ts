import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CouponRedemption, PromotionCode } from '../../src/db/entities/coupon.js';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { User } from '../../src/db/entities/user.js';
import { ManualClock } from '../../src/domain/clock.js';
import { invoiceStates } from '../../src/domain/states/invoice-states.js';
import { createInvoice } from '../../src/services/invoices/create-invoice.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf, fundWallet, storedCounts, subscribe, walletBalance, type TestUser } from '../helpers/subscriptions.js';

/*
 * Redeeming a promotion code on POST /subscriptions/ (docs/pricing.md): the first invoice is
 * priced after the discount to the rupiah; every refusal is a 422 promotion_code_invalid naming
 * its reason and writes nothing (no subscription, invoice or payment; no count); limits hold
 * under concurrency, on the code and on the coupon, and a transaction that fails after the
 * redemption gives its count back.
 */

const DAY = 24 * 60 * 60 * 1000;
/** Forty customers (each a password hash) and their forty subscribes on a shared two-core machine. */
const RACE_TIMEOUT = 180_000;
const START = new Date('2026-05-04T03:00:00.000Z');
const PLANS = [
  ...STANDARD_PLANS,
  { slug: 'seats', name: 'Seats', description: 'Per seat', price: 20000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, per_unit: true, sort_order: 8 },
];

describe.each(DATABASES)('promotion codes on POST /subscriptions/ (%s)', (kind) => {
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

  const em = () => dbOf(server);
  const invoiceOf = async (id: string, as: TestUser = user) => (await server.api('GET', `/invoices/${id}/`, { auth: as })).body;
  const counters = async (promo: PromotionCode) => {
    const db = em();
    const code = await db.findOneOrFail(PromotionCode, promo.id, { populate: ['coupon'] });
    return { code: code.timesRedeemed, coupon: code.coupon.timesRedeemed, rows: await db.count(CouponRedemption, { coupon: code.coupon.id }) };
  };

  describe('a code that can be redeemed', () => {
    it('percent off, typed in another case with spaces: the subscription keeps the discount and the first invoice is 25 % off to the rupiah', async () => {
      const coupon = await makeCoupon(em(), { code: `LAUNCH${Date.now()}`, percentOff: '25.00', duration: 'repeating', durationInCycles: 3 });
      const promo = await makePromotionCode(em(), { coupon, code: `Launch25x${kind}` });
      const res = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer', promotion_code: `  launch25X${kind.toUpperCase()}  ` });
      expect(res.status, res.text).toBe(201);
      const { subscription, payment } = res.body;
      expect(subscription.discount).toEqual({
        coupon: coupon.code,
        promotion_code: promo.code,
        percent_off: '25.00',
        amount_off: null,
        currency: null,
        duration: 'repeating',
        starts_at: START.toISOString(),
        ends_at: null,
        // The first invoice is one of the three periods it covers.
        cycles_left: 2,
      });
      expect(payment).toMatchObject({ status: 'pending', gross_amount: '112500.00', payment_type: 'bank_transfer' });
      const invoice = await invoiceOf(payment.invoice_id);
      expect(invoice).toMatchObject({ subtotal: '150000.00', discount_amount: '37500.00', total_amount: '112500.00' });
      expect(invoice.lines).toEqual([expect.objectContaining({ kind: 'subscription', unit_amount: '150000.00', amount: '150000.00', discount_amount: '37500.00' })]);
      expect(await counters(promo)).toEqual({ code: 1, coupon: 1, rows: 1 });
      const redemption = await em().findOneOrFail(CouponRedemption, { promotionCode: promo.id }, { populate: ['subscription', 'user'] });
      expect([redemption.user.id, redemption.subscription?.id]).toEqual([user.id, subscription.id]);
    });

    it('amount off on units of a per-unit plan: Rp 20.000 × 3 less Rp 15.000, paid from the wallet', async () => {
      const coupon = await makeCoupon(em(), { percentOff: null, amountOff: '15000.00', currency: 'IDR', duration: 'once' });
      const promo = await makePromotionCode(em(), { coupon });
      await fundWallet(server, user, '45000.00');
      const res = await subscribe(server, user, { plan_id: 'seats', payment_type: 'wallet', quantity: 3, promotion_code: promo.code });
      expect(res.status, res.text).toBe(201);
      expect(res.body.subscription).toMatchObject({ status: 'active', quantity: 3 });
      const periodEnd = res.body.subscription.current_period_end;
      // `once`: the first invoice was its one period; it lasts until that period ends.
      expect(res.body.subscription.discount).toMatchObject({ amount_off: '15000.00', currency: 'IDR', duration: 'once', cycles_left: 0, ends_at: periodEnd });
      const invoice = await invoiceOf(res.body.payment.invoice_id);
      expect(invoice).toMatchObject({ status: 'paid', subtotal: '60000.00', discount_amount: '15000.00', total_amount: '45000.00' });
      expect(invoice.lines).toEqual([expect.objectContaining({ quantity: 3, unit_amount: '20000.00', amount: '60000.00', discount_amount: '15000.00' })]);
      expect(await walletBalance(server, user)).toBe('0.00');
    });

    it('exactly at its minimum amount with enough units (5 seats = Rp 100.000)', async () => {
      const promo = await makePromotionCode(em(), { minimumAmount: '100000.00' });
      const res = await subscribe(server, user, { plan_id: 'seats', payment_type: 'qris', quantity: 5, promotion_code: promo.code });
      expect(res.status, res.text).toBe(201);
      expect(res.body.payment.gross_amount).toBe('75000.00');
    });
  });

  describe('every refusal is 422 promotion_code_invalid with its reason, and nothing is written', () => {
    /** Subscribes with `code` and checks the refusal: the reason, no rows, no counts. */
    async function refused(code: string, reason: string, body: Record<string, unknown> = {}, promo: PromotionCode | null = null) {
      const before = await storedCounts(server, user);
      const counted = promo ? await counters(promo) : null;
      const res = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer', promotion_code: code, ...body });
      expect(res.status, res.text).toBe(422);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ code: 'promotion_code_invalid', reason });
      expect(await storedCounts(server, user)).toEqual(before);
      if (promo) expect(await counters(promo)).toEqual(counted);
      return res;
    }

    it('unknown: no such code', async () => {
      await refused('NO-SUCH-CODE', 'unknown');
    });

    it('unknown: a code kept for another customer (its existence is not confirmed)', async () => {
      const other = await server.createUser();
      const promo = await makePromotionCode(em(), { customer: em().getReference(User, other.id) });
      await refused(promo.code, 'unknown', {}, promo);
      // Its own customer redeems it.
      const own = await subscribe(server, other, { plan_id: 'pro-monthly', payment_type: 'bank_transfer', promotion_code: promo.code });
      expect(own.status, own.text).toBe(201);
    });

    it('inactive: the code deactivated, or its coupon archived', async () => {
      const off = await makePromotionCode(em(), { active: false });
      await refused(off.code, 'inactive', {}, off);
      const archived = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { active: false, archivedAt: START }) });
      await refused(archived.code, 'inactive', {}, archived);
    });

    it("expired: the code's expires_at or the coupon's redeem_by has passed (by the service's clock)", async () => {
      const byCode = await makePromotionCode(em(), { expiresAt: new Date(START.getTime() + DAY) });
      const byCoupon = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { redeemBy: new Date(START.getTime() + DAY) }) });
      clock.advance(DAY);
      await refused(byCode.code, 'expired', {}, byCode);
      await refused(byCoupon.code, 'expired', {}, byCoupon);
    });

    it('exhausted: the code or its coupon used as often as allowed', async () => {
      const code = await makePromotionCode(em(), { maxRedemptions: 2, timesRedeemed: 2 });
      await refused(code.code, 'exhausted', {}, code);
      const coupon = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { maxRedemptions: 1, timesRedeemed: 1 }) });
      await refused(coupon.code, 'exhausted', {}, coupon);
    });

    it('first_time_only: the customer already paid an invoice of more than nothing', async () => {
      const promo = await makePromotionCode(em(), { firstTimeOnly: true });
      await paidInvoice(user, '10000.00');
      await refused(promo.code, 'first_time_only', {}, promo);
      // A customer who never paid anything redeems it.
      const fresh = await server.createUser();
      const ok = await subscribe(server, fresh, { plan_id: 'pro-monthly', payment_type: 'bank_transfer', promotion_code: promo.code });
      expect(ok.status, ok.text).toBe(201);
    });

    it('below_minimum: price × quantity under the minimum (4 seats = Rp 80.000 < Rp 100.000)', async () => {
      const promo = await makePromotionCode(em(), { minimumAmount: '100000.00' });
      await refused(promo.code, 'below_minimum', { plan_id: 'seats', quantity: 4 }, promo);
    });

    it('not_for_plan: the coupon is for other plans, or its amount is in another currency', async () => {
      const promo = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { plans: ['pro-monthly'] }) });
      await refused(promo.code, 'not_for_plan', { plan_id: 'basic-monthly' }, promo);
      const idr = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { percentOff: null, amountOff: '1000.00', currency: 'IDR' }) });
      await refused(idr.code, 'not_for_plan', { plan_id: 'usd-monthly', payment_type: 'wallet' }, idr);
    });

    it('a transaction that fails after the redemption (a wallet short of the price) gives the count back', async () => {
      const promo = await makePromotionCode(em(), { maxRedemptions: 1 });
      await fundWallet(server, user, '1000.00');
      const before = await storedCounts(server, user);
      const res = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'wallet', promotion_code: promo.code });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('insufficient_funds');
      expect(await storedCounts(server, user)).toEqual(before);
      expect(await counters(promo)).toEqual({ code: 0, coupon: 0, rows: 0 });
      expect(await walletBalance(server, user)).toBe('1000.00');
      // Its one redemption is still there for the next customer.
      const next = await server.createUser();
      expect((await subscribe(server, next, { plan_id: 'pro-monthly', payment_type: 'bank_transfer', promotion_code: promo.code })).status).toBe(201);
      expect(await counters(promo)).toEqual({ code: 1, coupon: 1, rows: 1 });
    });
  });

  describe('limits under concurrency', () => {
    async function race(promo: PromotionCode) {
      const customers = await Promise.all(Array.from({ length: 40 }, () => server.createUser()));
      const answers = await Promise.all(customers.map((c) => subscribe(server, c, { plan_id: 'basic-monthly', payment_type: 'bank_transfer', promotion_code: promo.code })));
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 201)).toHaveLength(5);
      expect(statuses.filter((s) => s === 422)).toHaveLength(35);
      for (const a of answers.filter((x) => x.status === 422)) expect(a.body).toMatchObject({ code: 'promotion_code_invalid', reason: 'exhausted' });
      expect(await counters(promo)).toEqual({ code: 5, coupon: 5, rows: 5 });
      const ids = customers.map((c) => c.id);
      const db = em();
      expect(await db.count(Subscription, { user: { $in: ids } })).toBe(5);
      expect(await db.count(Invoice, { user: { $in: ids } })).toBe(5);
      const discounted = await db.find(Subscription, { user: { $in: ids } });
      expect(discounted.every((s) => s.discount?.promotion_code === promo.code)).toBe(true);
    }

    it('40 customers at once on a code of 5 redemptions: exactly 5 subscribe, 5 counted on the code and the coupon', async () => {
      await race(await makePromotionCode(em(), { maxRedemptions: 5 }));
    }, RACE_TIMEOUT);

    it('the same with the limit on the coupon only', async () => {
      await race(await makePromotionCode(em(), { coupon: await makeCoupon(em(), { maxRedemptions: 5 }) }));
    }, RACE_TIMEOUT);
  });

  /** A paid invoice of `amount` for the user, made in-process (what first_time_only looks at). */
  async function paidInvoice(owner: TestUser, amount: string): Promise<void> {
    const billing = server.running.billing;
    await billing.orm.em.fork().transactional(async (tx) => {
      const at = billing.clock.now();
      const invoice = await createInvoice(
        { em: tx as EntityManager, config: billing.config, clock: billing.clock },
        { user: await tx.findOneOrFail(User, owner.id), subscription: null, currency: 'IDR', billingReason: 'subscription_create', taxBehavior: 'none', issuedAt: at, dueAt: at, lines: [{ description: 'Setup', kind: 'subscription', unitAmount: amount }] },
      );
      invoiceStates.apply(invoice, 'pay', at);
    });
  }
});
