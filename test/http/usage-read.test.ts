import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BillableMetric } from '../../src/db/entities/billable-metric.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { ManualClock } from '../../src/domain/clock.js';
import type { PlanCharge } from '../../src/domain/usage/charge-models.js';
import { createApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { DATABASES } from '../helpers/database.js';
import { makePlan, makeUser } from '../helpers/factories.js';
import { STANDARD_PLANS, startTestServer, type HttpResult, type TestServer } from '../helpers/server.js';
import { dbOf, simulate, type TestUser } from '../helpers/subscriptions.js';

/*
 * What the coming invoice will bill (GET /subscriptions/{id}/usage/, its staff twin and the
 * portal), over HTTP with events sent to POST /events/batch/: each aggregation and each charge
 * model with worked rupiah figures, filters, a window that starts mid-hour (events before it
 * not counted, whole hours read from the rollups, the partial hours from the events), units
 * counted up to now, another customer's subscription not found, a plan without charges.
 */

const T0 = new Date('2027-03-01T03:00:00.000Z');
const HOUR = 3_600_000;
const bearer = (key: string, customer?: string) => ({ authorization: `Bearer ${key}`, ...(customer ? { 'billing-customer': customer } : {}) });
const at = (base: Date, ms: number) => new Date(base.getTime() + ms).toISOString();

/** The metrics every plan here charges (one per aggregation). */
const METRICS = [
  { code: 'api_calls', name: 'API calls', aggregation: 'count', field: null, filters: { env: ['production'] } },
  { code: 'transfer_gb', name: 'Data transfer (GB)', aggregation: 'sum', field: 'gb', filters: null },
  { code: 'peak_seats', name: 'Peak seats', aggregation: 'max', field: 'seats', filters: null },
  { code: 'active_users', name: 'Active users', aggregation: 'unique_count', field: 'user', filters: null },
  { code: 'storage_gb', name: 'Storage (GB)', aggregation: 'latest', field: 'gb', filters: null },
  { code: 'jobs', name: 'Jobs', aggregation: 'count', field: null, filters: null },
] as const;

const charge = (metric: string, model: PlanCharge['model'], properties: PlanCharge['properties']): PlanCharge => ({
  metric,
  metric_name: METRICS.find((m) => m.code === metric)!.name,
  model,
  properties,
});

/** Each aggregation under one of the four models. */
const METERED_CHARGES: PlanCharge[] = [
  // The first 10,000 calls free, then Rp 2 a call.
  charge('api_calls', 'graduated', { tiers: [{ up_to: '10000', unit_amount: '0', flat_amount: '0.00' }, { up_to: null, unit_amount: '2', flat_amount: '0.00' }] }),
  // Rp 1.000,2 a GB.
  charge('transfer_gb', 'standard', { unit_amount: '1000.2' }),
  // Rp 50.000 a pack of 10 seats, the first 5 free.
  charge('peak_seats', 'package', { amount: '50000.00', package_size: 10, free_units: 5 }),
  // Every user at the price of the tier the total falls in: up to 10 at Rp 5.000; up to 100 at Rp 4.000 + Rp 10.000; beyond at Rp 3.000.
  charge('active_users', 'volume', {
    tiers: [
      { up_to: '10', unit_amount: '5000', flat_amount: '0.00' },
      { up_to: '100', unit_amount: '4000', flat_amount: '10000.00' },
      { up_to: null, unit_amount: '3000', flat_amount: '0.00' },
    ],
  }),
  // Rp 2.000 a GB stored, as last reported.
  charge('storage_gb', 'standard', { unit_amount: '2000' }),
];

describe.each(DATABASES)('the usage the coming invoice will bill (%s)', { timeout: 180_000 }, (kind) => {
  let server: TestServer;
  const clock = new ManualClock(T0);
  let writeKey: string;
  let eventsKey: string;
  let readKey: string;
  let alice: TestUser;
  /** Alice's subscription on the metered plan, with the events of the first test. */
  let aliceSub: { id: string; start: string; end: string };

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: { HOSTED_RETURN_ORIGINS: 'https://shop.example.com' } });
    await server.seedPlans(STANDARD_PLANS);
    const em = dbOf(server);
    for (const m of METRICS) em.create(BillableMetric, { ...m, filters: m.filters ? { ...m.filters, env: [...m.filters.env] } : null } as BillableMetric);
    await em.flush();
    await makePlan(em, { slug: 'metered', name: 'Metered', price: '100000.00', charges: METERED_CHARGES });
    await makePlan(em, { slug: 'jobs-plan', name: 'Jobs', price: '50000.00', charges: [charge('jobs', 'standard', { unit_amount: '100' })] });
    const billing = server.running.billing;
    const ctx = () => ({ em: billing.orm.em.fork(), config: billing.config, clock: billing.clock });
    writeKey = (await createApiKey(ctx(), cliActor(), { name: 'shop-backend', scope: 'write' })).key;
    eventsKey = (await createApiKey(ctx(), cliActor(), { name: 'meter', scope: 'events' })).key;
    readKey = (await createApiKey(ctx(), cliActor(), { name: 'support', scope: 'read' })).key;
    alice = await server.createUser();
  });
  afterAll(() => server?.stop());

  /** A customer without a password (acted for by the write key), by username. */
  const customer = async () => (await makeUser(dbOf(server))).username;

  /** An active subscription of the customer (`auth` for a user with a password, else the write key for `ref`). */
  async function subscribeTo(plan: string, who: { auth: TestUser } | { ref: string }): Promise<{ id: string; start: string; end: string }> {
    const opts = 'auth' in who ? { auth: who.auth } : { headers: bearer(writeKey, who.ref) };
    const made = await server.api('POST', '/subscriptions/', { ...opts, body: { plan_id: plan, payment_type: 'bank_transfer' } });
    expect(made.status, made.text).toBe(201);
    await simulate(server, made.body.payment.order_id, 'settle');
    const sub = await server.api('GET', `/subscriptions/${made.body.subscription.id}/`, opts);
    expect(sub.body.status).toBe('active');
    return { id: sub.body.id, start: sub.body.current_period_start, end: sub.body.current_period_end };
  }

  /** Sends events through POST /events/batch/ with an events key (1,000 a request), all accepted. */
  async function send(events: Record<string, unknown>[]): Promise<void> {
    for (let i = 0; i < events.length; i += 1000) {
      const batch = events.slice(i, i + 1000);
      const res = await server.api('POST', '/events/batch/', { headers: bearer(eventsKey), body: { events: batch } });
      expect(res.status, res.text).toBe(202);
      expect(res.body).toEqual({ accepted: batch.length, duplicates: 0 });
    }
  }

  let serial = 0;
  const event = (who: string, code: string, timestamp: string, properties?: Record<string, unknown>) => ({
    transaction_id: `tx_${++serial}`,
    customer: who,
    code,
    timestamp,
    ...(properties ? { properties } : {}),
  });

  /** Two days into Alice's period: every event of hers is in the past. */
  const aliceNow = () => new Date(new Date(aliceSub.start).getTime() + 2 * 24 * HOUR);
  const usage = (id: string, opts: { auth?: TestUser; headers?: Record<string, string> }): Promise<HttpResult> => server.api('GET', `/subscriptions/${id}/usage/`, opts);
  const amounts = (res: HttpResult) => Object.fromEntries(res.body.charges.map((c: { metric: string; units: string; amount: string }) => [c.metric, [c.units, c.amount]]));

  it('each aggregation under each model, with its rupiah: graduated 12,500 calls = Rp 5.000 (filters keep staging calls out), sum, max by packages, unique count by volume, latest', async () => {
    clock.set(T0);
    aliceSub = await subscribeTo('metered', { auth: alice });
    const start = new Date(aliceSub.start);

    const before = await usage(aliceSub.id, { auth: alice });
    expect(before.status, before.text).toBe(200);
    expect(before.body).toEqual({
      subscription: aliceSub.id,
      currency: 'IDR',
      from: aliceSub.start,
      to: aliceSub.end,
      charges: METERED_CHARGES.map((c) => ({
        metric: c.metric,
        metric_name: c.metric_name,
        aggregation: METRICS.find((m) => m.code === c.metric)!.aggregation,
        model: c.model,
        units: '0',
        amount: '0.00',
      })),
      amount: '0.00',
    });

    clock.set(aliceNow());
    const who = alice.username;
    // 10,000 calls from the first minute on, 10 s apart (about 28 hours: whole hours and partial ones).
    const calls = (n: number, from: number) => Array.from({ length: n }, (_, i) => event(who, 'api_calls', at(start, 60_000 + (from + i) * 10_000), { env: 'production', path: '/v1/x' }));
    await send(calls(10_000, 0));
    // Calls of another environment, or naming none, are stored but count for nothing.
    await send([
      ...Array.from({ length: 40 }, (_, i) => event(who, 'api_calls', at(start, HOUR + i * 1000), { env: 'staging' })),
      ...Array.from({ length: 10 }, (_, i) => event(who, 'api_calls', at(start, 2 * HOUR + i * 1000))),
    ]);
    expect(amounts(await usage(aliceSub.id, { auth: alice })).api_calls).toEqual(['10000', '0.00']);

    await send([
      ...calls(2500, 10_000),
      event(who, 'transfer_gb', at(start, 5 * HOUR), { gb: 10.5 }),
      event(who, 'transfer_gb', at(start, 30 * HOUR + 17), { gb: '2.25' }),
      event(who, 'peak_seats', at(start, 3 * HOUR), { seats: 3 }),
      event(who, 'peak_seats', at(start, 9 * HOUR + 1), { seats: 23 }),
      event(who, 'peak_seats', at(start, 20 * HOUR), { seats: 17 }),
      // 20 events of 12 users.
      ...Array.from({ length: 20 }, (_, i) => event(who, 'active_users', at(start, HOUR * (1 + i) + i), { user: `user-${(i % 12) + 1}` })),
      // Sent out of order: the latest is the one of the latest timestamp (7.5 GB), not the last sent.
      event(who, 'storage_gb', at(start, 5 * HOUR + 30 * 60_000), { gb: '7.5' }),
      event(who, 'storage_gb', at(start, 3 * HOUR), { gb: 10 }),
      event(who, 'storage_gb', at(start, 4 * HOUR), { gb: 12 }),
    ]);

    const res = await usage(aliceSub.id, { auth: alice });
    expect(res.status).toBe(200);
    expect(amounts(res)).toEqual({
      // 2,500 calls past the free 10,000 at Rp 2.
      api_calls: ['12500', '5000.00'],
      // 12.75 GB × Rp 1.000,2 = Rp 12.752,55, rounded half up.
      transfer_gb: ['12.75', '12753.00'],
      // 23 seats, 5 free: 18 in packs of 10 = 2 packs × Rp 50.000.
      peak_seats: ['23', '100000.00'],
      // 12 users fall in the second tier: 12 × Rp 4.000 + Rp 10.000.
      active_users: ['12', '58000.00'],
      // 7.5 GB × Rp 2.000.
      storage_gb: ['7.5', '15000.00'],
    });
    expect(res.body).toMatchObject({ from: aliceSub.start, to: aliceSub.end, amount: '190753.00' });
    expect(res.body.charges.map((c: { aggregation: string; model: string }) => `${c.aggregation}/${c.model}`)).toEqual([
      'count/graduated',
      'sum/standard',
      'max/package',
      'unique_count/volume',
      'latest/standard',
    ]);
  });

  it('staff read the same through the twin, and a write key for the customer through the customer route', async () => {
    clock.set(aliceNow());
    const own = await usage(aliceSub.id, { auth: alice });
    expect(own.body.amount).toBe('190753.00');
    const staff = await server.api('GET', `/admin/subscriptions/${aliceSub.id}/usage/`, { headers: bearer(readKey) });
    expect(staff.status, staff.text).toBe(200);
    expect(staff.body).toEqual(own.body);
    const byKey = await usage(aliceSub.id, { headers: bearer(writeKey, alice.username) });
    expect(byKey.status, byKey.text).toBe(200);
    expect(byKey.body).toEqual(own.body);
    // Not staff: a customer's own login on the staff route finds nothing.
    expect((await server.api('GET', `/admin/subscriptions/${aliceSub.id}/usage/`, { auth: alice })).status).toBe(404);
    const unknown = await server.api('GET', '/admin/subscriptions/00000000-0000-4000-8000-000000000000/usage/', { headers: bearer(readKey) });
    expect(unknown.status).toBe(404);
  });

  it('another customer\'s subscription is not found, by login or by key; a plan without charges answers no charges', async () => {
    const bob = await customer();
    const bobSub = await subscribeTo('basic-monthly', { ref: bob });
    expect((await usage(aliceSub.id, { headers: bearer(writeKey, bob) })).status).toBe(404);
    const notHers = await usage(bobSub.id, { auth: alice });
    expect(notHers.status).toBe(404);
    expect(notHers.headers.get('content-type')).toMatch(/problem\+json/);
    const own = await usage(bobSub.id, { headers: bearer(writeKey, bob) });
    expect(own.status, own.text).toBe(200);
    expect(own.body).toEqual({ subscription: bobSub.id, currency: 'IDR', from: bobSub.start, to: bobSub.end, charges: [], amount: '0.00' });
  });

  it('a subscription not started yet has no window: no from, no to, its charges at 0', async () => {
    clock.set(T0);
    const dave = await customer();
    const made = await server.api('POST', '/subscriptions/', { headers: bearer(writeKey, dave), body: { plan_id: 'jobs-plan', payment_type: 'bank_transfer' } });
    expect(made.status, made.text).toBe(201);
    const res = await usage(made.body.subscription.id, { headers: bearer(writeKey, dave) });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ from: null, to: null, amount: '0.00', charges: [{ metric: 'jobs', units: '0', amount: '0.00' }] });
  });

  it('a window starting mid-hour: events before it are not counted, whole hours and the partial hours at both ends are, up to now', async () => {
    clock.set(T0);
    const carol = await customer();
    const sub = await subscribeTo('jobs-plan', { ref: carol });
    const now = new Date('2027-03-01T09:15:00.000Z');
    clock.set(now);
    const job = (timestamp: string) => event(carol, 'jobs', timestamp);
    await send([
      // Before the window (it will start at 05:29:59.750).
      job('2027-03-01T04:10:00.000Z'),
      job('2027-03-01T05:00:00.000Z'),
      job('2027-03-01T05:29:59.749Z'),
      // Its first partial hour: 2.
      job('2027-03-01T05:29:59.750Z'),
      job('2027-03-01T05:45:00.000Z'),
      // Whole hours 06:00 to 09:00: 3 an hour.
      ...['06', '07', '08'].flatMap((h) => [`${h}:00:00.000`, `${h}:30:00.000`, `${h}:59:59.999`].map((t) => job(`2027-03-01T${t}Z`))),
      // The last partial hour, up to now: 2.
      job('2027-03-01T09:00:00.000Z'),
      job('2027-03-01T09:14:59.999Z'),
      // Two minutes ahead of the clock: accepted, not yet counted.
      job('2027-03-01T09:17:00.000Z'),
    ]);
    // The usage up to 05:29:59.750 was billed (as a plan change bills it): the window opens there.
    await dbOf(server).nativeUpdate(Subscription, { id: sub.id }, { usageBilledUntil: new Date('2027-03-01T05:29:59.750Z') });

    const res = await usage(sub.id, { headers: bearer(writeKey, carol) });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ from: '2027-03-01T05:29:59.750Z', to: sub.end, amount: '1300.00' });
    expect(res.body.charges).toEqual([{ metric: 'jobs', metric_name: 'Jobs', aggregation: 'count', model: 'standard', units: '13', amount: '1300.00' }]);

    clock.set(new Date('2027-03-01T09:20:00.000Z'));
    expect(amounts(await usage(sub.id, { headers: bearer(writeKey, carol) })).jobs).toEqual(['14', '1400.00']);
  });

  /** A browser on the customer's portal link, in a language. */
  async function portalPage(who: { auth: TestUser } | { ref: string }, lang: 'id' | 'en'): Promise<string> {
    const opts = 'auth' in who ? { auth: who.auth } : { headers: bearer(writeKey, who.ref) };
    const made = await server.api('POST', '/portal-sessions/', { ...opts, body: { return_url: 'https://shop.example.com/account' } });
    expect(made.status, made.text).toBe(201);
    const path = new URL(made.body.url).pathname;
    const landing = await server.request('GET', `${path}?lang=${lang}`);
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(landing.text)![1]!;
    const cookieOf = (res: HttpResult, last: string) => res.headers.get('set-cookie')?.split(';')[0] ?? last;
    const claimed = await server.request('POST', `${path}?lang=${lang}`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieOf(landing, '') },
      rawBody: new URLSearchParams({ csrf_token: csrf }).toString(),
    });
    expect(claimed.status).toBe(303);
    const cookie = cookieOf(claimed, cookieOf(landing, ''));
    const page = await server.request('GET', `${path}?lang=${lang}`, { headers: { cookie } });
    expect(page.status).toBe(200);
    return page.text;
  }

  it('the portal shows the usage so far per charge (name, units, amount) and its window, in Bahasa Indonesia and English; not for a plan without charges', async () => {
    clock.set(aliceNow());
    const rows = (html: string) =>
      [...html.matchAll(/<tr data-metric="([^"]+)"><td>([^<]+)<\/td><td class="num usage-units">([^<]+)<\/td><td class="num usage-amount">([^<]+)<\/td><\/tr>/g)].map((m) => m.slice(1));
    const id = await portalPage({ auth: alice }, 'id');
    expect(id).toContain('Pemakaian periode ini');
    expect(id).toMatch(/id="usage-window">Dihitung sejak [^<]+ sampai sekarang; ditagih saat periode berakhir, [^<]+\.</);
    expect(rows(id)).toEqual([
      ['api_calls', 'API calls', '12.500', 'Rp\u00a05.000'],
      ['transfer_gb', 'Data transfer (GB)', '12,75', 'Rp\u00a012.753'],
      ['peak_seats', 'Peak seats', '23', 'Rp\u00a0100.000'],
      ['active_users', 'Active users', '12', 'Rp\u00a058.000'],
      ['storage_gb', 'Storage (GB)', '7,5', 'Rp\u00a015.000'],
    ]);
    expect(id).toContain('id="usage-total">Rp\u00a0190.753<');
    const en = await portalPage({ auth: alice }, 'en');
    expect(en).toContain('Usage this period');
    expect(en).toMatch(/id="usage-window">Counted from [^<]+ until now; billed when the period ends, [^<]+\.</);
    expect(rows(en)).toEqual(rows(id));
    expect(en).toContain('Amounts before VAT (PPN).');

    const erin = await customer();
    await subscribeTo('basic-monthly', { ref: erin });
    const plain = await portalPage({ ref: erin }, 'id');
    expect(plain).toContain('id="sub-title"');
    expect(plain).not.toContain('id="usage"');
  });
});
