import { beforeAll, describe, expect, it } from 'vitest';
import { AuditEvent } from '../../src/db/entities/audit-event.js';
import { User } from '../../src/db/entities/user.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { dbOf, serverOnClock } from '../helpers/subscriptions.js';

/*
 * Customers made by an integrator's backend: a write key makes one when a user signs up on the
 * integrator's side, named by the integrator's own id (`ext:<external_id>`), usually without a
 * password. Twins answer 409 customer_exists, also forty at once; every create and change is in
 * the audit trail with the key as its actor.
 */

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
let serial = 0;
const nextId = (prefix = 'u') => `${prefix}_${process.pid}_${++serial}`;

describe.each(DATABASES)('customers by API (%s)', { timeout: 180_000 }, (kind) => {
  const stage = serverOnClock(kind, new Date('2027-03-01T03:00:00.000Z'));
  let readKey: string;
  let writeKey: string;
  let env: Record<string, string>;
  const cli = (args: string[]) => runCli(['--json', ...args], { ...env, BILLING_OPERATOR: 'ops-oncall' });

  beforeAll(async () => {
    env = cliEnv(stage.server);
    writeKey = (await cli(['api-keys', 'create', '--reason', 'test: audited change', '--name', 'shop-backend', '--scope', 'write'])).json.key;
    readKey = (await cli(['api-keys', 'create', '--reason', 'test: audited change', '--name', 'reporting', '--scope', 'read'])).json.key;
  });

  const create = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    stage.server.api('POST', '/admin/customers/', { body, headers: { ...bearer(writeKey), ...headers } });

  it('a write key makes a customer from its own id alone: the username is that id, no password; it is found by id, username and ext:, and listed', async () => {
    const { server } = stage;
    const externalId = nextId();
    const made = await create({ external_id: externalId, email: 'sari@example.com', first_name: 'Sari', locale: 'id' });
    expect(made.status, made.text).toBe(201);
    expect(made.body).toEqual({
      id: expect.any(String), username: externalId, external_id: externalId, email: 'sari@example.com', first_name: 'Sari', last_name: '',
      locale: 'id', tax_profile: null, has_password: false, disabled_at: null, created_at: expect.any(String),
    });
    for (const ref of [made.body.id, externalId, `ext:${externalId}`, `ext:${encodeURIComponent(externalId)}`]) {
      const got = await server.api('GET', `/admin/customers/${ref}/`, { headers: bearer(readKey) });
      expect(got.status, ref).toBe(200);
      expect(got.body).toEqual(made.body);
    }
    const byExternal = await server.api('GET', `/admin/customers/?external_id=${externalId}`, { headers: bearer(readKey) });
    expect(byExternal.body).toMatchObject({ count: 1, results: [made.body] });
    const byText = await server.api('GET', `/admin/customers/?q=${externalId.toUpperCase()}`, { headers: bearer(readKey) });
    expect(byText.body.results.map((c: { id: string }) => c.id)).toEqual([made.body.id]);
    const byEmail = await server.api('GET', '/admin/customers/?email=sari@example.com', { headers: bearer(readKey) });
    expect(byEmail.body.results.map((c: { id: string }) => c.id)).toContain(made.body.id);
    expect((await server.api('GET', '/admin/customers/ext:nobody-has-this/', { headers: bearer(readKey) })).status).toBe(404);

    const events = await dbOf(server).find(AuditEvent, { targetId: made.body.id });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ action: 'customer.create', actorType: 'api_key', actorName: 'shop-backend', targetType: 'customer' });
    expect(events[0]!.changes).toMatchObject({ external_id: [null, externalId], email: [null, 'sari@example.com'], has_password: [null, false] });
  });

  it('a customer without a password cannot log in by session or Basic; one made with a password can', async () => {
    const { server } = stage;
    const without = (await create({ external_id: nextId(), email: 'a@example.com' })).body;
    expect((await server.api('POST', '/auth/login/', { body: { username: without.username, password: 'whatever-it-is' } })).status).toBe(401);
    expect((await server.api('GET', '/auth/me/', { auth: { username: without.username, password: 'whatever-it-is' } })).status).toBe(401);
    const username = nextId('with');
    const withPassword = await create({ username, email: 'b@example.com', password: 'correct horse battery' });
    expect(withPassword.status, withPassword.text).toBe(201);
    expect(withPassword.body).toMatchObject({ username, external_id: null, has_password: true });
    expect((await server.api('GET', '/auth/me/', { auth: { username, password: 'correct horse battery' } })).status).toBe(200);
  });

  it('a twin answers 409 customer_exists naming the customer that exists, by external id or username; forty creates at once make one customer', async () => {
    const { server } = stage;
    const externalId = nextId();
    const first = await create({ external_id: externalId, email: 'c@example.com' });
    const again = await create({ external_id: externalId, username: nextId('other'), email: 'c@example.com' });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'customer_exists', title: 'Customer exists' });
    expect(again.body.detail).toContain(first.body.id);
    const sameName = await create({ username: first.body.username, external_id: nextId(), email: 'c@example.com' });
    expect(sameName.status).toBe(409);
    expect(sameName.body.detail).toContain(first.body.id);

    const racing = nextId('race');
    const answers = await Promise.all(Array.from({ length: 40 }, () => create({ external_id: racing, email: 'race@example.com' })));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 201), answers.map((a) => a.text).join('\n')).toHaveLength(1);
    expect(statuses.filter((s) => s !== 201).every((s) => s === 409)).toBe(true);
    expect(await dbOf(server).count(User, { externalId: racing })).toBe(1);

    // The same request retried under its Idempotency-Key gives the first answer back, not a 409.
    const key = `signup-${nextId()}`;
    const body = { external_id: nextId('idem'), email: 'i@example.com' };
    const once = await create(body, { 'idempotency-key': key });
    const twice = await create(body, { 'idempotency-key': key });
    expect([once.status, twice.status]).toEqual([201, 201]);
    expect(twice.body).toEqual(once.body);
  });

  it('refuses what it cannot store, and stores nothing: neither id, a spaced id, a bad locale, an all-zero NPWP, a read key, no key', async () => {
    const { server } = stage;
    const before = await dbOf(server).count(User, {});
    const refused: [Record<string, unknown>, number, string?][] = [
      [{ email: 'x@example.com' }, 400, 'external_id'],
      [{ external_id: 'has space', email: 'x@example.com' }, 400, 'external_id'],
      [{ external_id: 'ok:but:colons', email: 'x@example.com' }, 400, 'username'],
      [{ external_id: nextId(), email: 'not-an-email' }, 400, 'email'],
      [{ external_id: nextId(), email: 'x@example.com', locale: 'fr' }, 400, 'locale'],
      [{ external_id: nextId(), email: 'x@example.com', tax_profile: { buyer_type: 'business', npwp: '0000000000000000', name: 'PT Nol', address: 'Jakarta' } }, 400, 'tax_profile.npwp'],
      [{ external_id: nextId(), email: 'x@example.com', tax_profile: { buyer_type: 'individual', nik: '3171019999990001', name: 'Siti', address: 'Jakarta' } }, 400, 'tax_profile.nik'],
      [{ external_id: nextId(), email: 'x@example.com', password: 'short' }, 400, 'password'],
    ];
    for (const [body, status, field] of refused) {
      const res = await create(body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      if (field) expect(res.body.errors.map((e: { field: string }) => e.field), res.text).toContain(field);
    }
    expect((await server.api('POST', '/admin/customers/', { body: { external_id: nextId(), email: 'x@example.com' }, headers: bearer(readKey) })).status).toBe(403);
    expect((await server.api('POST', '/admin/customers/', { body: { external_id: nextId(), email: 'x@example.com' } })).status).toBe(404);
    expect(await dbOf(server).count(User, {})).toBe(before);
  });

  it('PATCH changes only what it is given, with the before and after in the trail; a no-op records nothing; a taken external id is 409', async () => {
    const { server } = stage;
    const made = (await create({ external_id: nextId(), email: 'old@example.com', first_name: 'Budi' })).body;
    const patch = (body: Record<string, unknown>, key = writeKey) => server.api('PATCH', `/admin/customers/ext:${made.external_id}/`, { body, headers: bearer(key) });
    const changed = await patch({ email: 'new@example.com', locale: 'en', reason: 'asked by email' });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ email: 'new@example.com', locale: 'en', first_name: 'Budi', external_id: made.external_id });
    expect((await patch({ email: 'new@example.com' })).status).toBe(200);
    const events = await dbOf(server).find(AuditEvent, { targetId: made.id }, { orderBy: { occurredAt: 'asc' } });
    expect(events.map((e) => e.action)).toEqual(['customer.create', 'customer.update']);
    expect(events[1]).toMatchObject({ reason: 'asked by email', changes: { email: ['old@example.com', 'new@example.com'], locale: [null, 'en'] } });

    const other = (await create({ external_id: nextId(), email: 'o@example.com' })).body;
    const taken = await patch({ external_id: other.external_id });
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ code: 'customer_exists' });
    expect((await patch({ locale: 'de' })).status).toBe(400);
    expect((await patch({})).status).toBe(400);
    expect((await patch({ email: 'z@example.com' }, readKey)).status).toBe(403);
    expect((await server.api('PATCH', '/admin/customers/ext:nobody-has-this/', { body: { email: 'z@example.com' }, headers: bearer(writeKey) })).status).toBe(404);
    expect((await server.api('GET', `/admin/customers/${made.id}/`, { headers: bearer(readKey) })).body.email).toBe('new@example.com');
  });

  it('a key sends a customer it made, named by ext:, to a checkout link', async () => {
    const { server } = stage;
    const made = (await create({ external_id: nextId(), email: 'pay@example.com' })).body;
    const link = await server.api('POST', '/checkout-sessions/', {
      body: { user: `ext:${made.external_id}`, plan_id: 'pro-monthly', success_url: `${server.url}/thanks`, cancel_url: `${server.url}/plans` },
      headers: bearer(writeKey),
    });
    expect(link.status, link.text).toBe(201);
    expect(link.body.url).toMatch(/\/pay\/[A-Za-z0-9_-]{43}\/$/);
  });

  it('billing-admin customers create, show, update and list: the same rules, the operator in the trail, a reason required', async () => {
    const { server } = stage;
    const externalId = nextId('cli');
    const made = await cli(['customers', 'create', '--external-id', externalId, '--email', 'cli@example.com', '--first-name', 'Dewi', '--reason', 'migrating from the old system']);
    expect(made.code, made.stderr).toBe(0);
    expect(made.json).toMatchObject({ username: externalId, external_id: externalId, email: 'cli@example.com', first_name: 'Dewi', has_password: false });
    const shown = await cli(['customers', 'show', `ext:${externalId}`]);
    expect(shown.json).toEqual(made.json);
    const updated = await cli(['customers', 'update', `ext:${externalId}`, '--locale', 'en', '--reason', 'asked for English']);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.json.locale).toBe('en');
    const listed = await cli(['customers', 'list', '--external-id', externalId]);
    expect(listed.json).toMatchObject({ count: 1, results: [{ id: made.json.id, locale: 'en' }] });
    const twin = await cli(['customers', 'create', '--external-id', externalId, '--email', 'cli@example.com', '--reason', 'again']);
    expect(twin.code).toBe(3);
    expect(twin.stderr).toContain(made.json.id);
    const noReason = await cli(['customers', 'create', '--external-id', nextId('cli'), '--email', 'cli@example.com']);
    expect(noReason.code).not.toBe(0);
    expect(noReason.stderr).toContain('--reason');
    const events = await dbOf(server).find(AuditEvent, { targetId: made.json.id }, { orderBy: { occurredAt: 'asc' } });
    expect(events.map((e) => [e.action, e.actorType, e.actorName, e.reason])).toEqual([
      ['customer.create', 'cli', 'ops-oncall', 'migrating from the old system'],
      ['customer.update', 'cli', 'ops-oncall', 'asked for English'],
    ]);
  });
});
