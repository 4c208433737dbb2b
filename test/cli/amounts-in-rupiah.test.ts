import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Coupon } from '../../src/db/entities/coupon.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Plan } from '../../src/db/entities/plan.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { activeSubscription, dbOf, fundWallet, walletBalance } from '../helpers/subscriptions.js';

/*
 * The CLI reads amounts as the API does: "50.000" is refused (exit 2, the option named, whole
 * rupiah asked for), nothing changes, and 50000 is fifty thousand. Plans files too: a YAML
 * `price: 50.000` is not Rp 50.
 */

const EXIT_USAGE = 2;

function expectMisread(res: CliResult, field: string, write: string): void {
  expect(res.code, res.stderr + res.stdout).toBe(EXIT_USAGE);
  const said = res.stderr + res.stdout;
  expect(said).toContain(field);
  expect(said).toContain('whole rupiah');
  expect(said).toContain(`write ${write}`);
}

describe.each(DATABASES)('amounts typed in rupiah at the CLI (%s)', { timeout: 180_000 }, (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  const cli = (...args: string[]) => runCli(args, { DATABASE_URL: server.db.url, SESSION_SECRET: 'cli-test', BILLING_OPERATOR: 'ops-oncall' });

  it('payments refund --amount 50.000 is refused and refunds nothing; --amount 50000 refunds fifty thousand', async () => {
    const user = await server.createUser();
    const { payment } = await activeSubscription(server, user, 'pro-monthly');
    expectMisread(await cli('payments', 'refund', payment.order_id, '--amount', '50.000', '--reason', 'goodwill', '--keep-subscription'), 'amount', '50000');
    expect(await dbOf(server).findOneOrFail(Payment, payment.id)).toMatchObject({ status: 'settled', refundedAmount: '0.00' });
    expect(await walletBalance(server, user)).toBe('0.00');

    const typed = await cli('payments', 'refund', payment.order_id, '--amount', '50000', '--reason', 'goodwill', '--keep-subscription', '--json');
    expect(typed.code, typed.stderr).toBe(0);
    expect(typed.json.refund).toMatchObject({ amount: '50000.00' });
  });

  it('coupons create --amount-off 50.000 is refused and stores nothing; 50000 is fifty thousand off', async () => {
    const create = (code: string, amount: string) =>
      cli('coupons', 'create', '--code', code, '--name', 'Fifty', '--amount-off', amount, '--currency', 'IDR', '--duration', 'once', '--reason', 'campaign', '--json');
    const refused = `CLI${process.pid}A`;
    expectMisread(await create(refused, '50.000'), 'amount_off', '50000');
    expect(await dbOf(server).count(Coupon, { code: refused })).toBe(0);
    const made = await create(`CLI${process.pid}B`, '50000');
    expect(made.code, made.stderr).toBe(0);
    expect(made.json.amount_off).toBe('50000.00');
  });

  it('wallet adjust of 50.000 or -25.000 is refused and the balance stays; simulate refund --amount 50.000 is refused before the simulator is asked', async () => {
    const user = await server.createUser();
    await fundWallet(server, user, '100000.00');
    expectMisread(await cli('wallet', 'adjust', user.username, '50.000', '--reason', 'ticket'), 'amount', '50000');
    expectMisread(await cli('wallet', 'adjust', user.username, '--reason', 'ticket', '--', '-25.000'), 'amount', '25000');
    expect(await walletBalance(server, user)).toBe('100000.00');
    const debit = await cli('wallet', 'adjust', user.username, '--reason', 'ticket', '--', '-25000');
    expect(debit.code, debit.stderr).toBe(0);
    expect(await walletBalance(server, user)).toBe('75000.00');

    expectMisread(await cli('simulate', 'refund', 'ORDER-1', '--amount', '50.000'), '--amount', '50000');
  });

  it('plans seed refuses a YAML or JSON price of 50.000 (and a unit price of 1.500) and changes no plan; 50000 is fifty thousand', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plans-rupiah-'));
    const file = (name: string, text: string) => {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    };
    const yaml = (price: string) => `- slug: rupiah-plan\n  name: Rupiah\n  price: ${price}\n  currency: IDR\n  interval: 1\n  interval_unit: month\n`;
    expectMisread(await cli('plans', 'seed', file('a.yaml', yaml('50.000'))), 'price', '50000');
    expectMisread(await cli('plans', 'seed', file('b.yaml', yaml('"50.000"'))), 'price', '50000');
    expectMisread(await cli('plans', 'seed', file('c.json', JSON.stringify([{ slug: 'rupiah-plan', name: 'Rupiah', currency: 'IDR', interval: 1, interval_unit: 'month' }]).replace('"IDR"', '"IDR", "price": 50.000'))), 'price', '50000');
    const unit = await cli('plans', 'seed', file('d.yaml', `${yaml('50000')}  charges:\n    - metric: api_calls\n      model: standard\n      properties:\n        unit_amount: 1.500\n`));
    expect(unit.code, unit.stderr).toBe(EXIT_USAGE);
    expect(unit.stderr).toContain('unit_amount');
    expect(await dbOf(server).count(Plan, { slug: 'rupiah-plan' })).toBe(0);

    const made = await cli('plans', 'seed', file('e.yaml', yaml('50000')));
    expect(made.code, made.stderr).toBe(0);
    expect((await dbOf(server).findOneOrFail(Plan, { slug: 'rupiah-plan' })).price).toBe('50000.00');
  });
});
