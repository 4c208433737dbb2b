import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditEvent } from '../../src/db/entities/audit-event.js';
import { BillableMetric } from '../../src/db/entities/billable-metric.js';
import { Plan } from '../../src/db/entities/plan.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf } from '../helpers/subscriptions.js';

/*
 * Billable metrics as staff make them over the staff API: each aggregation, filters, the
 * refusals the contract cannot state (400 naming the field, nothing stored), a taken code (409,
 * also ten at once), lookups by id and code, the list's active filter, archiving (once; never
 * while a plan not archived charges it), a read key's 403, and the audit trail.
 */

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
let serial = 0;
const nextCode = (prefix = 'm') => `${prefix}${process.pid}_${++serial}`;

describe.each(DATABASES)('billable metrics by the staff API (%s)', { timeout: 180_000 }, (kind) => {
  let server: TestServer;
  let readKey: string;
  let writeKey: string;

  beforeAll(async () => {
    server = await startTestServer(kind);
    const cli = (args: string[]) => runCli(['--json', ...args], { ...cliEnv(server), BILLING_OPERATOR: 'ops-oncall' });
    writeKey = (await cli(['api-keys', 'create', '--reason', 'test: audited change', '--name', 'pricing-desk', '--scope', 'write'])).json.key;
    readKey = (await cli(['api-keys', 'create', '--reason', 'test: audited change', '--name', 'reporting', '--scope', 'read'])).json.key;
  });
  afterAll(() => server?.stop());

  const post = (path: string, body: Record<string, unknown>, key = writeKey) => server.api('POST', path, { body, headers: bearer(key) });
  const get = (path: string, key = readKey) => server.api('GET', path, { headers: bearer(key) });
  const createMetric = (body: Record<string, unknown>) => post('/admin/metrics/', { name: 'Test metric', aggregation: 'count', reason: 'pricing', ...body });
  const auditOf = (id: string) => dbOf(server).find(AuditEvent, { targetId: id }, { orderBy: { occurredAt: 'asc' } });
  const chargingPlan = (slug: string, metric: string, status: 'active' | 'archived' = 'active') =>
    server.seedPlans([{ slug, name: 'Metered', price: 100000, status, charges: [{ metric, model: 'standard', properties: { unit_amount: '0.15' } }] }]);

  it('makes a metric of each aggregation, with filters, found by id and by code; the trail has who and why', async () => {
    const count = await createMetric({ code: nextCode('api_calls'), name: 'API calls', description: 'Every request' });
    expect(count.status, count.text).toBe(201);
    expect(count.body).toEqual({
      id: expect.any(String), code: count.body.code, name: 'API calls', description: 'Every request', aggregation: 'count', field: null, filters: null,
      status: 'active', archived_at: null, created_at: expect.any(String),
    });
    const made = [count.body];
    for (const aggregation of ['sum', 'max', 'unique_count', 'latest']) {
      const res = await createMetric({ code: nextCode(aggregation), aggregation, field: 'gb.used', filters: { region: ['eu', 'us', 'eu'], tier: ['gold'] } });
      expect(res.status, res.text).toBe(201);
      expect(res.body).toMatchObject({ aggregation, field: 'gb.used', filters: { region: ['eu', 'us'], tier: ['gold'] }, description: '' });
      made.push(res.body);
    }
    for (const metric of made) {
      for (const ref of [metric.id, metric.code]) {
        const got = await get(`/admin/metrics/${ref}/`);
        expect(got.status, ref).toBe(200);
        expect(got.body).toEqual(metric);
      }
    }
    // Property names that are also names of an object's own machinery are property names like any other.
    const odd = await createMetric({ code: nextCode('odd'), filters: JSON.parse('{"constructor": ["a"], "__proto__": ["b"], "toString": ["c"]}') });
    expect(odd.status, odd.text).toBe(201);
    expect(Object.entries(odd.body.filters).sort()).toEqual([['__proto__', ['b']], ['constructor', ['a']], ['toString', ['c']]]);
    expect((await get('/admin/metrics/no_such_metric/')).status).toBe(404);
    expect((await get('/admin/metrics/00000000-0000-4000-8000-000000000000/')).status).toBe(404);

    const events = await auditOf(count.body.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ action: 'metric.create', actorType: 'api_key', actorName: 'pricing-desk', targetType: 'metric', reason: 'pricing' });
    expect(events[0]!.changes).toMatchObject({ code: [null, count.body.code], aggregation: [null, 'count'], field: [null, null], status: [null, 'active'] });
  });

  it('refuses bad input as 400 naming the field, and stores nothing', async () => {
    const before = { metrics: await dbOf(server).count(BillableMetric, {}), events: await dbOf(server).count(AuditEvent, {}) };
    const refused: [Record<string, unknown>, string][] = [
      [{ code: nextCode(), aggregation: 'sum' }, 'field'],
      [{ code: nextCode(), aggregation: 'max' }, 'field'],
      [{ code: nextCode(), aggregation: 'unique_count' }, 'field'],
      [{ code: nextCode(), aggregation: 'latest' }, 'field'],
      [{ code: nextCode(), aggregation: 'count', field: 'gb' }, 'field'],
      [{ code: nextCode(), name: '   ' }, 'name'],
    ];
    for (const [body, field] of refused) {
      const res = await createMetric(body);
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body.errors.map((e: { field: string }) => e.field), res.text).toContain(field);
    }
    // What the contract states is refused by it before any check of ours.
    for (const body of [
      { code: 'Has Space' }, { code: 'UPPER' }, { code: 'x'.repeat(101) }, { code: nextCode(), aggregation: 'avg' }, { code: nextCode(), aggregation: 'sum', field: 'a b' },
      { code: nextCode(), filters: { region: [] } }, { code: nextCode(), filters: { region: 'eu' } }, { code: nextCode(), extra: 1 }, { code: nextCode(), reason: undefined },
    ]) {
      const res = await createMetric(body);
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).toBe(400);
    }
    expect(await dbOf(server).count(BillableMetric, {})).toBe(before.metrics);
    expect(await dbOf(server).count(AuditEvent, {})).toBe(before.events);
  });

  it('a taken code answers 409 conflict, an archived one too; of ten creates at once exactly one is made', async () => {
    const code = nextCode('taken');
    expect((await createMetric({ code })).status).toBe(201);
    const twin = await createMetric({ code, aggregation: 'sum', field: 'n' });
    expect(twin.status).toBe(409);
    expect(twin.body).toMatchObject({ code: 'conflict' });
    expect(twin.body.detail).toContain(code);
    expect((await post(`/admin/metrics/${code}/archive/`, { reason: 'retired' })).status).toBe(200);
    expect((await createMetric({ code })).status).toBe(409);

    const racing = nextCode('race');
    const answers = await Promise.all(Array.from({ length: 10 }, () => createMetric({ code: racing })));
    expect(answers.map((a) => a.status).sort(), answers.map((a) => a.text).join('\n')).toEqual([201, ...Array(9).fill(409)]);
    expect(answers.filter((a) => a.status === 409).every((a) => a.body.code === 'conflict')).toBe(true);
    const stored = await dbOf(server).find(BillableMetric, { code: racing });
    expect(stored).toHaveLength(1);
    expect(await auditOf(stored[0]!.id)).toHaveLength(1);
  });

  it('archives once (twice is 409 invalid_state), never while a plan not archived charges the metric', async () => {
    const metric = (await createMetric({ code: nextCode('charged'), aggregation: 'sum', field: 'gb' })).body;
    const slug = `metered-${process.pid}-${++serial}`;
    await chargingPlan(slug, metric.code);
    expect((await dbOf(server).findOneOrFail(Plan, { slug })).charges).toEqual([{ metric: metric.code, metric_name: 'Test metric', model: 'standard', properties: { unit_amount: '0.15' } }]);

    const refused = await post(`/admin/metrics/${metric.code}/archive/`, { reason: 'retire' });
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.code).toBe('invalid_state');
    expect(refused.body.detail).toContain(slug);
    expect((await get(`/admin/metrics/${metric.id}/`)).body).toEqual(metric);

    // The plan archived, the metric may be archived; the plans file still seeds as it did.
    await chargingPlan(slug, metric.code, 'archived');
    const archived = await post(`/admin/metrics/${metric.id}/archive/`, { reason: 'retire' });
    expect(archived.status, archived.text).toBe(200);
    expect(archived.body).toMatchObject({ id: metric.id, status: 'archived', archived_at: expect.any(String) });
    await chargingPlan(slug, metric.code, 'archived');
    const twice = await post(`/admin/metrics/${metric.code}/archive/`, { reason: 'again' });
    expect(twice.status).toBe(409);
    expect(twice.body.code).toBe('invalid_state');
    expect((await get(`/admin/metrics/${metric.code}/`)).body).toEqual(archived.body);
    expect((await auditOf(metric.id)).map((e) => [e.action, e.reason, e.changes])).toEqual([
      ['metric.create', 'pricing', expect.any(Object)],
      ['metric.archive', 'retire', { status: ['active', 'archived'], archived_at: [null, archived.body.archived_at] }],
    ]);
    // Two archives at once: one archives, the other finds it archived.
    const racing = (await createMetric({ code: nextCode('race_archive') })).body;
    const answers = await Promise.all([1, 2, 3].map(() => post(`/admin/metrics/${racing.code}/archive/`, { reason: 'x' })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409]);
    expect((await auditOf(racing.id)).filter((e) => e.action === 'metric.archive')).toHaveLength(1);
  });

  it('lists metrics newest first, by active, a page at a time', async () => {
    const kept = (await createMetric({ code: nextCode('list') })).body;
    const gone = (await createMetric({ code: nextCode('list') })).body;
    await post(`/admin/metrics/${gone.code}/archive/`, { reason: 'ended' });
    const active = await get('/admin/metrics/?active=true&page_size=100');
    expect(active.status).toBe(200);
    expect(active.body.results.map((m: { id: string }) => m.id)).toContain(kept.id);
    expect(active.body.results.every((m: { status: string }) => m.status === 'active')).toBe(true);
    const archived = (await get('/admin/metrics/?active=false&page_size=100')).body;
    expect(archived.results.map((m: { id: string }) => m.id)).toContain(gone.id);
    expect(archived.results.every((m: { status: string }) => m.status === 'archived')).toBe(true);
    const all = (await get('/admin/metrics/?page_size=100')).body;
    expect(all.count).toBe(active.body.count + archived.count);
    expect(all.results[0].id).toBe(gone.id);
    const firstPage = (await get('/admin/metrics/?page_size=1')).body;
    expect(firstPage).toMatchObject({ count: all.count, previous: null, results: [all.results[0]] });
    expect(firstPage.next).toContain('page=2');
  });

  it('a read key reads but cannot write (403), and nothing changes; a customer finds no such route', async () => {
    const metric = (await createMetric({ code: nextCode('ro') })).body;
    const before = { metrics: await dbOf(server).count(BillableMetric, {}), events: await dbOf(server).count(AuditEvent, {}) };
    for (const res of [
      await post('/admin/metrics/', { code: nextCode(), name: 'x', aggregation: 'count', reason: 'r' }, readKey),
      await post(`/admin/metrics/${metric.code}/archive/`, { reason: 'r' }, readKey),
    ]) {
      expect(res.status, res.text).toBe(403);
      expect(res.body.code).toBe('insufficient_scope');
    }
    expect((await get(`/admin/metrics/${metric.code}/`)).body).toEqual(metric);
    expect(await dbOf(server).count(BillableMetric, {})).toBe(before.metrics);
    expect(await dbOf(server).count(AuditEvent, {})).toBe(before.events);
    const customer = await server.createUser();
    expect((await server.api('GET', '/admin/metrics/', { auth: customer })).status).toBe(404);
  });
});
