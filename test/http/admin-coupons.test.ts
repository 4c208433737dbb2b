import { beforeAll, describe, expect, it } from 'vitest';
import { AuditEvent } from '../../src/db/entities/audit-event.js';
import { Coupon, PromotionCode } from '../../src/db/entities/coupon.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { dbOf, serverOnClock, subscribe } from '../helpers/subscriptions.js';

/*
 * Coupons and promotion codes as staff make them over the staff API: each kind of coupon, every
 * refusal the contract cannot state (a 400 naming the field, nothing stored), taken codes (409,
 * promotion codes in any case, also ten at once), archiving, activating and deactivating, the
 * lists' filters, and the audit trail with the key and the reason.
 */

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
let serial = 0;
const nextCode = (prefix = 'C') => `${prefix}${process.pid}_${++serial}`;
const FUTURE = '2027-06-30T23:59:59+07:00';

describe.each(DATABASES)('coupons and promotion codes by the staff API (%s)', { timeout: 180_000 }, (kind) => {
  const stage = serverOnClock(kind, new Date('2027-03-01T03:00:00.000Z'));
  let readKey: string;
  let writeKey: string;

  beforeAll(async () => {
    const env = cliEnv(stage.server);
    const cli = (args: string[]) => runCli(['--json', ...args], { ...env, BILLING_OPERATOR: 'ops-oncall' });
    writeKey = (await cli(['api-keys', 'create', '--reason', 'test: audited change', '--name', 'marketing-desk', '--scope', 'write'])).json.key;
    readKey = (await cli(['api-keys', 'create', '--reason', 'test: audited change', '--name', 'reporting', '--scope', 'read'])).json.key;
  });

  const post = (path: string, body: Record<string, unknown>, key = writeKey) => stage.server.api('POST', path, { body, headers: bearer(key) });
  const get = (path: string, key = readKey) => stage.server.api('GET', path, { headers: bearer(key) });
  const createCoupon = (body: Record<string, unknown>) => post('/admin/coupons/', { name: 'Test coupon', duration: 'once', reason: 'campaign', ...body });
  const createCode = (body: Record<string, unknown>) => post('/admin/promotion-codes/', { reason: 'campaign', ...body });
  const auditOf = (id: string) => dbOf(stage.server).find(AuditEvent, { targetId: id }, { orderBy: { occurredAt: 'asc' } });

  it('makes each kind of coupon: a percentage stored as "25.00", an amount in its currency, repeating with its cycles, limited to plans and a date', async () => {
    const percent = await createCoupon({ code: nextCode(), name: 'Launch', percent_off: '25', duration: 'repeating', duration_in_cycles: 3, max_redemptions: 100 });
    expect(percent.status, percent.text).toBe(201);
    expect(percent.body).toEqual({
      id: expect.any(String), code: percent.body.code, name: 'Launch', percent_off: '25.00', amount_off: null, currency: null, duration: 'repeating',
      duration_in_cycles: 3, max_redemptions: 100, times_redeemed: 0, redeem_by: null, plans: null, active: true, archived_at: null, created_at: expect.any(String),
    });
    const amount = await createCoupon({ code: nextCode(), amount_off: 50000, currency: 'IDR', duration: 'forever', plans: ['basic-monthly', 'pro-monthly'], redeem_by: FUTURE });
    expect(amount.status, amount.text).toBe(201);
    expect(amount.body).toMatchObject({ percent_off: null, amount_off: '50000.00', currency: 'IDR', duration: 'forever', duration_in_cycles: null, plans: ['basic-monthly', 'pro-monthly'], redeem_by: '2027-06-30T16:59:59.000Z' });
    const cents = await createCoupon({ code: nextCode(), amount_off: '1.50', currency: 'USD', plans: ['usd-monthly'] });
    expect(cents.status, cents.text).toBe(201);
    expect(cents.body).toMatchObject({ amount_off: '1.50', currency: 'USD', duration: 'once' });
    const fraction = await createCoupon({ code: nextCode(), percent_off: '12.5' });
    expect(fraction.body.percent_off).toBe('12.50');
    const whole = await createCoupon({ code: nextCode(), percent_off: '100' });
    expect(whole.body.percent_off).toBe('100.00');

    for (const made of [percent, amount, cents]) {
      for (const ref of [made.body.id, made.body.code]) {
        const got = await get(`/admin/coupons/${ref}/`);
        expect(got.status, ref).toBe(200);
        expect(got.body).toEqual(made.body);
      }
    }
    expect((await get('/admin/coupons/NO-SUCH-COUPON/')).status).toBe(404);
    expect((await get(`/admin/coupons/${percent.body.code.toLowerCase()}/`)).status).toBe(404);

    const events = await auditOf(percent.body.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ action: 'coupon.create', actorType: 'api_key', actorName: 'marketing-desk', targetType: 'coupon', reason: 'campaign' });
    expect(events[0]!.changes).toMatchObject({ code: [null, percent.body.code], percent_off: [null, '25.00'], duration: [null, 'repeating'], duration_in_cycles: [null, 3] });
  });

  it('refuses what the contract cannot state, as 400 naming the field, and stores nothing', async () => {
    const before = { coupons: await dbOf(stage.server).count(Coupon, {}), events: await dbOf(stage.server).count(AuditEvent, {}) };
    const refused: [Record<string, unknown>, string][] = [
      [{ code: nextCode() }, 'percent_off'],
      [{ code: nextCode(), percent_off: '10', amount_off: 1000, currency: 'IDR' }, 'amount_off'],
      [{ code: nextCode(), percent_off: '0' }, 'percent_off'],
      [{ code: nextCode(), percent_off: '0.00' }, 'percent_off'],
      [{ code: nextCode(), amount_off: 1000 }, 'currency'],
      [{ code: nextCode(), percent_off: '10', currency: 'IDR' }, 'currency'],
      [{ code: nextCode(), amount_off: 0, currency: 'IDR' }, 'amount_off'],
      [{ code: nextCode(), amount_off: '1000.50', currency: 'IDR' }, 'amount_off'],
      [{ code: nextCode(), amount_off: '1.505', currency: 'USD' }, 'amount_off'],
      [{ code: nextCode(), amount_off: '99999999999999999999', currency: 'IDR' }, 'amount_off'],
      [{ code: nextCode(), percent_off: '10', duration: 'repeating' }, 'duration_in_cycles'],
      [{ code: nextCode(), percent_off: '10', duration: 'forever', duration_in_cycles: 3 }, 'duration_in_cycles'],
      [{ code: nextCode(), percent_off: '10', duration: 'once', duration_in_cycles: 1 }, 'duration_in_cycles'],
      [{ code: nextCode(), percent_off: '10', plans: ['no-such-plan'] }, 'plans'],
      [{ code: nextCode(), amount_off: 1000, currency: 'IDR', plans: ['usd-monthly'] }, 'plans'],
      [{ code: nextCode(), percent_off: '10', redeem_by: '2027-03-01T02:00:00Z' }, 'redeem_by'],
      [{ code: nextCode(), percent_off: '10', name: '   ' }, 'name'],
    ];
    for (const [body, field] of refused) {
      const res = await createCoupon(body);
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body.errors.map((e: { field: string }) => e.field), res.text).toContain(field);
    }
    // What the contract states is refused by it before any check of ours.
    for (const body of [{ code: 'has space', percent_off: '10' }, { code: nextCode(), percent_off: '101' }, { code: nextCode(), percent_off: '10', duration: 'weekly' }]) {
      expect((await createCoupon(body)).status, JSON.stringify(body)).toBe(400);
    }
    expect(await dbOf(stage.server).count(Coupon, {})).toBe(before.coupons);

    const coupon = (await createCoupon({ code: nextCode(), percent_off: '10' })).body;
    // A percentage of rupiah plans: its minimum is in whole rupiah.
    const rupiah = (await createCoupon({ code: nextCode(), percent_off: '10', plans: ['basic-monthly', 'pro-monthly'] })).body;
    const archived = (await createCoupon({ code: nextCode(), percent_off: '10' })).body;
    expect((await post(`/admin/coupons/${archived.code}/archive/`, { reason: 'ended' })).status).toBe(200);
    const codesBefore = await dbOf(stage.server).count(PromotionCode, {});
    const eventsBefore = await dbOf(stage.server).count(AuditEvent, {});
    const refusedCodes: [Record<string, unknown>, string][] = [
      [{ code: nextCode('p'), coupon: 'NO-SUCH-COUPON' }, 'coupon'],
      [{ code: nextCode('p'), coupon: archived.code }, 'coupon'],
      [{ code: nextCode('p'), coupon: coupon.code, expires_at: '2027-02-01T00:00:00Z' }, 'expires_at'],
      [{ code: nextCode('p'), coupon: coupon.code, minimum_amount: 0 }, 'minimum_amount'],
      [{ code: nextCode('p'), coupon: rupiah.code, minimum_amount: '100.5' }, 'minimum_amount'],
      [{ code: nextCode('p'), coupon: coupon.code, minimum_amount: '100.555' }, 'minimum_amount'],
      [{ code: nextCode('p'), coupon: coupon.code, customer: 'ext:nobody-has-this' }, 'customer'],
      [{ code: nextCode('p'), coupon: coupon.code, customer: 'nobody-at-all' }, 'customer'],
    ];
    for (const [body, field] of refusedCodes) {
      const res = await createCode(body);
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field), res.text).toContain(field);
    }
    expect(await dbOf(stage.server).count(PromotionCode, {})).toBe(codesBefore);
    expect(await dbOf(stage.server).count(AuditEvent, {})).toBe(eventsBefore);
    expect(before.events).toBeLessThan(eventsBefore);
  });

  it('a taken code answers 409 conflict: a coupon code, a promotion code in any case, and of ten creates at once exactly one is made', async () => {
    const code = nextCode();
    expect((await createCoupon({ code, percent_off: '10' })).status).toBe(201);
    const twin = await createCoupon({ code, percent_off: '20' });
    expect(twin.status).toBe(409);
    expect(twin.body).toMatchObject({ code: 'conflict' });
    expect(twin.body.detail).toContain(code);

    const promo = nextCode('launch');
    const made = await createCode({ code: promo, coupon: code, max_redemptions: 5, first_time_only: true, minimum_amount: 100000 });
    expect(made.status, made.text).toBe(201);
    for (const spelled of [promo.toUpperCase(), promo.toLowerCase()]) {
      const again = await createCode({ code: spelled, coupon: code });
      expect(again.status, spelled).toBe(409);
      expect(again.body.code).toBe('conflict');
    }

    const racingCoupon = nextCode('RACE');
    const couponAnswers = await Promise.all(Array.from({ length: 10 }, (_, i) => createCoupon({ code: racingCoupon, percent_off: String(i + 1) })));
    expect(couponAnswers.map((a) => a.status).sort(), couponAnswers.map((a) => a.text).join('\n')).toEqual([201, ...Array(9).fill(409)]);
    expect(await dbOf(stage.server).count(Coupon, { code: racingCoupon })).toBe(1);

    const racing = nextCode('race');
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => createCode({ code: i % 2 ? racing.toUpperCase() : racing, coupon: code })));
    expect(answers.map((a) => a.status).sort(), answers.map((a) => a.text).join('\n')).toEqual([201, ...Array(9).fill(409)]);
    expect(answers.filter((a) => a.status === 409).every((a) => a.body.code === 'conflict')).toBe(true);
    const stored = await dbOf(stage.server).find(PromotionCode, { codeKey: racing.toUpperCase() });
    expect(stored).toHaveLength(1);
    expect(await auditOf(stored[0]!.id)).toHaveLength(1);
  });

  it('a promotion code embeds its coupon, is found by id and by code in any case, and keeps its terms; one for a customer names them', async () => {
    const coupon = (await createCoupon({ code: nextCode(), amount_off: 25000, currency: 'IDR', duration: 'forever' })).body;
    const { user } = stage;
    const code = nextCode('Welcome');
    const made = await createCode({ code, coupon: coupon.id, max_redemptions: 50, expires_at: FUTURE, first_time_only: true, minimum_amount: '100000', customer: user.username });
    expect(made.status, made.text).toBe(201);
    expect(made.body).toEqual({
      id: expect.any(String), code, coupon, max_redemptions: 50, times_redeemed: 0, expires_at: '2027-06-30T16:59:59.000Z', first_time_only: true,
      minimum_amount: '100000.00', customer_id: user.id, active: true, created_at: expect.any(String),
    });
    for (const ref of [made.body.id, code, code.toUpperCase(), code.toLowerCase()]) {
      const got = await get(`/admin/promotion-codes/${ref}/`);
      expect(got.status, ref).toBe(200);
      expect(got.body).toEqual(made.body);
    }
    expect((await get('/admin/promotion-codes/no-such-code/')).status).toBe(404);
    const byExternal = await createCode({ code: nextCode('ext'), coupon: coupon.code, customer: user.id });
    expect(byExternal.body.customer_id).toBe(user.id);

    const [event] = await auditOf(made.body.id);
    expect(event).toMatchObject({ action: 'promotion_code.create', actorType: 'api_key', actorName: 'marketing-desk', reason: 'campaign' });
    expect(event!.changes).toMatchObject({ code: [null, code], coupon: [null, coupon.code], first_time_only: [null, true], minimum_amount: [null, '100000.00'], customer_id: [null, user.id] });
  });

  it('archiving makes a coupon inactive once (twice is 409 invalid_state); a code is deactivated and activated, a no-op records nothing, a code of an archived coupon cannot be activated', async () => {
    const coupon = (await createCoupon({ code: nextCode(), percent_off: '30' })).body;
    const code = (await createCode({ code: nextCode('spring'), coupon: coupon.code })).body;
    const patch = (body: Record<string, unknown>, key = writeKey) => stage.server.api('PATCH', `/admin/promotion-codes/${code.code.toUpperCase()}/`, { body, headers: bearer(key) });

    const off = await patch({ active: false, reason: 'paused the campaign' });
    expect(off.status, off.text).toBe(200);
    expect(off.body).toMatchObject({ id: code.id, active: false, coupon: { active: true } });
    const again = await patch({ active: false, reason: 'again' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(off.body);
    const on = await patch({ active: true, reason: 'campaign resumed' });
    expect(on.body.active).toBe(true);
    expect((await auditOf(code.id)).map((e) => [e.action, e.reason, e.changes])).toEqual([
      ['promotion_code.create', 'campaign', expect.any(Object)],
      ['promotion_code.deactivate', 'paused the campaign', { active: [true, false] }],
      ['promotion_code.activate', 'campaign resumed', { active: [false, true] }],
    ]);

    const archived = await post(`/admin/coupons/${coupon.id}/archive/`, { reason: 'campaign over' });
    expect(archived.status, archived.text).toBe(200);
    expect(archived.body).toMatchObject({ id: coupon.id, active: false, archived_at: expect.any(String) });
    expect(archived.body.archived_at).toBe('2027-03-01T03:00:00.000Z');
    const twice = await post(`/admin/coupons/${coupon.code}/archive/`, { reason: 'again' });
    expect(twice.status).toBe(409);
    expect(twice.body.code).toBe('invalid_state');
    expect((await get(`/admin/coupons/${coupon.id}/`)).body).toEqual(archived.body);
    expect((await auditOf(coupon.id)).map((e) => [e.action, e.reason, e.changes])).toEqual([
      ['coupon.create', 'campaign', expect.any(Object)],
      ['coupon.archive', 'campaign over', { active: [true, false], archived_at: [null, archived.body.archived_at] }],
    ]);

    // Its code may be deactivated still, but not activated again.
    expect((await patch({ active: false, reason: 'tidy' })).body.active).toBe(false);
    const revive = await patch({ active: true, reason: 'try' });
    expect(revive.status).toBe(409);
    expect(revive.body.code).toBe('invalid_state');
    expect((await get(`/admin/promotion-codes/${code.id}/`)).body).toMatchObject({ active: false, coupon: { active: false } });
    expect(await dbOf(stage.server).count(Coupon, { id: coupon.id })).toBe(1);
  });

  it('lists coupons and codes newest first, by active and by coupon, a page at a time', async () => {
    const kept = (await createCoupon({ code: nextCode('LIST'), percent_off: '5' })).body;
    const gone = (await createCoupon({ code: nextCode('LIST'), percent_off: '6' })).body;
    await post(`/admin/coupons/${gone.code}/archive/`, { reason: 'ended' });
    const active = await get('/admin/coupons/?active=true&page_size=100');
    expect(active.status).toBe(200);
    expect(active.body.results.map((c: { id: string }) => c.id)).toContain(kept.id);
    expect(active.body.results.every((c: { active: boolean }) => c.active)).toBe(true);
    const inactive = (await get('/admin/coupons/?active=false&page_size=100')).body;
    expect(inactive.results.map((c: { id: string }) => c.id)).toContain(gone.id);
    expect(inactive.results.every((c: { active: boolean }) => !c.active)).toBe(true);
    const all = (await get('/admin/coupons/?page_size=100')).body;
    expect(all.count).toBe(active.body.count + inactive.count);
    const firstPage = (await get('/admin/coupons/?page_size=1')).body;
    expect(firstPage).toMatchObject({ count: all.count, previous: null, results: [all.results[0]] });
    expect(firstPage.next).toContain('page=2');

    const a = (await createCode({ code: nextCode('a'), coupon: kept.code })).body;
    const b = (await createCode({ code: nextCode('b'), coupon: kept.id })).body;
    await stage.server.api('PATCH', `/admin/promotion-codes/${a.id}/`, { body: { active: false, reason: 'x' }, headers: bearer(writeKey) });
    const ofKept = (await get(`/admin/promotion-codes/?coupon=${kept.code}`)).body;
    expect(ofKept).toMatchObject({ count: 2, next: null, previous: null });
    expect(ofKept.results.map((p: { id: string }) => p.id).sort()).toEqual([a.id, b.id].sort());
    expect(ofKept.results.find((p: { id: string }) => p.id === b.id)).toEqual(b);
    expect((await get(`/admin/promotion-codes/?coupon=${kept.id}&active=true`)).body.results.map((p: { id: string }) => p.id)).toEqual([b.id]);
    expect((await get(`/admin/promotion-codes/?coupon=${kept.code}&active=false`)).body.results.map((p: { id: string }) => p.id)).toEqual([a.id]);
    expect((await get('/admin/promotion-codes/?coupon=NO-SUCH-COUPON')).body).toMatchObject({ count: 0, results: [] });
  });

  it('a read key reads but cannot write (403), and nothing changes', async () => {
    const coupon = (await createCoupon({ code: nextCode(), percent_off: '10' })).body;
    const code = (await createCode({ code: nextCode('ro'), coupon: coupon.code })).body;
    const before = await dbOf(stage.server).count(AuditEvent, {});
    const writes = [
      await post('/admin/coupons/', { code: nextCode(), name: 'x', percent_off: '10', duration: 'once', reason: 'r' }, readKey),
      await post(`/admin/coupons/${coupon.code}/archive/`, { reason: 'r' }, readKey),
      await post('/admin/promotion-codes/', { code: nextCode('ro'), coupon: coupon.code, reason: 'r' }, readKey),
      await stage.server.api('PATCH', `/admin/promotion-codes/${code.code}/`, { body: { active: false, reason: 'r' }, headers: bearer(readKey) }),
    ];
    for (const res of writes) {
      expect(res.status, res.text).toBe(403);
      expect(res.body.code).toBe('insufficient_scope');
    }
    expect((await get(`/admin/coupons/${coupon.code}/`)).body).toEqual(coupon);
    expect((await get(`/admin/promotion-codes/${code.code}/`)).body).toEqual(code);
    expect(await dbOf(stage.server).count(AuditEvent, {})).toBe(before);
    // A customer finds no such route.
    expect((await stage.server.api('GET', '/admin/coupons/', { auth: stage.user })).status).toBe(404);
  });

  it('staff by session need the CSRF token, and are the actor in the trail', async () => {
    const staff = await stage.server.createUser({ isStaff: true });
    const session = await stage.server.login(staff);
    const body = { code: nextCode('S'), name: 'By session', percent_off: '15', duration: 'once', reason: 'session test' };
    const forged = await stage.server.api('POST', '/admin/coupons/', { body, session, headers: { 'x-csrf-token': 'forged-token' } });
    expect(forged.status).toBe(403);
    expect(forged.body.code).toBe('csrf_failed');
    const made = await stage.server.api('POST', '/admin/coupons/', { body, session, headers: { 'x-csrf-token': session.csrfToken } });
    expect(made.status, made.text).toBe(201);
    const [event] = await auditOf(made.body.id);
    expect(event).toMatchObject({ action: 'coupon.create', actorType: 'staff', actorName: staff.username, reason: 'session test' });
  });

  it('what staff make is what customers redeem: a made code discounts a subscription and is counted; deactivated or of an archived coupon, it is refused as inactive', async () => {
    const { server, user } = stage;
    const coupon = (await createCoupon({ code: nextCode(), percent_off: '20', duration: 'forever', plans: ['pro-monthly'] })).body;
    const code = (await createCode({ code: nextCode('redeem'), coupon: coupon.code, max_redemptions: 10 })).body;
    const subscribed = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer', promotion_code: code.code.toLowerCase() });
    expect(subscribed.status, subscribed.text).toBe(201);
    expect(subscribed.body.subscription.discount).toMatchObject({ coupon: coupon.code, promotion_code: code.code, percent_off: '20.00', duration: 'forever' });
    expect((await get(`/admin/promotion-codes/${code.id}/`)).body).toMatchObject({ times_redeemed: 1, coupon: { times_redeemed: 1 } });

    await stage.server.api('PATCH', `/admin/promotion-codes/${code.id}/`, { body: { active: false, reason: 'stop' }, headers: bearer(writeKey) });
    const other = await server.createUser();
    const off = await subscribe(server, other, { plan_id: 'pro-monthly', payment_type: 'bank_transfer', promotion_code: code.code });
    expect(off.status).toBe(422);
    expect(off.body).toMatchObject({ code: 'promotion_code_invalid', reason: 'inactive' });

    const live = (await createCode({ code: nextCode('live'), coupon: coupon.code })).body;
    await post(`/admin/coupons/${coupon.code}/archive/`, { reason: 'over' });
    const archived = await subscribe(server, other, { plan_id: 'pro-monthly', payment_type: 'bank_transfer', promotion_code: live.code });
    expect(archived.status).toBe(422);
    expect(archived.body).toMatchObject({ code: 'promotion_code_invalid', reason: 'inactive' });
  });
});
