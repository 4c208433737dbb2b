import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import type { PlanSeed } from '../../src/services/plans/seed-plans.js';
import { runCli } from '../helpers/cli.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * Row 14 of issue 40 (docs/reports.md, "MRR"): MRR is what each subscription was invoiced at,
 * without PPN, a yearly plan divided by 12; raising a plan's price later does not rewrite past
 * months; a month not yet ended is marked partial, in the API and in the CLI. Subscriptions are
 * made and paid through the real server in January; the report is read in February.
 */

const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000' };
const PLANS: PlanSeed[] = [
  { slug: 'basic', name: 'Basic', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 1 },
  { slug: 'flat', name: 'Flat', price: 111000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 2, tax_behavior: 'inclusive' },
  { slug: 'yearly', name: 'Yearly', price: 1200000, currency: 'IDR', interval: 12, interval_unit: 'month', sort_order: 3 },
];

describe.each(DATABASES)('the MRR report on %s', (kind) => {
  let server: TestServer;
  let staff: TestUser;
  const clock = new ManualClock(new Date('2026-01-10T03:00:00Z'));

  const paid = async (plan: string) => {
    const user = await server.createUser();
    const res = await subscribe(server, user, { plan_id: plan, payment_type: 'bank_transfer' });
    expect(res.status, res.text).toBe(201);
    await simulate(server, res.body.payment.order_id, 'settle');
    const sub = await server.api('GET', `/subscriptions/${res.body.subscription.id}/`, { auth: user });
    expect(sub.body.status).toBe('active');
  };

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: SELLER });
    await server.seedPlans(PLANS);
    staff = await server.createUser({ isStaff: true });
    await paid('basic');
    await paid('flat');
    await paid('yearly');
    // February: January has ended. Basic costs more from now on.
    clock.set(new Date('2026-02-15T03:00:00Z'));
    await server.seedPlans([{ ...PLANS[0]!, price: 80000 }]);
  });
  afterAll(() => server?.stop());

  it('a past month keeps the invoiced price after a price rise; an inclusive plan counts its DPP; a yearly plan its twelfth', async () => {
    const res = await server.api('GET', '/admin/reports/mrr/?from=2026-01&to=2026-01', { auth: staff });
    expect(res.status, res.text).toBe(200);
    const [january] = res.body.rows;
    expect(january).toMatchObject({ month: '2026-01', partial: false });
    const byPlan = Object.fromEntries(january.by_plan.map((p: { plan_slug: string; mrr: string }) => [p.plan_slug, p.mrr]));
    // Basic as invoiced (50,000, not today's 80,000); Flat's DPP (111,000 holds 11,000 PPN); Yearly 1,200,000 / 12.
    expect(byPlan).toEqual({ basic: '50000.00', flat: '100000.00', yearly: '100000.00' });
    expect(january.mrr).toBe('250000.00');
  });

  it('the month not yet ended is marked partial, in the API and in the CLI', async () => {
    const res = await server.api('GET', '/admin/reports/mrr/?from=2026-01&to=2026-03', { auth: staff });
    expect(res.status).toBe(200);
    expect(res.body.rows.map((r: { month: string; partial: boolean }) => [r.month, r.partial])).toEqual([
      ['2026-01', false],
      ['2026-02', true],
      ['2026-03', true],
    ]);
    // The CLI runs on the machine's clock: its current month (in Jakarta) is the partial one.
    const thisMonth = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Jakarta', year: 'numeric', month: '2-digit' }).format(new Date()).slice(0, 7);
    const cli = await runCli(['reports', 'mrr', '--from', '2026-01', '--to', thisMonth, '--json'], { DATABASE_URL: server.db.url, ...SELLER });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.json.rows[0]).toMatchObject({ month: '2026-01', partial: false, mrr: '250000.00' });
    expect(cli.json.rows.at(-1)).toMatchObject({ month: thisMonth, partial: true });
    expect(cli.json.rows.slice(0, -1).every((r: { partial: boolean }) => !r.partial)).toBe(true);
    const human = await runCli(['reports', 'mrr', '--from', thisMonth, '--to', thisMonth], { DATABASE_URL: server.db.url, ...SELLER });
    expect(human.stdout).toMatch(/partial/);
  });
});
