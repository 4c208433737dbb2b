import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditEvent } from '../../src/db/entities/audit-event.js';
import { Coupon, PromotionCode } from '../../src/db/entities/coupon.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf } from '../helpers/subscriptions.js';

/*
 * `billing-admin coupons …` and `billing-admin promotion-codes …`: the staff API's use cases
 * from the command line, `--json` printing the API's very body, a reason required for every
 * change and kept in the audit trail with the operator, refusals exiting as the API answers.
 */

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
let serial = 0;
const nextCode = (prefix = 'CLI') => `${prefix}${process.pid}_${++serial}`;

describe.each(DATABASES)('billing-admin coupons and promotion-codes (%s)', { timeout: 180_000 }, (kind) => {
  let server: TestServer;
  let env: Record<string, string>;
  let readKey: string;
  const cli = (args: string[], json = true) => runCli(json ? ['--json', ...args] : args, { ...env, BILLING_OPERATOR: 'ops-oncall' });
  const api = (path: string) => server.api('GET', path, { headers: bearer(readKey) });
  const auditOf = (id: string) => dbOf(server).find(AuditEvent, { targetId: id }, { orderBy: { occurredAt: 'asc' } });

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
    env = cliEnv(server);
    readKey = (await cli(['api-keys', 'create', '--reason', 'test: audited change', '--name', 'reporting', '--scope', 'read'])).json.key;
  });
  afterAll(() => server?.stop());

  it('coupons create, show, list and archive: the API body with --json, a readable table without, the operator and reason in the trail', async () => {
    const code = nextCode();
    const made = await cli(['coupons', 'create', '--code', code, '--name', 'Launch week', '--percent-off', '25', '--duration', 'repeating', '--duration-in-cycles', '3',
      '--max-redemptions', '100', '--plan', 'basic-monthly', '--plan', 'pro-monthly', '--redeem-by', '2099-01-31T23:59:59+07:00', '--reason', 'launch campaign']);
    expect(made.code, made.stderr).toBe(0);
    expect(made.json).toMatchObject({ code, name: 'Launch week', percent_off: '25.00', amount_off: null, duration: 'repeating', duration_in_cycles: 3, max_redemptions: 100,
      plans: ['basic-monthly', 'pro-monthly'], redeem_by: '2099-01-31T16:59:59.000Z', active: true, archived_at: null });
    expect((await api(`/admin/coupons/${code}/`)).body).toEqual(made.json);
    const shown = await cli(['coupons', 'show', made.json.id]);
    expect(shown.json).toEqual(made.json);
    const human = await cli(['coupons', 'show', code], false);
    expect(human.stdout).toMatch(/percent_off\s+25\.00/);

    const amount = await cli(['coupons', 'create', '--code', nextCode(), '--name', 'Rp 50.000 off', '--amount-off', '50000', '--currency', 'IDR', '--duration', 'once', '--reason', 'win-back']);
    expect(amount.code, amount.stderr).toBe(0);
    expect(amount.json).toMatchObject({ amount_off: '50000.00', currency: 'IDR', percent_off: null, duration: 'once' });

    const table = await cli(['coupons', 'list', '--active'], false);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^code\s+name\s+off\s+duration\s+redeemed/m);
    expect(table.stdout).toContain(`${code}`);
    expect(table.stdout).toMatch(new RegExp(`${code}\\s+Launch week\\s+25\\.00%\\s+3 cycles\\s+0/100`));
    expect(table.stdout).toContain('50000.00 IDR');

    const archived = await cli(['coupons', 'archive', code, '--reason', 'campaign over']);
    expect(archived.code, archived.stderr).toBe(0);
    expect(archived.json).toMatchObject({ id: made.json.id, active: false, archived_at: expect.any(String) });
    expect((await api(`/admin/coupons/${made.json.id}/`)).body).toEqual(archived.json);
    const twice = await cli(['coupons', 'archive', code, '--reason', 'again']);
    expect(twice.code).toBe(3);
    expect(twice.json.error.code).toBe('invalid_state');

    const listed = await cli(['coupons', 'list', '--archived', '--page-size', '100']);
    const fromApi = (await api('/admin/coupons/?active=false&page_size=100')).body;
    expect(listed.json).toEqual({ count: fromApi.count, results: fromApi.results });
    expect(listed.json.results.map((c: { id: string }) => c.id)).toContain(made.json.id);

    expect((await auditOf(made.json.id)).map((e) => [e.action, e.actorType, e.actorName, e.reason])).toEqual([
      ['coupon.create', 'cli', 'ops-oncall', 'launch campaign'],
      ['coupon.archive', 'cli', 'ops-oncall', 'campaign over'],
    ]);
  });

  it('refuses what the API refuses, with the same field named, and changes nothing without --reason', async () => {
    const before = await dbOf(server).count(Coupon, {});
    const bad = await cli(['coupons', 'create', '--code', nextCode(), '--name', 'Both', '--percent-off', '10', '--amount-off', '1000', '--currency', 'IDR', '--duration', 'once', '--reason', 'x']);
    expect(bad.code).toBe(2);
    expect(bad.json.error.code).toBe('validation_error');
    const cycles = await cli(['coupons', 'create', '--code', nextCode(), '--name', 'Cycles', '--percent-off', '10', '--duration', 'repeating', '--reason', 'x'], false);
    expect(cycles.code).toBe(2);
    expect(cycles.stderr).toContain('duration_in_cycles');
    const noReason = await cli(['coupons', 'create', '--code', nextCode(), '--name', 'No reason', '--percent-off', '10', '--duration', 'once']);
    expect(noReason.code).toBe(2);
    expect(noReason.json.error.message).toContain('--reason');
    expect(await dbOf(server).count(Coupon, {})).toBe(before);

    const coupon = (await cli(['coupons', 'create', '--code', nextCode(), '--name', 'Kept', '--percent-off', '10', '--duration', 'forever', '--reason', 'x'])).json;
    const noArchiveReason = await cli(['coupons', 'archive', coupon.code]);
    expect(noArchiveReason.code).toBe(2);
    const code = (await cli(['promotion-codes', 'create', '--code', nextCode('p'), '--coupon', coupon.code, '--reason', 'x'])).json;
    expect((await cli(['promotion-codes', 'deactivate', code.code])).code).toBe(2);
    expect((await cli(['promotion-codes', 'create', '--code', nextCode('p'), '--coupon', coupon.code])).code).toBe(2);
    expect((await api(`/admin/coupons/${coupon.id}/`)).body.active).toBe(true);
    expect((await api(`/admin/promotion-codes/${code.id}/`)).body.active).toBe(true);
    expect(await dbOf(server).count(PromotionCode, { coupon: coupon.id })).toBe(1);
    expect((await cli(['coupons', 'show', 'NO-SUCH-COUPON'])).code).toBe(4);
  });

  it('promotion-codes create, show (any case), list, deactivate and activate: the API body with --json, a taken code exits 3', async () => {
    const coupon = (await cli(['coupons', 'create', '--code', nextCode(), '--name', 'Spring', '--amount-off', '25000', '--currency', 'IDR', '--duration', 'forever', '--reason', 'spring sale'])).json;
    const customer = await server.createUser();
    const code = nextCode('spring');
    const made = await cli(['promotion-codes', 'create', '--code', code, '--coupon', coupon.code, '--max-redemptions', '50', '--first-time-only', '--minimum-amount', '100000',
      '--customer', customer.username, '--expires-at', '2099-06-30T00:00:00Z', '--reason', 'spring sale']);
    expect(made.code, made.stderr).toBe(0);
    expect(made.json).toMatchObject({ code, coupon, max_redemptions: 50, first_time_only: true, minimum_amount: '100000.00', customer_id: customer.id, expires_at: '2099-06-30T00:00:00.000Z', active: true });
    expect((await api(`/admin/promotion-codes/${code.toLowerCase()}/`)).body).toEqual(made.json);
    expect((await cli(['promotion-codes', 'show', code.toUpperCase()])).json).toEqual(made.json);
    const human = await cli(['promotion-codes', 'show', code], false);
    expect(human.stdout).toMatch(new RegExp(`coupon\\s+${coupon.code} \\(25000\\.00 IDR, forever\\)`));

    const twin = await cli(['promotion-codes', 'create', '--code', code.toUpperCase(), '--coupon', coupon.code, '--reason', 'x']);
    expect(twin.code).toBe(3);
    expect(twin.json.error.code).toBe('conflict');

    const off = await cli(['promotion-codes', 'deactivate', code, '--reason', 'paused']);
    expect(off.code, off.stderr).toBe(0);
    expect(off.json).toEqual({ ...made.json, active: false });
    const offAgain = await cli(['promotion-codes', 'deactivate', code, '--reason', 'paused again'], false);
    expect(offAgain.stdout).toContain('already inactive');
    const on = await cli(['promotion-codes', 'activate', code.toLowerCase(), '--reason', 'resumed']);
    expect(on.json.active).toBe(true);

    const listed = await cli(['promotion-codes', 'list', '--coupon', coupon.code]);
    const fromApi = (await api(`/admin/promotion-codes/?coupon=${coupon.code}`)).body;
    expect(listed.json).toEqual({ count: 1, results: fromApi.results });
    expect(listed.json.results[0]).toEqual(on.json);
    const table = await cli(['promotion-codes', 'list', '--coupon', coupon.id, '--active'], false);
    expect(table.stdout).toMatch(new RegExp(`${code}\\s+${coupon.code}\\s+25000\\.00 IDR\\s+0/50`));
    expect((await cli(['promotion-codes', 'list', '--coupon', coupon.id, '--inactive'])).json).toEqual({ count: 0, results: [] });

    expect((await cli(['coupons', 'archive', coupon.code, '--reason', 'over'])).code).toBe(0);
    const revive = await cli(['promotion-codes', 'activate', code, '--reason', 'try']);
    expect(revive.code, revive.stderr).toBe(0);
    const dead = await cli(['promotion-codes', 'deactivate', code, '--reason', 'tidy']);
    expect(dead.json.active).toBe(false);
    const refused = await cli(['promotion-codes', 'activate', code, '--reason', 'try']);
    expect(refused.code).toBe(3);
    expect(refused.json.error.code).toBe('invalid_state');

    expect((await auditOf(made.json.id)).map((e) => [e.action, e.actorName, e.reason])).toEqual([
      ['promotion_code.create', 'ops-oncall', 'spring sale'],
      ['promotion_code.deactivate', 'ops-oncall', 'paused'],
      ['promotion_code.activate', 'ops-oncall', 'resumed'],
      ['promotion_code.deactivate', 'ops-oncall', 'tidy'],
    ]);
  });
});
