import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BillableMetric } from '../../src/db/entities/billable-metric.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import type { User } from '../../src/db/entities/user.js';
import { ManualClock } from '../../src/domain/clock.js';
import { startSubscription } from '../../src/domain/states/subscription-states.js';
import type { MetricAggregation } from '../../src/domain/usage/aggregation.js';
import { createApiKey, revokeApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { eventStore } from '../../src/services/usage/event-store.js';
import { DATABASES } from '../helpers/database.js';
import { makePlan, makeUser } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf } from '../helpers/subscriptions.js';

/*
 * POST /events/ and /events/batch/ over HTTP on both databases: accepted bodies, idempotency
 * (duplicates counted once, another body 409, also sent at once), the batch's all or nothing
 * with every bad event named, the time rules (future, closed windows), filters, the keys that
 * may send events, and the batch's size.
 */

const NOW = new Date('2027-03-10T03:00:00.000Z');
const PERIOD_START = new Date('2027-02-15T00:00:00.000Z');
const PERIOD_END = new Date('2027-03-15T00:00:00.000Z');
const MIN = 60_000;
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
let serial = 0;
const tx = (prefix = 'tx') => `${prefix}-${process.pid}-${++serial}`;

describe.each(DATABASES)('usage events (%s)', { timeout: 180_000 }, (kind) => {
  const clock = new ManualClock(NOW);
  let server: TestServer;
  const keys = {} as Record<'events' | 'write' | 'read' | 'revoked', string>;
  const metrics = {} as Record<string, BillableMetric>;
  /** Customers: metered (a live subscription charging every metric), closing (usage billed until a mid-period instant), ending (cancels at the period's end), bare (no subscription). */
  const customers = {} as Record<'metered' | 'closing' | 'ending' | 'bare', User>;
  const subs = {} as Record<'metered' | 'closing' | 'ending', Subscription>;
  const BILLED_UNTIL = new Date('2027-03-01T00:00:00.000Z');

  const db = () => dbOf(server);
  const send = (body: unknown, key = keys.events) => server.api('POST', '/events/', { body, headers: bearer(key) });
  const sendBatch = (events: unknown[], key = keys.events) => server.api('POST', '/events/batch/', { body: { events }, headers: bearer(key) });
  const units = (sub: Subscription, code: string, from = PERIOD_START, to = PERIOD_END) =>
    eventStore.aggregate(db(), sub.id, { id: metrics[code].id, aggregation: metrics[code].aggregation }, from, to);
  const event = (overrides: Record<string, unknown> = {}) => ({ transaction_id: tx(), customer: customers.metered.username, code: 'api_calls', timestamp: '2027-03-05T10:00:00Z', ...overrides });

  beforeAll(async () => {
    server = await startTestServer(kind, { clock });
    const em = db();
    const ctx = { em, config: server.config, clock };
    const actor = { type: 'cli' as const, id: 'test', name: 'test', requestId: null };
    for (const scope of ['events', 'write', 'read'] as const) keys[scope] = (await createApiKey(ctx, actor as never, { name: `k-${scope}`, scope })).key;
    const revoked = await createApiKey(ctx, actor as never, { name: 'k-revoked', scope: 'events' });
    await revokeApiKey(ctx, actor as never, revoked.apiKey.id, 'test');
    keys.revoked = revoked.key;

    const defs: [string, MetricAggregation, string | null, Record<string, string[]> | null, ('active' | 'archived')?][] = [
      ['api_calls', 'count', null, null],
      ['storage_gb', 'sum', 'gb', null],
      ['peak_users', 'max', 'users', null],
      ['seats', 'unique_count', 'user', null],
      ['temperature', 'latest', 'value', null],
      ['eu_calls', 'count', null, { region: ['eu'] }],
      ['retired', 'count', null, null, 'archived'],
      ['uncharged', 'count', null, null],
    ];
    for (const [code, aggregation, field, filters, status] of defs) {
      metrics[code] = em.create(BillableMetric, {
        code: `${code}`,
        name: code,
        aggregation,
        field,
        filters,
        status: status ?? 'active',
        archivedAt: status === 'archived' ? NOW : null,
        createdAt: NOW,
        updatedAt: NOW,
      } as BillableMetric);
    }
    await em.flush();
    const charged = defs.filter(([code]) => code !== 'uncharged').map(([code]) => ({ metric: code, metric_name: code, model: 'standard' as const, properties: { unit_amount: '100' } }));
    const plan = await makePlan(em, { charges: charged } as never);
    for (const name of ['metered', 'closing', 'ending', 'bare'] as const) customers[name] = await makeUser(em, { externalId: `crm-${name}-${process.pid}` });
    for (const name of ['metered', 'closing', 'ending'] as const) {
      const sub = em.create(Subscription, { user: customers[name], plan, paymentType: 'bank_transfer', metadata: {}, customerDetails: {} } as unknown as Subscription);
      startSubscription(sub, 'active');
      Object.assign(sub, { currentPeriodStart: PERIOD_START, currentPeriodEnd: PERIOD_END, nextBillingDate: PERIOD_END });
      if (name === 'closing') sub.usageBilledUntil = BILLED_UNTIL;
      if (name === 'ending') sub.cancelAtPeriodEnd = true;
      subs[name] = sub;
    }
    await em.flush();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('records one event (202 with what it counts for), counts a duplicate once and refuses another body under the same id (409)', async () => {
    const body = event({ properties: { endpoint: '/v1/x', n: 1 } });
    const first = await send(body);
    expect(first.status, first.text).toBe(202);
    expect(first.body).toEqual({ transaction_id: body.transaction_id, customer: customers.metered.id, code: 'api_calls', timestamp: '2027-03-05T10:00:00.000Z', subscription: subs.metered.id, duplicate: false });
    const before = await units(subs.metered, 'api_calls');
    // The same body, keys in another order and the customer by another name: a duplicate.
    const again = await send({ ...body, customer: customers.metered.id, properties: { n: 1, endpoint: '/v1/x' } });
    expect(again.status, again.text).toBe(202);
    expect(again.body.duplicate).toBe(true);
    expect(await units(subs.metered, 'api_calls')).toBe(before);
    const other = await send({ ...body, properties: { endpoint: '/v1/y' } });
    expect(other.status, other.text).toBe(409);
    expect(other.body).toMatchObject({ code: 'conflict', errors: [{ field: 'transaction_id' }] });
    expect(await units(subs.metered, 'api_calls')).toBe(before);

    // Unix seconds, the external id, and no timestamp at all (the time of arrival).
    const seconds = await send(event({ customer: `ext:crm-metered-${process.pid}`, timestamp: Math.floor(Date.parse('2027-03-06T01:02:03Z') / 1000) }));
    expect(seconds.status, seconds.text).toBe(202);
    expect(seconds.body.timestamp).toBe('2027-03-06T01:02:03.000Z');
    const arrival = await send({ transaction_id: tx(), customer: customers.metered.username, code: 'api_calls' });
    expect(arrival.status, arrival.text).toBe(202);
    expect(arrival.body.timestamp).toBe(NOW.toISOString());
    // Without a timestamp the body is the same later: a duplicate, whenever it comes again.
    clock.advance(MIN);
    const later = await send({ transaction_id: arrival.body.transaction_id, customer: customers.metered.username, code: 'api_calls' });
    clock.set(NOW);
    expect(later.body.duplicate).toBe(true);
    expect(await units(subs.metered, 'api_calls')).toBe(String(Number(before) + 2));
  });

  it('takes a batch (202 accepted and duplicates), within it a duplicate counted once, and aggregates each kind of metric', async () => {
    const at = (h: number, m = 0) => new Date(Date.UTC(2027, 2, 7, h, m)).toISOString();
    const batch = [
      event({ code: 'storage_gb', timestamp: at(1, 10), properties: { gb: '1.5' } }),
      event({ code: 'storage_gb', timestamp: at(1, 50), properties: { gb: 2 } }),
      event({ code: 'peak_users', timestamp: at(2), properties: { users: 7 } }),
      event({ code: 'peak_users', timestamp: at(3), properties: { users: '12.25' } }),
      event({ code: 'seats', timestamp: at(2), properties: { user: 'ana' } }),
      event({ code: 'seats', timestamp: at(4), properties: { user: 'budi' } }),
      event({ code: 'seats', timestamp: at(5), properties: { user: 'ana' } }),
      event({ code: 'temperature', timestamp: at(6), properties: { value: '-3.5' } }),
      event({ code: 'temperature', timestamp: at(9), properties: { value: 21 } }),
      event({ code: 'temperature', timestamp: at(8), properties: { value: 30 } }),
    ];
    batch.push({ ...batch[1] });
    const res = await sendBatch(batch);
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({ accepted: 10, duplicates: 1 });
    expect(await units(subs.metered, 'storage_gb')).toBe('3.5');
    expect(await units(subs.metered, 'peak_users')).toBe('12.25');
    expect(await units(subs.metered, 'seats')).toBe('2');
    expect(await units(subs.metered, 'temperature')).toBe('21');
    // Windows cut mid-hour count the raw events of the partial hours.
    expect(await units(subs.metered, 'storage_gb', new Date(at(1, 20)), new Date(at(9)))).toBe('2');
    expect(await units(subs.metered, 'temperature', new Date(at(0)), new Date(at(8, 30)))).toBe('30');
    const again = await sendBatch(batch);
    expect(again.body).toEqual({ accepted: 0, duplicates: 11 });
  });

  it('counts the same event sent 40 times at once exactly once, and of two bodies under one id at once accepts one (202) and refuses the other (409)', async () => {
    const before = Number(await units(subs.metered, 'api_calls'));
    const body = event();
    const answers = await Promise.all(Array.from({ length: 40 }, () => send(body)));
    expect(answers.map((a) => a.status)).toEqual(Array(40).fill(202));
    expect(answers.filter((a) => !a.body.duplicate)).toHaveLength(1);
    expect(await units(subs.metered, 'api_calls')).toBe(String(before + 1));

    const id = tx();
    const pair = await Promise.all([send(event({ transaction_id: id, properties: { a: 1 } })), send(event({ transaction_id: id, properties: { a: 2 } }))]);
    expect(pair.map((a) => a.status).sort()).toEqual([202, 409]);
    expect(await units(subs.metered, 'api_calls')).toBe(String(before + 2));
  });

  it('refuses a whole batch when any event is bad, naming each one by its index, and stores nothing', async () => {
    const before = await units(subs.metered, 'api_calls');
    const good = () => event();
    const fields = (res: { body: { errors: { field: string }[] } }) => res.body.errors.map((e) => e.field);
    const invalid = await sendBatch([good(), event({ code: 'storage_gb', properties: { gb: '1.1234567' } }), good(), event({ code: 'peak_users', properties: { users: 1e21 } }), event({ code: 'seats', properties: {} })]);
    expect(invalid.status, invalid.text).toBe(400);
    expect(invalid.body.code).toBe('validation_error');
    expect(fields(invalid)).toEqual(['events[1].properties.gb', 'events[3].properties.users', 'events[4].properties.user']);
    // Each refusal says what is wrong: six decimal places at most; 10^21 (and 10^13) too large, with the limit.
    expect(invalid.body.errors[0].message).toBe('may have at most 6 decimal places');
    expect(invalid.body.errors[1].message).toMatch(/^is too large: .*at most 1000000000000 \(10\^12\)/);
    for (const users of [1e13, '10000000000000', '-10000000000000']) {
      const large = await send(event({ code: 'peak_users', properties: { users } }));
      expect(large.status, large.text).toBe(400);
      expect(large.body.errors).toEqual([{ field: 'properties.users', message: expect.stringMatching(/^is too large: .*at most 1000000000000 \(10\^12\)/) }]);
      expect(large.body.errors[0].message).not.toMatch(/decimal/);
    }
    const malformed = await sendBatch([good(), { ...good(), timestamp: 'yesterday' }, { ...good(), code: undefined }]);
    expect(malformed.status, malformed.text).toBe(400);
    expect(fields(malformed)).toEqual(expect.arrayContaining(['events[1].timestamp', 'events[2].code']));

    const refused = await sendBatch([
      good(),
      event({ timestamp: new Date(NOW.getTime() + 6 * MIN).toISOString() }),
      event({ code: 'no_such_metric' }),
      event({ code: 'retired' }),
      event({ code: 'uncharged' }),
      event({ customer: customers.bare.username }),
      good(),
    ]);
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body.code).toBe('event_in_future');
    expect(refused.body.errors).toEqual([
      { field: 'events[1].timestamp', message: expect.stringContaining('5 minutes') },
      { field: 'events[2].code', message: expect.any(String) },
      { field: 'events[3].code', message: expect.any(String) },
      { field: 'events[4].customer', message: expect.any(String) },
      { field: 'events[5].customer', message: expect.any(String) },
    ]);
    const unknown = await sendBatch([good(), event({ customer: 'nobody-at-all' })]);
    expect(unknown.status, unknown.text).toBe(404);
    expect(unknown.body.errors).toEqual([{ field: 'events[1].customer', message: expect.any(String) }]);
    // A conflict anywhere in the batch: nothing of it is kept either.
    const kept = await send(event());
    const conflicting = await sendBatch([good(), { ...event(), transaction_id: kept.body.transaction_id, properties: { other: true } }]);
    expect(conflicting.status, conflicting.text).toBe(409);
    expect(conflicting.body.errors).toEqual([{ field: 'events[1].transaction_id', message: expect.any(String) }]);
    expect(await units(subs.metered, 'api_calls')).toBe(String(Number(before) + 1));

    const single = await send(event({ code: 'retired' }));
    expect(single.status).toBe(422);
    expect(single.body).toMatchObject({ code: 'unknown_metric', errors: [{ field: 'code' }] });
    const none = await send(event({ customer: `ext:crm-bare-${process.pid}` }));
    expect(none.body).toMatchObject({ code: 'no_metered_subscription', errors: [{ field: 'customer' }] });
  });

  it('refuses events more than 5 minutes ahead and takes them 4 minutes ahead', async () => {
    const ahead = (ms: number) => send(event({ timestamp: new Date(NOW.getTime() + ms).toISOString() }));
    const far = await ahead(5 * MIN + 1000);
    expect(far.status, far.text).toBe(422);
    expect(far.body).toMatchObject({ code: 'event_in_future', errors: [{ field: 'timestamp' }] });
    expect((await ahead(4 * MIN)).status).toBe(202);
  });

  it('refuses usage before the window already invoiced, and after the end of a subscription that will not continue (period_closed)', async () => {
    const closed = await send(event({ customer: customers.closing.username, timestamp: new Date(BILLED_UNTIL.getTime() - 1).toISOString() }));
    expect(closed.status, closed.text).toBe(422);
    expect(closed.body).toMatchObject({ code: 'period_closed', detail: `The usage before ${BILLED_UNTIL.toISOString()} is already invoiced.`, errors: [{ field: 'timestamp' }] });
    const open = await send(event({ customer: customers.closing.username, timestamp: BILLED_UNTIL.toISOString() }));
    expect(open.status, open.text).toBe(202);
    expect(open.body.subscription).toBe(subs.closing.id);

    // The last period: usage at or after its end is never billed.
    clock.set(new Date(PERIOD_END.getTime() - MIN));
    try {
      const after = await send(event({ customer: customers.ending.username, timestamp: PERIOD_END.toISOString() }));
      expect(after.status, after.text).toBe(422);
      expect(after.body.code).toBe('period_closed');
      const before = await send(event({ customer: customers.ending.username, timestamp: new Date(PERIOD_END.getTime() - 1).toISOString() }));
      expect(before.status, before.text).toBe(202);
      // A metered subscription that continues takes usage past its period's end (the next window).
      expect((await send(event({ timestamp: new Date(PERIOD_END.getTime() + MIN).toISOString() }))).status).toBe(202);
    } finally {
      clock.set(NOW);
    }

    // An event recorded before its window was invoiced, sent again after: a duplicate, not a refusal.
    const early = event({ customer: customers.closing.username, timestamp: '2027-03-05T00:00:00Z' });
    expect((await send(early)).status).toBe(202);
    await db().nativeUpdate(Subscription, { id: subs.closing.id }, { usageBilledUntil: new Date('2027-03-06T00:00:00Z') });
    try {
      const retried = await send(early);
      expect(retried.status, retried.text).toBe(202);
      expect(retried.body).toMatchObject({ duplicate: true, subscription: subs.closing.id });
      expect((await send({ ...early, transaction_id: tx() })).status).toBe(422);
    } finally {
      await db().nativeUpdate(Subscription, { id: subs.closing.id }, { usageBilledUntil: BILLED_UNTIL });
    }
  });

  it("stores events its metric's filters leave out, and counts them for nothing", async () => {
    const before = await units(subs.metered, 'eu_calls');
    const out = await sendBatch([event({ code: 'eu_calls', properties: { region: 'us' } }), event({ code: 'eu_calls' }), event({ code: 'eu_calls', properties: { region: 'eu' } })]);
    expect(out.body).toEqual({ accepted: 3, duplicates: 0 });
    expect(await units(subs.metered, 'eu_calls')).toBe(String(Number(before) + 1));
    const [stored] = await (db() as EntityManager).execute<{ n: number | string }[]>(
      `select count(*) as n from usage_events where metric_id = '${metrics.eu_calls.id}' and counted = ${kind === 'sqlite' ? 0 : 'false'}`,
    );
    expect(Number(stored.n)).toBeGreaterThanOrEqual(2);
  });

  it('takes a key of scope events or write; refuses a read key (403), a missing, unknown or revoked key, a customer session and Basic (401)', async () => {
    expect((await send(event(), keys.write)).status).toBe(202);
    const read = await send(event(), keys.read);
    expect(read.status).toBe(403);
    expect(read.body.code).toBe('insufficient_scope');
    expect((await sendBatch([event()], keys.read)).status).toBe(403);
    const none = await server.api('POST', '/events/', { body: event() });
    expect(none.status).toBe(401);
    for (const key of [keys.revoked, 'sk_live_not_a_key']) {
      const wrong = await send(event(), key);
      expect(wrong.status).toBe(401);
      expect(wrong.body.code).toBe('invalid_api_key');
    }
    const person = await server.createUser();
    const session = await server.login(person);
    expect((await server.api('POST', '/events/', { body: event({ customer: person.username }), session })).status).toBe(401);
    expect((await server.api('POST', '/events/batch/', { body: { events: [event()] }, auth: person })).status).toBe(401);
    // An events key sends events and nothing else.
    expect((await server.api('GET', '/admin/metrics/', { headers: bearer(keys.events) })).status).toBe(404);
    expect((await server.api('GET', '/admin/metrics/', { headers: bearer(keys.read) })).status).toBe(200);
  });

  it('takes 1,000 events in a batch and refuses 1,001 (400)', async () => {
    const many = Array.from({ length: 1000 }, (_, i) => event({ code: 'seats', timestamp: new Date(NOW.getTime() - i * 1000).toISOString(), properties: { user: `member-${i % 250}`, region: 'jakarta' } }));
    const ok = await sendBatch(many);
    expect(ok.status, ok.text.slice(0, 300)).toBe(202);
    expect(ok.body).toEqual({ accepted: 1000, duplicates: 0 });
    const tooMany = await sendBatch([...many, event()]);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.errors[0].field).toBe('events');
  });
});
