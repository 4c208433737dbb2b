import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import type { PlanSeed } from '../../src/services/plans/seed-plans.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { runCli } from '../helpers/cli.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf, fundWallet, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * MRR is what the business really earns (docs/reports.md, "MRR"): a subscription whose period's
 * money was charged back or reversed counts nothing for that period, a running discount counts
 * after an upgrade (the discounted price), and a change of seats counts from the moment it takes
 * effect, up or down. Six customers subscribe through the real API on 20 October to plans billed
 * every two months (so October's and November's ends fall in one period, before any renewal);
 * on 25 November one is charged back, one's bank transfer is reversed, one upgrades with 25 %
 * off, one adds seats and one gives seats up now. The figures are recomputed below by hand,
 * and the API, the CLI, the movements and the churn report must all say them. (A Permata VA
 * settlement can flip to deny minutes later: that is the reversal.)
 */

const PLANS: PlanSeed[] = [
  { slug: 'duo-basic', name: 'Duo Basic', price: 200000, currency: 'IDR', interval: 2, interval_unit: 'month', sort_order: 1 },
  { slug: 'duo-pro', name: 'Duo Pro', price: 400000, currency: 'IDR', interval: 2, interval_unit: 'month', sort_order: 2 },
  { slug: 'duo-seats', name: 'Duo Seats', price: 80000, currency: 'IDR', interval: 2, interval_unit: 'month', sort_order: 3, per_unit: true },
];

/** A plan billed every two months earns half its price a month. */
const monthly = (price: number) => price / 2;
const quarterOff = (amount: number) => amount - amount / 4;
const idr = (n: number) => `${n.toFixed(0)}.00`;

// Recomputed by hand. October's end: A and R count nothing (that period's money was taken back).
const OCTOBER = {
  d: quarterOff(monthly(200000)), // 75.000: Duo Basic at 25 % off
  s: 3 * monthly(80000), // 120.000: three seats
  t: 4 * monthly(80000), // 160.000: four seats
  c: monthly(200000), // 100.000
};
// November's end: D on Duo Pro still at 25 % off, S with five seats, T with two, C as before.
const NOVEMBER = {
  d: quarterOff(monthly(400000)), // 150.000
  s: 5 * monthly(80000), // 200.000
  t: 2 * monthly(80000), // 80.000
  c: monthly(200000), // 100.000
};
const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);

describe.each(DATABASES)('MRR as the business earns it, on %s', (kind) => {
  let server: TestServer;
  let staff: TestUser;
  const clock = new ManualClock(new Date('2025-10-20T03:00:00Z'));
  const em = () => dbOf(server) as EntityManager;
  const api = (method: string, path: string, user: TestUser, body?: unknown) => server.api(method, path, { auth: user, body });

  async function customer(body: Record<string, unknown>): Promise<{ user: TestUser; id: string; orderId: string }> {
    const user = await server.createUser();
    await fundWallet(server, user, '2000000.00');
    const res = await subscribe(server, user, body);
    expect(res.status, res.text).toBe(201);
    if (body.payment_type !== 'wallet') await simulate(server, res.body.payment.order_id, 'settle');
    expect((await api('GET', `/subscriptions/${res.body.subscription.id}/`, user)).body.status).toBe('active');
    return { user, id: res.body.subscription.id, orderId: res.body.payment.order_id };
  }

  beforeAll(async () => {
    server = await startTestServer(kind, { clock });
    await server.seedPlans(PLANS);
    staff = await server.createUser({ isStaff: true });
    const quarter = await makeCoupon(em(), { percentOff: '25.00', duration: 'forever' });
    const promo = await makePromotionCode(em(), { coupon: quarter });

    const a = await customer({ plan_id: 'duo-basic', payment_type: 'credit_card', token: 'sim-card-accept-1' });
    const r = await customer({ plan_id: 'duo-basic', payment_type: 'bank_transfer', metadata: { bank: 'permata' } });
    const d = await customer({ plan_id: 'duo-basic', payment_type: 'wallet', promotion_code: promo.code });
    const s = await customer({ plan_id: 'duo-seats', payment_type: 'wallet', quantity: 3 });
    const t = await customer({ plan_id: 'duo-seats', payment_type: 'wallet', quantity: 4 });
    await customer({ plan_id: 'duo-basic', payment_type: 'wallet' });

    clock.set(new Date('2025-11-25T03:00:00Z'));
    const chargeback = await server.request('POST', `/_simulator/v2/${a.orderId}/chargeback`, { body: {} });
    expect(chargeback.status, chargeback.text).toBe(200);
    await simulate(server, r.orderId, 'deny');
    const payments = async (who: { user: TestUser }) => (await api('GET', '/payments/', who.user)).body.results.map((p: { status: string }) => p.status);
    expect(await payments(a)).toEqual(['charged_back']);
    expect(await payments(r)).toEqual(['reversed']);

    const upgraded = await api('POST', `/subscriptions/${d.id}/change-plan/`, d.user, { plan_id: 'duo-pro', immediate: true });
    expect(upgraded.status, upgraded.text).toBe(200);
    expect(upgraded.body.subscription.plan.slug).toBe('duo-pro');
    const more = await api('POST', `/subscriptions/${s.id}/change-quantity/`, s.user, { quantity: 5 });
    expect(more.status, more.text).toBe(200);
    expect(more.body.subscription.quantity).toBe(5);
    const fewer = await api('POST', `/subscriptions/${t.id}/change-quantity/`, t.user, { quantity: 2, immediate: true });
    expect(fewer.status, fewer.text).toBe(200);
    expect(fewer.body.subscription.quantity).toBe(2);

    // Read once November has ended, before any renewal (the periods end on 20 December).
    clock.set(new Date('2025-12-05T03:00:00Z'));
  }, 180_000);
  afterAll(() => server?.stop());

  const report = async (name: string) => {
    const res = await api('GET', `/admin/reports/${name}/?from=2025-10&to=2025-11`, staff);
    expect(res.status, res.text).toBe(200);
    return res.body.rows;
  };
  const byPlan = (row: { by_plan: { plan_slug: string; mrr: string; subscriptions: number }[] }) => Object.fromEntries(row.by_plan.map((p) => [p.plan_slug, [p.mrr, p.subscriptions]]));

  it('October: the charged-back and the reversed subscriptions count nothing, not even as new', async () => {
    const [october] = await report('mrr');
    expect(october).toMatchObject({ month: '2025-10', mrr: idr(sum(OCTOBER)), new: idr(sum(OCTOBER)), expansion: '0.00', contraction: '0.00', churned: '0.00', reactivated: '0.00' });
    expect(byPlan(october)).toEqual({ 'duo-basic': [idr(OCTOBER.d + OCTOBER.c), 2], 'duo-seats': [idr(OCTOBER.s + OCTOBER.t), 2] });
  });

  it('November: the upgrade counts at its discounted price, the seats from the day they changed; expansion and contraction say so', async () => {
    const [, november] = await report('mrr');
    const expansion = NOVEMBER.d - OCTOBER.d + (NOVEMBER.s - OCTOBER.s); // 75.000 + 80.000
    const contraction = OCTOBER.t - NOVEMBER.t; // 80.000
    expect(november).toMatchObject({
      month: '2025-11',
      partial: false,
      mrr: idr(sum(NOVEMBER)),
      new: '0.00',
      expansion: idr(expansion),
      contraction: idr(contraction),
      churned: '0.00',
      reactivated: '0.00',
      net_new: idr(expansion - contraction),
    });
    expect(sum(NOVEMBER) - sum(OCTOBER)).toBe(expansion - contraction);
    expect(byPlan(november)).toEqual({ 'duo-basic': [idr(NOVEMBER.c), 1], 'duo-pro': [idr(NOVEMBER.d), 1], 'duo-seats': [idr(NOVEMBER.s + NOVEMBER.t), 2] });
  });

  it('the churn report reads the same movements', async () => {
    const [, november] = await report('churn');
    const rate = (n: number) => ((n / sum(OCTOBER)) * 100).toFixed(2);
    expect(november).toMatchObject({
      month: '2025-11',
      customers_at_start: 4,
      customers_churned: 0,
      mrr_at_start: idr(sum(OCTOBER)),
      churned_mrr: '0.00',
      contraction_mrr: idr(OCTOBER.t - NOVEMBER.t),
      expansion_mrr: idr(NOVEMBER.d - OCTOBER.d + NOVEMBER.s - OCTOBER.s),
      revenue_churn_rate: rate(80000), // 17.58
      net_revenue_churn_rate: rate(80000 - 155000), // -16.48
    });
  });

  it('the CLI says the same', async () => {
    const cli = await runCli(['reports', 'mrr', '--from', '2025-10', '--to', '2025-11', '--json'], { DATABASE_URL: server.db.url });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.json.rows).toEqual(await report('mrr'));
  });
});
