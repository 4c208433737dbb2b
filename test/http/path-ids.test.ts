import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from '../helpers/database.js';
import { encodePathValue, ID_SPELLINGS, loadContract } from '../helpers/reliability/contract.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';
import { postTopup } from '../helpers/topups.js';

/*
 * Issue 28 row 2: `urn:uuid:<uuid>` as an id answered 500 on every `{id}` route on PostgreSQL.
 * Every `{id}` route of openapi.yaml, read from the contract so a new route is covered when it
 * is written: any spelling of an id that is not a canonical UUID names nothing (404
 * problem+json, nothing changed); upper case is the same id.
 */
const ID_ROUTES = loadContract().operations.filter((op) => op.base === null && op.params.some((p) => p.in === 'path' && p.name === 'id'));

/** Every spelling the fuzzer tries (escaped as a client would), and `urn:uuid:` left raw. */
function refusedSpellings(id: string): [string, string][] {
  return [['urn:uuid: prefix, raw', `urn:uuid:${id}`], ...ID_SPELLINGS.map(([what, spell]) => [what, encodePathValue(spell(id))] as [string, string])];
}

describe('the {id} routes of the contract', () => {
  it('are the 16 the attack found (17 with the plan slug), or more', () => {
    expect(ID_ROUTES.length).toBeGreaterThanOrEqual(16);
  });
});

describe.each(DATABASES)('ids in paths (%s)', (kind) => {
  let server: TestServer;
  let user: TestUser;
  /** An existing resource's id for each kind of `{id}` route, by its first path segment. */
  const existing = new Map<string, string>();

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
    user = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
    expect(created.status, created.text).toBe(201);
    await simulate(server, created.body.payment.order_id, 'settle');
    existing.set('subscriptions', created.body.subscription.id);
    existing.set('payments', created.body.payment.id);
    const invoices = await server.api('GET', '/invoices/', { auth: user });
    existing.set('invoices', invoices.body.results[0].id);
    const notifications = await server.api('GET', '/notifications/', { auth: user });
    existing.set('notifications', notifications.body.results[0].id);
    const topup = await postTopup(server, user, { amount: 10000, payment_type: 'bank_transfer' });
    existing.set('topups', topup.body.id);
  }, 60_000);
  afterAll(() => server?.stop());

  const idFor = (path: string): string => existing.get(path.split('/')[1]) ?? randomUUID();

  /** What the server stored for the user: a refused path must change none of it. */
  async function snapshot(): Promise<string> {
    const reads = await Promise.all(
      ['/subscriptions/', '/payments/', '/invoices/', '/notifications/', '/topups/', '/wallet/'].map((p) => server.api('GET', p, { auth: user })),
    );
    return JSON.stringify(reads.map((r) => r.body));
  }

  it.each(ID_ROUTES.map((op) => [op.method, op.path] as const))('%s %s: every other spelling of an existing id is 404 problem+json and changes nothing', async (method, path) => {
    const before = await snapshot();
    for (const [what, spelled] of refusedSpellings(idFor(path))) {
      const res = await server.api(method, path.replace('{id}', spelled), { auth: user, body: method === 'POST' ? {} : undefined });
      expect(res.status, `${what}: ${res.text}`).toBe(404);
      expect(res.headers.get('content-type'), what).toMatch(/^application\/problem\+json/);
      expect(res.body.code, what).toBe('not_found');
    }
    expect(await snapshot()).toBe(before);
  });

  it.each(ID_ROUTES.filter((op) => op.method === 'GET').map((op) => [op.path] as const))('GET %s: upper case names the same resource; an unknown id is 404', async (path) => {
    const id = idFor(path);
    const lower = await server.api('GET', path.replace('{id}', id), { auth: user });
    const upper = await server.api('GET', path.replace('{id}', id.toUpperCase()), { auth: user });
    expect(upper.status, upper.text).toBe(lower.status);
    if (lower.headers.get('content-type')?.startsWith('application/json')) expect(upper.body).toEqual(lower.body);
    const unknown = await server.api('GET', path.replace('{id}', randomUUID().toUpperCase()), { auth: user });
    expect(unknown.status, unknown.text).toBe(404);
  });

  it.each(['Basic-Monthly', 'basic-monthly%20', '%20basic-monthly', 'basic_monthly', `urn:uuid:${randomUUID()}`, 'basic-monthly'.repeat(20), '%7Bbasic-monthly%7D'])(
    'GET /plans/%s/: a spelling that is no known slug is 404',
    async (slug) => {
      const res = await server.api('GET', `/plans/${slug}/`, { auth: user });
      expect(res.status, res.text).toBe(404);
      expect(res.body.code).toBe('not_found');
    },
  );

  it('an id in a body is held to the same spelling: urn:uuid: is a 400 naming the field, never a 500', async () => {
    const res = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: `urn:uuid:${existing.get('subscriptions')}` } });
    expect(res.status, res.text).toBe(400);
    expect(res.body.errors[0].field).toBe('subscription_id');
  });
});
