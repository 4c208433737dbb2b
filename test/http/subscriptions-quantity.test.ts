import type { EntityManager } from '@mikro-orm/knex';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CreditNote } from '../../src/db/entities/credit-note.js';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { runBilling } from '../../src/services/billing/run-billing.js';
import { makePromotionCode, makeCoupon } from '../helpers/coupons.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, type TestServer } from '../helpers/server.js';
import { dbOf, fundWallet, notificationTypes, serverOnClock, simulate, subscribe, walletBalance, type TestUser } from '../helpers/subscriptions.js';

const DAY = 24 * 60 * 60 * 1000;
// April has 30 days: fifteen days in, exactly half of the period is left.
const START = new Date('2026-04-01T00:00:00Z');
const PERIOD_END = '2026-05-01T00:00:00.000Z';

/*
 * Seats at Rp 40.000 a month each. Five seats cost 200.000. Halfway through the month a seat
 * costs 20.000 for the rest of it: three more are 60.000; two given up now give back
 * 2/5 of the 100.000 still unused of the 200.000 paid, 40.000.
 */
const SEATS = { slug: 'seats', name: 'Team seats', description: 'Per seat', price: 40000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, per_unit: true };
const SEATS_TRIAL = { ...SEATS, slug: 'seats-trial', name: 'Team seats with trial', trial_period_days: 14 };
const ENTERPRISE = { slug: 'enterprise', name: 'Enterprise', description: 'Flat price', price: 1000000, currency: 'IDR', interval: 1, interval_unit: 'month' as const };

describe.each(DATABASES)('POST /subscriptions/{id}/change-quantity/ on %s', (kind) => {
  const suite = serverOnClock(kind, START);
  const { clock } = suite;
  let server: TestServer;
  let user: TestUser;
  beforeAll(async () => {
    await suite.server.seedPlans([...STANDARD_PLANS, SEATS, SEATS_TRIAL, ENTERPRISE]);
  });
  beforeEach(() => {
    ({ server, user } = suite);
  });

  const change = (id: string, body: unknown, headers?: Record<string, string>) => server.api('POST', `/subscriptions/${id}/change-quantity/`, { auth: user, body, headers });
  const get = async (id: string) => (await server.api('GET', `/subscriptions/${id}/`, { auth: user })).body;
  const em = (): EntityManager => dbOf(server);

  /** Five seats paid from the wallet (200.000), `extra` left in it. */
  async function fiveSeats(extra = '0.00', body: Record<string, unknown> = {}): Promise<any> {
    await fundWallet(server, user, (200000 + Number(extra)).toFixed(2));
    const res = await subscribe(server, user, { plan_id: 'seats', payment_type: 'wallet', quantity: 5, ...body });
    expect(res.status, res.text).toBe(201);
    expect(res.body.subscription).toMatchObject({ status: 'active', quantity: 5, pending_quantity: null });
    return res.body.subscription;
  }

  it('three more seats at mid-period from the wallet: 3 × 20.000 = 60.000 charged at once, quantity 8', async () => {
    const sub = await fiveSeats('100000');
    clock.advance(15 * DAY);
    const res = await change(sub.id, { quantity: 8 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.payment).toMatchObject({ status: 'settled', gross_amount: '60000.00', payment_type: 'wallet' });
    expect(res.body.credit_note_id).toBeNull();
    expect(res.body.subscription).toMatchObject({ quantity: 8, pending_quantity: null, pending_change: null, current_period_end: PERIOD_END });
    expect(await walletBalance(server, user)).toBe('40000.00');

    const invoice = await em().findOneOrFail(Invoice, res.body.payment.invoice_id, { populate: ['lines'] });
    expect(invoice).toMatchObject({ billingReason: 'subscription_update', status: 'paid', totalAmount: '60000.00', discountAmount: '0.00' });
    // One line for the three seats' remaining time, prorated once (3 × 40.000 × 1/2); the units in its words.
    expect(invoice.lines.getItems().map((l) => ({ quantity: l.quantity, unit: l.unitAmount, amount: l.amount, units: l.subject?.['units'] }))).toEqual([{ quantity: 1, unit: '60000.00', amount: '60000.00', units: 3 }]);
    expect(await notificationTypes(server, user)).toContain('subscription_plan_changed');

    // The renewal bills the eight seats: 320.000.
    await fundWallet(server, user, '280000.00');
    clock.set(new Date(PERIOD_END));
    await runBilling({ em: server.running.billing.orm.em.fork() as EntityManager, config: server.running.billing.config, gateway: server.running.billing.gateway, clock });
    const renewal = await em().findOneOrFail(Invoice, { subscription: sub.id, billingReason: 'subscription_cycle' });
    expect(renewal.totalAmount).toBe('320000.00');
    expect(await walletBalance(server, user)).toBe('0.00');
  });

  it('more seats by bank transfer wait for their payment; settling it adds them', async () => {
    await fundWallet(server, user, '200000.00');
    const created = await subscribe(server, user, { plan_id: 'seats', payment_type: 'bank_transfer', quantity: 5 });
    await simulate(server, created.body.payment.order_id, 'settle');
    clock.advance(15 * DAY);
    const res = await change(created.body.subscription.id, { quantity: 8 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.payment).toMatchObject({ status: 'pending', gross_amount: '60000.00', payment_type: 'bank_transfer' });
    expect(res.body.subscription).toMatchObject({ quantity: 5, pending_change: { payment_id: res.body.payment.id } });

    await simulate(server, res.body.payment.order_id, 'settle');
    expect(await get(created.body.subscription.id)).toMatchObject({ quantity: 8, pending_change: null, current_period_end: PERIOD_END });
    // Nothing went to the wallet: the running period's money carried over.
    expect(await walletBalance(server, user)).toBe('200000.00');
  });

  it('asking for the current quantity withdraws more seats waiting for their payment; a waiting plan change blocks a change now (409)', async () => {
    const created = await subscribe(server, user, { plan_id: 'seats', payment_type: 'bank_transfer', quantity: 5 });
    await simulate(server, created.body.payment.order_id, 'settle');
    const id = created.body.subscription.id;
    clock.advance(15 * DAY);
    const more = await change(id, { quantity: 8 });
    expect(more.body.subscription.pending_change).not.toBeNull();
    const back = await change(id, { quantity: 5 });
    expect(back.status, back.text).toBe(200);
    expect(back.body).toMatchObject({ payment: null, subscription: { quantity: 5, pending_change: null } });
    const withdrawn = await em().findOneOrFail(Payment, more.body.payment.id, { populate: ['invoice'] });
    expect(withdrawn.status).not.toBe('pending');
    expect(withdrawn.invoice!.status).toBe('void');

    clock.advance(60_000);
    const plan = await server.api('POST', `/subscriptions/${id}/change-plan/`, { auth: user, body: { plan_id: 'enterprise' } });
    expect(plan.status, plan.text).toBe(200);
    expect(plan.body.subscription.pending_change).not.toBeNull();
    for (const body of [{ quantity: 8 }, { quantity: 3, immediate: true }]) {
      const refused = await change(id, body);
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('invalid_state');
    }
    // At the period's end it is another matter: nothing is priced now.
    expect((await change(id, { quantity: 3 })).body.subscription.pending_quantity).toBe(3);
  });

  it('two seats fewer at the period end: pending_quantity 3, the renewal bills 3 × 40.000 = 120.000', async () => {
    const sub = await fiveSeats();
    clock.advance(15 * DAY);
    const res = await change(sub.id, { quantity: 3 });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ payment: null, credit_note_id: null, subscription: { quantity: 5, pending_quantity: 3 } });

    await fundWallet(server, user, '120000.00');
    clock.set(new Date(PERIOD_END));
    await runBilling({ em: server.running.billing.orm.em.fork() as EntityManager, config: server.running.billing.config, gateway: server.running.billing.gateway, clock });
    const renewal = await em().findOneOrFail(Invoice, { subscription: sub.id, billingReason: 'subscription_cycle' }, { populate: ['lines'] });
    expect(renewal.totalAmount).toBe('120000.00');
    expect(renewal.lines.getItems()[0]).toMatchObject({ quantity: 3, unitAmount: '40000.00' });
    expect(await get(sub.id)).toMatchObject({ status: 'active', quantity: 3, pending_quantity: null });
    expect(await walletBalance(server, user)).toBe('0.00');
  });

  it('the current quantity withdraws a pending decrease; a later increase replaces one', async () => {
    const sub = await fiveSeats('100000');
    clock.advance(15 * DAY);
    expect((await change(sub.id, { quantity: 3 })).body.subscription.pending_quantity).toBe(3);
    const back = await change(sub.id, { quantity: 5 });
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({ payment: null, subscription: { quantity: 5, pending_quantity: null } });

    expect((await change(sub.id, { quantity: 2 })).body.subscription.pending_quantity).toBe(2);
    const more = await change(sub.id, { quantity: 6 });
    expect(more.body).toMatchObject({ payment: { gross_amount: '20000.00' }, subscription: { quantity: 6, pending_quantity: null } });
  });

  it('two seats fewer now: 40.000 back to the wallet with a credit note', async () => {
    const sub = await fiveSeats();
    clock.advance(15 * DAY);
    const res = await change(sub.id, { quantity: 3, immediate: true });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ payment: null, subscription: { quantity: 3, pending_quantity: null } });
    expect(res.body.credit_note_id).toEqual(expect.any(String));
    const note = await em().findOneOrFail(CreditNote, res.body.credit_note_id);
    expect(note).toMatchObject({ reason: 'proration_credit', amount: '40000.00' });
    expect(await walletBalance(server, user)).toBe('40000.00');

    // What is left of the period (60.000 for 3 seats) still pays for it: three seats more cost 60.000 again.
    await fundWallet(server, user, '20000.00');
    const again = await change(sub.id, { quantity: 6 });
    expect(again.body.payment.gross_amount).toBe('60000.00');
    expect(await walletBalance(server, user)).toBe('0.00');
  });

  it('a discount that covers the plan covers the seat charge: 25% off 60.000 is 45.000', async () => {
    const promo = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { percentOff: '25.00', duration: 'forever' }) });
    await fundWallet(server, user, '150000.00');
    const created = await subscribe(server, user, { plan_id: 'seats', payment_type: 'wallet', quantity: 5, promotion_code: promo.code });
    expect(created.status, created.text).toBe(201);
    expect(created.body.payment.gross_amount).toBe('150000.00');
    clock.advance(15 * DAY);
    await fundWallet(server, user, '45000.00');
    const res = await change(created.body.subscription.id, { quantity: 8 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.payment.gross_amount).toBe('45000.00');
    const invoice = await em().findOneOrFail(Invoice, res.body.payment.invoice_id, { populate: ['lines'] });
    expect(invoice).toMatchObject({ subtotal: '60000.00', discountAmount: '15000.00', totalAmount: '45000.00' });
    expect(invoice.lines.getItems()[0].discountAmount).toBe('15000.00');
    expect(res.body.subscription.quantity).toBe(8);
  });

  it('on a trial the quantity changes at once, for nothing', async () => {
    const created = await subscribe(server, user, { plan_id: 'seats-trial', payment_type: 'bank_transfer', quantity: 2 });
    expect(created.status, created.text).toBe(201);
    expect(created.body.subscription.status).toBe('trialing');
    const up = await change(created.body.subscription.id, { quantity: 7 });
    expect(up.body).toMatchObject({ payment: null, subscription: { quantity: 7, pending_quantity: null } });
    const down = await change(created.body.subscription.id, { quantity: 4 });
    expect(down.body).toMatchObject({ payment: null, credit_note_id: null, subscription: { quantity: 4 } });
    expect(await em().count(Invoice, { user: user.id })).toBe(0);
  });

  it('a plan not priced per unit answers 409; a quantity out of 1..10,000 answers 400', async () => {
    await fundWallet(server, user, '50000.00');
    const basic = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'wallet' });
    const refused = await change(basic.body.subscription.id, { quantity: 2 });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('invalid_state');

    const other = await server.createUser();
    await fundWallet(server, other, '200000.00');
    const seats = await server.api('POST', '/subscriptions/', { auth: other, body: { plan_id: 'seats', payment_type: 'wallet', quantity: 5 } });
    for (const quantity of [0, 10001, 1.5, '3', null]) {
      const res = await server.api('POST', `/subscriptions/${seats.body.subscription.id}/change-quantity/`, { auth: other, body: { quantity } });
      expect(res.status, JSON.stringify(quantity)).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    expect((await server.api('POST', `/subscriptions/${seats.body.subscription.id}/change-quantity/`, { auth: other, body: {} })).status).toBe(400);
    // Someone else's subscription is not found.
    expect((await change(seats.body.subscription.id, { quantity: 6 })).status).toBe(404);
  });

  it('a canceled subscription answers 409', async () => {
    const sub = await fiveSeats();
    expect((await server.api('POST', `/subscriptions/${sub.id}/cancel/`, { auth: user, body: { immediate: true } })).status).toBe(200);
    const res = await change(sub.id, { quantity: 6 });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('invalid_state');
  });

  it('ten concurrent requests for eight seats charge once; an Idempotency-Key replays its answer', async () => {
    const sub = await fiveSeats('600000');
    clock.advance(15 * DAY);
    const answers = await Promise.all(Array.from({ length: 10 }, () => change(sub.id, { quantity: 8 })));
    expect(answers.map((a) => a.status), JSON.stringify(answers.map((a) => a.body))).toEqual(Array(10).fill(200));
    expect(answers.filter((a) => a.body.payment !== null)).toHaveLength(1);
    expect(await get(sub.id)).toMatchObject({ quantity: 8 });
    expect(await em().count(Payment, { subscription: sub.id, status: 'settled' })).toBe(2);
    expect(await walletBalance(server, user)).toBe('540000.00');

    // (An invoice per subscription, reason and period start: a change an instant later.)
    clock.advance(60_000);
    const first = await change(sub.id, { quantity: 10 }, { 'Idempotency-Key': 'seats-10' });
    const replay = await change(sub.id, { quantity: 10 }, { 'Idempotency-Key': 'seats-10' });
    expect(first.status, first.text).toBe(200);
    expect(replay.body.payment.id).toBe(first.body.payment.id);
    // A minute later a seat costs 40.000 × (15 days − 1 minute) / 30 days = 19.999,07 → 19.999; two are 39.998.
    expect(first.body.payment.gross_amount).toBe('39998.00');
    expect(await walletBalance(server, user)).toBe('500002.00');

    const stored = await em().findOneOrFail(Subscription, sub.id);
    expect(stored.quantity).toBe(10);
  });
});
