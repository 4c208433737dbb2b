import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Coupon } from '../../src/db/entities/coupon.js';
import { ManualClock } from '../../src/domain/clock.js';
import { add, ZERO } from '../../src/domain/money.js';
import { unusedShare } from '../../src/domain/unused-share.js';
import type { PlanSeed } from '../../src/services/plans/seed-plans.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf, fundWallet, simulate, subscribe, walletBalance, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 41 (docs/pricing.md, "Credit notes"): credit notes credit only money paid. A refund of a
 * discounted invoice gives back at most what was paid for it (never its list price); the unused
 * share of a discounted period, refunded or credited on a downgrade, is a share of the
 * discounted money; the notes of an invoice never add up to more than was paid on it, and their
 * DPP and PPN are those of the discounted invoice.
 */

const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000' };
const PLANS: PlanSeed[] = [
  { slug: 'pro-tax', name: 'Pro', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month', tax_behavior: 'exclusive' },
  { slug: 'pro', name: 'Pro untaxed', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month' },
  { slug: 'basic', name: 'Basic', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month' },
];
/** The first period runs 28 days, 1 February to 1 March; its middle is 15 February. */
const START = new Date('2026-02-01T03:00:00.000Z');
const PERIOD_END = new Date('2026-03-01T03:00:00.000Z');
const MIDDLE = new Date('2026-02-15T03:00:00.000Z');

interface Note {
  amount: string;
  reason: string;
  tax_base: string;
  tax_amount: string;
  tax_rounding: string;
  tax_action: string;
}

describe.each(DATABASES)('credit notes of discounted invoices on %s', (kind) => {
  let server: TestServer;
  let user: TestUser;
  let quarterOff: Coupon;
  const clock = new ManualClock(START);
  const em = () => dbOf(server) as EntityManager;

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: SELLER });
    await server.seedPlans(PLANS);
    quarterOff = await makeCoupon(em(), { percentOff: '25.00', duration: 'forever', plans: ['pro-tax', 'pro'] });
  });
  afterAll(() => server?.stop());
  beforeEach(async () => {
    clock.set(START);
    user = await server.createUser();
  });

  /** Subscribes with a fresh promotion code of the 25 % coupon; QRIS payments are settled at the gateway. */
  async function discounted(plan: string, pay: 'qris' | 'wallet') {
    const promo = await makePromotionCode(em(), { coupon: quarterOff });
    const created = await subscribe(server, user, { plan_id: plan, payment_type: pay, promotion_code: promo.code.toUpperCase() });
    expect(created.status, created.text).toBe(201);
    if (pay === 'qris') expect((await simulate(server, created.body.payment.order_id, 'settle')).status).toBeLessThan(300);
    const invoice = (await server.api('GET', `/invoices/${created.body.payment.invoice_id}/`, { auth: user })).body;
    expect(invoice.status).toBe('paid');
    return { subscription: created.body.subscription, payment: created.body.payment, invoice };
  }

  const notesOf = async (invoiceId: string): Promise<Note[]> => {
    const res = await server.api('GET', `/credit-notes/?invoice_id=${invoiceId}`, { auth: user });
    expect(res.status, res.text).toBe(200);
    return res.body.results;
  };
  const refund = (paymentId: string, body: Record<string, unknown>) => server.api('POST', `/payments/${paymentId}/refund/`, { auth: user, body });

  it('a refund in full gives back what was paid (124,875), not the list price (166,500); its credit note takes off the discounted DPP and PPN, and nothing more can be refunded', async () => {
    const { payment, invoice } = await discounted('pro-tax', 'qris');
    expect(invoice).toMatchObject({ subtotal: '150000.00', discount_amount: '37500.00', tax_base: '112500.00', tax_amount: '12375.00', total_amount: '124875.00' });
    expect(payment.gross_amount).toBe('124875.00');

    const tooMuch = await refund(payment.id, { amount: 166500, reason: 'the list price' });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(await notesOf(invoice.id)).toEqual([]);

    const all = await refund(payment.id, { reason: 'changed my mind' });
    expect(all.status, all.text).toBe(200);
    expect(all.body.amount ?? all.body.refund?.amount).toBe('124875.00');
    const notes = await notesOf(invoice.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({ amount: '124875.00', reason: 'refund', tax_base: '112500.00', tax_amount: '12375.00', tax_rounding: '0.00', tax_action: 'buyer_cancellation_note' });

    const again = await refund(payment.id, { amount: 1, reason: 'one more rupiah' });
    expect(again.status).toBe(409);
    expect(add(ZERO, ...(await notesOf(invoice.id)).map((n) => n.amount))).toBe('124875.00');
  });

  it('halfway through the period the customer gets back half of what was paid for it (the discounted money), and the note says so', async () => {
    const { payment, invoice } = await discounted('pro-tax', 'qris');
    clock.set(MIDDLE);
    const expected = unusedShare('124875.00', START, PERIOD_END, MIDDLE, 'IDR');
    // Half of 124,875, rounded half up; half of the list price with PPN would be 83,250.
    expect(expected).toBe('62438.00');
    const tooMuch = await refund(payment.id, { amount: 83250, reason: 'half of the list price' });
    expect(tooMuch.status).toBe(400);
    const half = await refund(payment.id, { reason: 'leaving' });
    expect(half.status, half.text).toBe(200);
    const notes = await notesOf(invoice.id);
    expect(notes.map((n) => n.amount)).toEqual([expected]);
    const [note] = notes;
    // tax_base + tax_amount + tax_rounding = amount, the DPP taken off within the invoice's 112,500.
    expect(add(note.tax_base, note.tax_amount, note.tax_rounding)).toBe(expected);
    expect(Number(note.tax_base)).toBeLessThan(112500);
    expect(note.tax_action).toBe('amendment');
  });

  it('a downgrade halfway credits the wallet with the unused share of the discounted price, less the new plan\'s share, with a credit note of it', async () => {
    await fundWallet(server, user, '1000000');
    const { subscription, invoice } = await discounted('pro', 'wallet');
    expect(invoice).toMatchObject({ subtotal: '150000.00', discount_amount: '37500.00', total_amount: '112500.00' });
    expect(await walletBalance(server, user)).toBe('887500.00');

    clock.set(MIDDLE);
    const changed = await server.api('POST', `/subscriptions/${subscription.id}/change-plan/`, { auth: user, body: { plan_id: 'basic', immediate: true } });
    expect(changed.status, changed.text).toBe(200);
    // Unused: half of the 112,500 paid = 56,250 (half of the list price would be 75,000); Basic's
    // half period costs 25,000 (the coupon is not for Basic); 31,250 goes back to the wallet.
    expect(await walletBalance(server, user)).toBe('918750.00');
    const notes = await notesOf(invoice.id);
    expect(notes.map((n) => n.amount)).toEqual(['31250.00']);
    expect(notes[0].tax_action).toBe('none');
  });
});
