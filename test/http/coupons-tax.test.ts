import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Coupon } from '../../src/db/entities/coupon.js';
import { ManualClock } from '../../src/domain/clock.js';
import { add, subtract } from '../../src/domain/money.js';
import { ppnOf } from '../../src/domain/tax.js';
import type { PlanSeed } from '../../src/services/plans/seed-plans.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf, fundWallet, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 41 (docs/pricing.md, "PPN on a discounted price"): the DPP is the price after the
 * discount, and PPN is computed on it: DPP Nilai Lain = 11/12 of the DPP, PPN = 12 % of that,
 * to the rupiah. An exclusive plan adds the PPN to the discounted price; an inclusive plan's
 * discounted price holds it. Every figure is the rupiah the API answers, checked against the
 * worked examples of docs/pricing.md; each invoice line carries its own discount_amount, the
 * invoice their sum, and `amount` stays the line's price before its discount.
 */

const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000' };
const PLANS: PlanSeed[] = [
  { slug: 'pro-tax', name: 'Pro', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month', tax_behavior: 'exclusive' },
  { slug: 'pro-incl', name: 'Pro inclusive', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month', tax_behavior: 'inclusive' },
  { slug: 'team-incl', name: 'Team', price: 300000, currency: 'IDR', interval: 1, interval_unit: 'month', tax_behavior: 'inclusive' },
  { slug: 'seats-tax', name: 'Seats', price: 40000, currency: 'IDR', interval: 1, interval_unit: 'month', tax_behavior: 'exclusive', per_unit: true },
];
/** 1 February to 1 March: a 28-day period whose middle is 15 February. */
const START = new Date('2026-02-01T03:00:00.000Z');
const MIDDLE = new Date('2026-02-15T03:00:00.000Z');

const TAX_FIELDS = ['subtotal', 'discount_amount', 'tax_behavior', 'tax_base', 'other_tax_base', 'tax_amount', 'tax_rounding', 'total_amount'] as const;
type TaxFields = Record<(typeof TAX_FIELDS)[number], string>;
const fieldsOf = (invoice: Record<string, string>) => Object.fromEntries(TAX_FIELDS.map((f) => [f, invoice[f]])) as TaxFields;
const taxed = (behavior: string, subtotal: string, discount: string, base: string, other: string, ppn: string, rounding: string, total: string): TaxFields => ({
  subtotal, discount_amount: discount, tax_behavior: behavior, tax_base: base, other_tax_base: other, tax_amount: ppn, tax_rounding: rounding, total_amount: total,
});

describe.each(DATABASES)('PPN on discounted prices on %s', (kind) => {
  let server: TestServer;
  let user: TestUser;
  const clock = new ManualClock(START);
  const em = () => dbOf(server) as EntityManager;

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: SELLER });
    await server.seedPlans(PLANS);
  });
  afterAll(() => server?.stop());
  beforeEach(async () => {
    clock.set(START);
    user = await server.createUser();
    await fundWallet(server, user, '2000000');
  });

  /** Subscribes from the wallet with a fresh promotion code of `coupon`; returns the first invoice as the API shows it. */
  async function discounted(plan: string, coupon: Coupon, extra: Record<string, unknown> = {}) {
    const promo = await makePromotionCode(em(), { coupon });
    const created = await subscribe(server, user, { plan_id: plan, payment_type: 'wallet', promotion_code: promo.code, ...extra });
    expect(created.status, created.text).toBe(201);
    const invoice = (await server.api('GET', `/invoices/${created.body.payment.invoice_id}/`, { auth: user })).body;
    expect(invoice.status).toBe('paid');
    return { subscription: created.body.subscription, invoice };
  }

  /** What holds on every discounted invoice: the lines' discounts add up to the invoice's, DPP is what is left, PPN is on it. */
  function consistent(invoice: Record<string, any>) {
    expect(add(...invoice.lines.map((l: { discount_amount: string }) => l.discount_amount))).toBe(invoice.discount_amount);
    expect(add(...invoice.lines.map((l: { amount: string }) => l.amount))).toBe(invoice.subtotal);
    const { otherTaxBase, taxAmount } = ppnOf(invoice.tax_base, 'IDR');
    expect([invoice.other_tax_base, invoice.tax_amount]).toEqual([otherTaxBase, taxAmount]);
    const afterDiscount = subtract(invoice.subtotal, invoice.discount_amount);
    if (invoice.tax_behavior === 'exclusive') {
      expect(invoice.tax_base).toBe(afterDiscount);
      expect(invoice.total_amount).toBe(add(invoice.tax_base, invoice.tax_amount));
    } else {
      expect(invoice.total_amount).toBe(afterDiscount);
      expect(add(invoice.tax_base, invoice.tax_amount, invoice.tax_rounding)).toBe(afterDiscount);
    }
  }

  it('exclusive, 25 % off Rp 150,000: discount 37,500, DPP 112,500, DPP Nilai Lain 103,125, PPN 12,375, total 124,875; the line keeps its price and carries the discount', async () => {
    const coupon = await makeCoupon(em(), { percentOff: '25.00' });
    const { invoice, subscription } = await discounted('pro-tax', coupon);
    expect(fieldsOf(invoice)).toEqual(taxed('exclusive', '150000.00', '37500.00', '112500.00', '103125.00', '12375.00', '0.00', '124875.00'));
    expect(invoice.lines).toHaveLength(1);
    expect(invoice.lines[0]).toMatchObject({ quantity: 1, unit_amount: '150000.00', amount: '150000.00', discount_amount: '37500.00' });
    consistent(invoice);
    expect(subscription.discount).toMatchObject({ percent_off: '25.00', amount_off: null, duration: 'forever' });
  });

  it('inclusive, 25 % off Rp 150,000: the customer pays 112,500, which holds DPP 101,351 and PPN 11,149', async () => {
    const coupon = await makeCoupon(em(), { percentOff: '25.00' });
    const { invoice } = await discounted('pro-incl', coupon);
    expect(fieldsOf(invoice)).toEqual(taxed('inclusive', '150000.00', '37500.00', '101351.00', '92905.08', '11149.00', '0.00', '112500.00'));
    expect(invoice.lines[0]).toMatchObject({ amount: '150000.00', discount_amount: '37500.00' });
    consistent(invoice);
  });

  it('exclusive, Rp 50,000 off Rp 150,000: DPP 100,000, DPP Nilai Lain 91,666.67, PPN 11,000, total 111,000', async () => {
    const coupon = await makeCoupon(em(), { amountOff: '50000.00', currency: 'IDR' });
    const { invoice } = await discounted('pro-tax', coupon);
    expect(fieldsOf(invoice)).toEqual(taxed('exclusive', '150000.00', '50000.00', '100000.00', '91666.67', '11000.00', '0.00', '111000.00'));
    consistent(invoice);
  });

  it('inclusive, Rp 50,000 off Rp 300,000: the customer pays 250,000, which holds DPP 225,225 and PPN 24,775', async () => {
    const coupon = await makeCoupon(em(), { amountOff: '50000.00', currency: 'IDR' });
    const { invoice } = await discounted('team-incl', coupon);
    expect(fieldsOf(invoice)).toEqual(taxed('inclusive', '300000.00', '50000.00', '225225.00', '206456.25', '24775.00', '0.00', '250000.00'));
    consistent(invoice);
  });

  it('5 seats × Rp 40,000 with 10 % off, exclusive: the line is 5 × 40,000 = 200,000 less 20,000; DPP 180,000, PPN 19,800, total 199,800', async () => {
    const coupon = await makeCoupon(em(), { percentOff: '10.00' });
    const { invoice, subscription } = await discounted('seats-tax', coupon, { quantity: 5 });
    expect(fieldsOf(invoice)).toEqual(taxed('exclusive', '200000.00', '20000.00', '180000.00', '165000.00', '19800.00', '0.00', '199800.00'));
    expect(invoice.lines[0]).toMatchObject({ quantity: 5, unit_amount: '40000.00', amount: '200000.00', discount_amount: '20000.00' });
    expect(subscription.quantity).toBe(5);
    consistent(invoice);
  });

  it('a mid-period increase from 5 to 8 seats charges the discounted difference for the half period left, with PPN on it', async () => {
    const coupon = await makeCoupon(em(), { percentOff: '10.00' });
    const { subscription } = await discounted('seats-tax', coupon, { quantity: 5 });
    clock.set(MIDDLE);
    const changed = await server.api('POST', `/subscriptions/${subscription.id}/change-quantity/`, { auth: user, body: { quantity: 8 } });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.subscription.quantity).toBe(8);
    const invoice = (await server.api('GET', `/invoices/${changed.body.payment.invoice_id}/`, { auth: user })).body;
    // 3 more seats for the half period left: 3 × 20,000 = 60,000, less 10 % = 54,000; PPN 5,940.
    expect(fieldsOf(invoice)).toEqual(taxed('exclusive', '60000.00', '6000.00', '54000.00', '49500.00', '5940.00', '0.00', '59940.00'));
    // One line for the three seats, prorated once (3 × 40,000 × 1/2), not three rounded halves.
    expect(invoice.lines).toEqual([expect.objectContaining({ kind: 'proration', quantity: 1, unit_amount: '60000.00', amount: '60000.00', discount_amount: '6000.00' })]);
    expect(changed.body.payment).toMatchObject({ status: 'settled', gross_amount: '59940.00' });
    consistent(invoice);
  });

  it('a discount larger than the price takes it to zero, never below: no PPN on nothing', async () => {
    const coupon = await makeCoupon(em(), { amountOff: '200000.00', currency: 'IDR' });
    const { invoice } = await discounted('pro-tax', coupon);
    expect(invoice).toMatchObject({ subtotal: '150000.00', discount_amount: '150000.00', tax_base: '0.00', tax_amount: '0.00', total_amount: '0.00' });
    expect(invoice.lines[0]).toMatchObject({ amount: '150000.00', discount_amount: '150000.00' });
  });
});
