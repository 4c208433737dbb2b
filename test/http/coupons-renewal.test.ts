import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Wallet, WalletTransaction } from '../../src/db/entities/wallet.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { startBilling, type BillingHarness } from '../helpers/billing.js';
import { DATABASES } from '../helpers/database.js';
import { fundWallet, subscribe, walletBalance, type TestUser } from '../helpers/subscriptions.js';

/*
 * Discounts across renewals (docs/pricing.md): customers subscribe with a code over HTTP and the
 * billing run renews them. `once`, `repeating` and `forever` cover exactly their invoices and
 * count down to an `ends_at`; a trial is not a billed period; an invoice the discount pays in
 * full is paid at once without the gateway or the wallet, at the first invoice and at each
 * renewal; a discount for some plans stops covering once the subscription moves to another.
 */

const START = new Date('2027-03-01T03:00:00.000Z');
const APR = new Date('2027-04-01T03:00:00.000Z');
const MAY = new Date('2027-05-01T03:00:00.000Z');
const JUN = new Date('2027-06-01T03:00:00.000Z');

describe.each(DATABASES)('discounts across renewals (%s)', (kind) => {
  let h: BillingHarness;
  beforeEach(async () => {
    h = await startBilling(kind, START);
  });
  afterEach(async () => {
    await h.stop();
  });

  const em = () => h.server.running.billing.orm.em.fork();
  const get = async (user: TestUser, id: string) => (await h.server.api('GET', `/subscriptions/${id}/`, { auth: user })).body;
  /** Each invoice of the subscription, oldest first: [subtotal, discount, total, status]. */
  const billed = async (id: string) => (await h.invoices(id)).map((i) => [i.subtotal, i.discountAmount, i.totalAmount, i.status]);
  const renewAt = async (at: Date) => {
    h.clock.set(at);
    const report = await h.run();
    expect(report.errors).toEqual([]);
    return report;
  };
  async function customer(funds: string | null) {
    const user = await h.server.createUser();
    if (funds) await fundWallet(h.server, user, funds);
    return user;
  }
  async function subscribeWith(user: TestUser, body: Record<string, unknown>) {
    const res = await subscribe(h.server, user, body);
    expect(res.status, res.text).toBe(201);
    return res.body;
  }

  it('forever covers every invoice; the batch still renews a plain wallet subscription beside it', async () => {
    const promo = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { percentOff: '25.00', duration: 'forever' }) });
    const user = await customer('500000');
    const plain = await customer('500000');
    const { subscription } = await subscribeWith(user, { plan_id: 'basic-monthly', payment_type: 'wallet', promotion_code: promo.code });
    const other = (await subscribeWith(plain, { plan_id: 'basic-monthly', payment_type: 'wallet' })).subscription;
    for (const at of [APR, MAY, JUN]) expect(await renewAt(at)).toMatchObject({ renewed: 2, charged: 2 });
    const discounted = ['50000.00', '12500.00', '37500.00', 'paid'];
    expect(await billed(subscription.id)).toEqual([discounted, discounted, discounted, discounted]);
    expect((await get(user, subscription.id)).discount).toMatchObject({ duration: 'forever', cycles_left: null, ends_at: null });
    expect(await walletBalance(h.server, user)).toBe('350000.00');
    expect((await billed(other.id)).map((r) => r[2])).toEqual(['50000.00', '50000.00', '50000.00', '50000.00']);
    expect(await walletBalance(h.server, plain)).toBe('300000.00');
  });

  it('once covers the first invoice only and ends with its period', async () => {
    const promo = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { percentOff: '50.00', duration: 'once' }) });
    const user = await customer('500000');
    const { subscription } = await subscribeWith(user, { plan_id: 'basic-monthly', payment_type: 'wallet', promotion_code: promo.code });
    expect(subscription.discount).toMatchObject({ duration: 'once', cycles_left: 0, ends_at: APR.toISOString() });
    await renewAt(APR);
    await renewAt(MAY);
    expect(await billed(subscription.id)).toEqual([
      ['50000.00', '25000.00', '25000.00', 'paid'],
      ['50000.00', '0.00', '50000.00', 'paid'],
      ['50000.00', '0.00', '50000.00', 'paid'],
    ]);
    expect((await get(user, subscription.id)).discount).toMatchObject({ cycles_left: 0, ends_at: APR.toISOString() });
  });

  it('repeating for 3 covers the first invoice and two renewals, counting down to an ends_at', async () => {
    const promo = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { percentOff: null, amountOff: '10000.00', currency: 'IDR', duration: 'repeating', durationInCycles: 3 }) });
    const user = await customer('500000');
    const { subscription } = await subscribeWith(user, { plan_id: 'basic-monthly', payment_type: 'wallet', promotion_code: promo.code });
    const left: unknown[] = [(await get(user, subscription.id)).discount];
    for (const at of [APR, MAY, JUN]) {
      await renewAt(at);
      left.push((await get(user, subscription.id)).discount);
    }
    expect(left.map((d) => [(d as { cycles_left: number }).cycles_left, (d as { ends_at: string | null }).ends_at])).toEqual([
      [2, null],
      [1, null],
      [0, JUN.toISOString()],
      [0, JUN.toISOString()],
    ]);
    const on = ['50000.00', '10000.00', '40000.00', 'paid'];
    expect(await billed(subscription.id)).toEqual([on, on, on, ['50000.00', '0.00', '50000.00', 'paid']]);
  });

  it('a trial is not a billed period: the first paid period is the first the discount covers', async () => {
    const promo = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { percentOff: '20.00', duration: 'repeating', durationInCycles: 2 }) });
    const user = await customer('1000000');
    const { subscription } = await subscribeWith(user, { plan_id: 'pro-trial', payment_type: 'wallet', promotion_code: promo.code });
    expect(subscription).toMatchObject({ status: 'trialing', discount: { cycles_left: 2, ends_at: null } });
    expect(await billed(subscription.id)).toEqual([]);
    const trialEnd = new Date(subscription.trial_end);
    await renewAt(trialEnd);
    const first = await get(user, subscription.id);
    expect(first).toMatchObject({ status: 'active', discount: { cycles_left: 1, ends_at: null } });
    await renewAt(new Date(first.current_period_end));
    const second = await get(user, subscription.id);
    expect(second.discount).toMatchObject({ cycles_left: 0, ends_at: second.current_period_end });
    await renewAt(new Date(second.current_period_end));
    expect(await billed(subscription.id)).toEqual([
      ['150000.00', '30000.00', '120000.00', 'paid'],
      ['150000.00', '30000.00', '120000.00', 'paid'],
      ['150000.00', '0.00', '150000.00', 'paid'],
    ]);
  });

  describe('an invoice the discount pays in full', () => {
    it('100 % off by bank transfer: active at once, no gateway order, the wallet untouched; each renewal is paid at 0', async () => {
      const promo = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { percentOff: '100.00', duration: 'forever' }) });
      const user = await customer(null);
      const { subscription, payment } = await subscribeWith(user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer', promotion_code: promo.code });
      expect(subscription).toMatchObject({ status: 'active', payment_type: 'bank_transfer', current_period_end: APR.toISOString() });
      // Paid as a wallet payment of nothing: never sent to the gateway, no ledger entry.
      expect(payment).toMatchObject({ status: 'settled', gross_amount: '0.00', payment_type: 'wallet' });
      expect(h.server.running.billing.simulator!.transaction(payment.order_id)).toBeUndefined();
      const invoice = (await h.server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: user })).body;
      expect(invoice).toMatchObject({ status: 'paid', subtotal: '150000.00', discount_amount: '150000.00', total_amount: '0.00' });

      expect(await renewAt(APR)).toMatchObject({ renewed: 1, charged: 1, gateway_charges: 0 });
      expect(await renewAt(MAY)).toMatchObject({ renewed: 1, charged: 1, gateway_charges: 0 });
      expect(await get(user, subscription.id)).toMatchObject({ status: 'active', current_period_end: JUN.toISOString(), cycles_completed: 3 });
      expect(await billed(subscription.id)).toEqual(Array(3).fill(['150000.00', '150000.00', '0.00', 'paid']));
      const payments = await em().find(Payment, { subscription: subscription.id });
      expect(payments.map((p) => [p.status, p.grossAmount, p.paymentType])).toEqual(Array(3).fill(['settled', '0.00', 'wallet']));
      expect(await em().count(Wallet, { user: user.id })).toBe(0);
      expect(await em().count(WalletTransaction, { wallet: { user: user.id } })).toBe(0);
    });

    it('by card, 100 % off: no charge at the gateway, active at once, the renewal at 0 charges nothing, and the first full-price renewal charges the card kept', async () => {
      const promo = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { percentOff: '100.00', duration: 'repeating', durationInCycles: 2 }) });
      const user = await customer(null);
      const { subscription, payment } = await subscribeWith(user, { plan_id: 'basic-monthly', payment_type: 'credit_card', token: 'sim-card-accept-4', promotion_code: promo.code });
      expect(subscription.status).toBe('active');
      expect(h.server.running.billing.simulator!.transaction(payment.order_id)).toBeUndefined();
      expect(await renewAt(APR)).toMatchObject({ renewed: 1, charged: 1, gateway_charges: 0 });
      // The discount has run out: the next renewal is owed in full, on the card given at subscribe
      // (kept through a pre-authorisation, as a trial's card is).
      const report = await renewAt(MAY);
      expect(report).toMatchObject({ renewed: 1, gateway_charges: 1 });
      expect((await billed(subscription.id)).map((r) => [r[2], r[3]])).toEqual([['0.00', 'paid'], ['0.00', 'paid'], ['50000.00', 'paid']]);
    });

    it('an amount off of more than the price: the first invoice is 0 and paid; the first renewal after it is owed in full at the gateway', async () => {
      const promo = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { percentOff: null, amountOff: '60000.00', currency: 'IDR', duration: 'once' }) });
      const user = await customer(null);
      const { subscription, payment } = await subscribeWith(user, { plan_id: 'basic-monthly', payment_type: 'qris', promotion_code: promo.code });
      expect(subscription.status).toBe('active');
      expect(payment).toMatchObject({ gross_amount: '0.00', status: 'settled' });
      const invoice = (await h.server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: user })).body;
      expect(invoice).toMatchObject({ subtotal: '50000.00', discount_amount: '50000.00', total_amount: '0.00' });
      expect(invoice.lines[0].discount_amount).toBe('50000.00');
      expect(await renewAt(APR)).toMatchObject({ renewed: 1, gateway_charges: 1 });
      const renewal = (await em().find(Invoice, { subscription: subscription.id }, { orderBy: { createdAt: 'asc' } }))[1]!;
      expect([renewal.totalAmount, renewal.discountAmount, renewal.status]).toEqual(['50000.00', '0.00', 'open']);
      const pending = await em().findOneOrFail(Payment, { invoice: renewal.id });
      expect([pending.paymentType, pending.grossAmount, pending.status]).toEqual(['qris', '50000.00', 'pending']);
    });
  });

  it('a discount for some plans stops covering once the subscription changes to another plan', async () => {
    const promo = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { percentOff: '25.00', duration: 'forever', plans: ['basic-monthly'] }) });
    const user = await customer('1000000');
    const { subscription } = await subscribeWith(user, { plan_id: 'basic-monthly', payment_type: 'wallet', promotion_code: promo.code });
    h.clock.set(new Date(START.getTime() + 10 * 24 * 3600 * 1000));
    const changed = await h.server.api('POST', `/subscriptions/${subscription.id}/change-plan/`, { auth: user, body: { plan_id: 'pro-monthly' } });
    expect(changed.status, changed.text).toBe(200);
    // 21 of 31 days left: the credit is that share of the 37 500 paid; Pro's share is not discounted.
    const change = (await h.server.api('GET', `/invoices/${changed.body.payment.invoice_id}/`, { auth: user })).body;
    expect(change).toMatchObject({ subtotal: '76210.00', discount_amount: '0.00', total_amount: '76210.00', status: 'paid' });
    expect(change.lines.map((l: { amount: string; discount_amount: string }) => [l.amount, l.discount_amount])).toEqual([['-25403.00', '0.00'], ['101613.00', '0.00']]);
    await renewAt(APR);
    expect((await billed(subscription.id))[2]).toEqual(['150000.00', '0.00', '150000.00', 'paid']);
    // The discount stays the subscription's, and covers again on a plan it is for.
    expect((await get(user, subscription.id)).discount).toMatchObject({ coupon: expect.any(String), cycles_left: null });
  });
});
