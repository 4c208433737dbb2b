import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Coupon } from '../../src/db/entities/coupon.js';
import { ManualClock } from '../../src/domain/clock.js';
import { runBilling } from '../../src/services/billing/run-billing.js';
import type { PlanSeed } from '../../src/services/plans/seed-plans.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { runCli } from '../helpers/cli.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf, fundWallet, subscribe } from '../helpers/subscriptions.js';

/*
 * Issue 41 (docs/pricing.md, "MRR"): a subscription's MRR is what it is invoiced, net of its
 * discount, price × quantity, without PPN; a discount that has ended (a `once` coupon after its
 * first period) no longer reduces it. Subscriptions are made through the real API with
 * `promotion_code` in January and renewed by the billing run in February; the report is read
 * through GET /admin/reports/mrr/ and `billing-admin reports mrr`.
 */

const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000' };
const PLANS: PlanSeed[] = [
  { slug: 'basic', name: 'Basic', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 1 },
  { slug: 'flat', name: 'Flat', price: 111000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 2, tax_behavior: 'inclusive' },
  { slug: 'seats', name: 'Seats', price: 40000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 3, tax_behavior: 'exclusive', per_unit: true },
];

describe.each(DATABASES)('MRR net of discounts on %s', (kind) => {
  let server: TestServer;
  let staff: Awaited<ReturnType<TestServer['createUser']>>;
  const clock = new ManualClock(new Date('2026-01-10T03:00:00Z'));
  const em = () => dbOf(server) as EntityManager;

  /** A customer with a funded wallet subscribes to `plan`, with `coupon`'s promotion code when given. */
  async function subscribed(plan: string, coupon: Coupon | null, extra: Record<string, unknown> = {}) {
    const user = await server.createUser();
    await fundWallet(server, user, '2000000');
    const promo = coupon ? await makePromotionCode(em(), { coupon }) : null;
    const res = await subscribe(server, user, { plan_id: plan, payment_type: 'wallet', ...(promo ? { promotion_code: promo.code } : {}), ...extra });
    expect(res.status, res.text).toBe(201);
    const invoice = (await server.api('GET', `/invoices/${res.body.payment.invoice_id}/`, { auth: user })).body;
    expect(invoice.status).toBe('paid');
    return { user, invoice };
  }

  const report = async (from: string, to: string) => {
    const res = await server.api('GET', `/admin/reports/mrr/?from=${from}&to=${to}`, { auth: staff });
    expect(res.status, res.text).toBe(200);
    return res.body.rows as { month: string; mrr: string; expansion: string; new: string; by_plan: { plan_slug: string; mrr: string; subscriptions: number }[] }[];
  };
  const byPlan = (row: { by_plan: { plan_slug: string; mrr: string; subscriptions: number }[] }) => Object.fromEntries(row.by_plan.map((p) => [p.plan_slug, [p.mrr, p.subscriptions]]));

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: SELLER });
    await server.seedPlans(PLANS);
    staff = await server.createUser({ isStaff: true });
    const quarterForever = await makeCoupon(em(), { percentOff: '25.00', duration: 'forever' });
    const amountForever = await makeCoupon(em(), { amountOff: '11100.00', currency: 'IDR', duration: 'forever' });
    const tenForever = await makeCoupon(em(), { percentOff: '10.00', duration: 'forever' });
    const halfOnce = await makeCoupon(em(), { percentOff: '50.00', duration: 'once' });

    const quarter = await subscribed('basic', quarterForever);
    expect(quarter.invoice).toMatchObject({ subtotal: '50000.00', discount_amount: '12500.00', total_amount: '37500.00' });
    const inclusive = await subscribed('flat', amountForever);
    // 111,000 − 11,100 = 99,900, which holds DPP 90,000 and PPN 9,900.
    expect(inclusive.invoice).toMatchObject({ subtotal: '111000.00', discount_amount: '11100.00', tax_base: '90000.00', total_amount: '99900.00' });
    const seats = await subscribed('seats', tenForever, { quantity: 5 });
    expect(seats.invoice).toMatchObject({ subtotal: '200000.00', discount_amount: '20000.00', tax_base: '180000.00' });
    const once = await subscribed('basic', halfOnce);
    expect(once.invoice).toMatchObject({ discount_amount: '25000.00', total_amount: '25000.00' });
    await subscribed('basic', null);

    // 10 February: every subscription renews from its wallet; the `once` coupon no longer applies.
    clock.set(new Date('2026-02-10T04:00:00Z'));
    const { orm, config, gateway } = server.running.billing;
    await runBilling({ em: orm.em.fork() as EntityManager, config, gateway, clock });
    const renewal = (await server.api('GET', '/invoices/', { auth: once.user })).body.results.find((i: { id: string }) => i.id !== once.invoice.id);
    expect(renewal).toMatchObject({ status: 'paid', subtotal: '50000.00', discount_amount: '0.00', total_amount: '50000.00' });
    clock.set(new Date('2026-03-05T03:00:00Z'));
  }, 120_000);
  afterAll(() => server?.stop());

  it('January: each subscription counts what it was invoiced, net of its discount, × quantity, without PPN', async () => {
    const [january] = await report('2026-01', '2026-01');
    // Basic: 37,500 (25 % off) + 25,000 (50 % off once) + 50,000; Flat: DPP 90,000 of 99,900; Seats: 5 × 40,000 − 10 %.
    expect(byPlan(january)).toEqual({ basic: ['112500.00', 3], flat: ['90000.00', 1], seats: ['180000.00', 1] });
    expect(january.mrr).toBe('382500.00');
    expect(january.new).toBe('382500.00');
  });

  it('February: the ended `once` discount no longer reduces the MRR, and its rise is expansion; the forever discounts still do', async () => {
    const [january, february] = await report('2026-01', '2026-02');
    expect(byPlan(february)).toEqual({ basic: ['137500.00', 3], flat: ['90000.00', 1], seats: ['180000.00', 1] });
    expect(february.mrr).toBe('407500.00');
    expect(february.expansion).toBe('25000.00');
    expect(january.mrr).toBe('382500.00');
  });

  it('the CLI report says the same', async () => {
    const cli = await runCli(['reports', 'mrr', '--from', '2026-01', '--to', '2026-02', '--json'], { DATABASE_URL: server.db.url, ...SELLER });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.json.rows.map((r: { month: string; mrr: string }) => [r.month, r.mrr])).toEqual([
      ['2026-01', '382500.00'],
      ['2026-02', '407500.00'],
    ]);
  });
});
