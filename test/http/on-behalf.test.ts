import { beforeAll, describe, expect, it } from 'vitest';
import { AuditEvent } from '../../src/db/entities/audit-event.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { User } from '../../src/db/entities/user.js';
import { createApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { DATABASES } from '../helpers/database.js';
import { loadContract } from '../helpers/reliability/contract.js';
import { dbOf, serverOnClock, simulate } from '../helpers/subscriptions.js';

/*
 * An integrator's backend acts for its customers with one API key and the Billing-Customer
 * header: each request runs as that customer's own. A write key acts, a read key only reads; a
 * key alone is no customer (400), an unknown one 404; one customer's records stay out of
 * another's reach; Idempotency-Key holds per key and customer.
 */

const PASSWORD = 'correct horse battery';
let serial = 0;
const nextId = (prefix = 'on_behalf') => `${prefix}_${process.pid}_${++serial}`;

describe.each(DATABASES)('acting for a customer with an API key (%s)', { timeout: 180_000 }, (kind) => {
  const stage = serverOnClock(kind, new Date('2027-03-01T03:00:00.000Z'));
  let writeKey: string;
  let readKey: string;

  beforeAll(async () => {
    const billing = stage.server.running.billing;
    const ctx = () => ({ em: billing.orm.em.fork(), config: billing.config, clock: billing.clock });
    writeKey = (await createApiKey(ctx(), cliActor(), { name: 'shop-backend', scope: 'write' })).key;
    readKey = (await createApiKey(ctx(), cliActor(), { name: 'shop-reports', scope: 'read' })).key;
  });

  /** A customer made by the backend, with a password so that their own view can be compared. */
  const newCustomer = async () => {
    const externalId = nextId();
    const made = await stage.server.api('POST', '/admin/customers/', {
      headers: { authorization: `Bearer ${writeKey}` },
      body: { external_id: externalId, email: `${externalId}@example.com`, password: PASSWORD },
    });
    expect(made.status, made.text).toBe(201);
    return { id: made.body.id as string, username: made.body.username as string, password: PASSWORD, ref: `ext:${externalId}` };
  };
  const as = (key: string, customer?: string, headers: Record<string, string> = {}) => ({
    authorization: `Bearer ${key}`,
    ...(customer === undefined ? {} : { 'billing-customer': customer }),
    ...headers,
  });

  it('a write key subscribes, changes plan and cancels for a customer named by ext:; the customer sees the same subscription; the audit trail names the key on behalf of the customer', async () => {
    const { server } = stage;
    const customer = await newCustomer();
    const made = await server.api('POST', '/subscriptions/', { headers: as(writeKey, customer.ref), body: { plan_id: 'pro-monthly', payment_type: 'bank_transfer' } });
    expect(made.status, made.text).toBe(201);
    const subscriptionId = made.body.subscription.id as string;
    await simulate(server, made.body.payment.order_id, 'settle');

    const own = await server.api('GET', '/subscriptions/', { auth: customer });
    expect(own.body.results.map((s: { id: string }) => s.id)).toEqual([subscriptionId]);
    expect(own.body.results[0]).toMatchObject({ status: 'active', plan: { slug: 'pro-monthly' } });
    const byKey = await server.api('GET', '/subscriptions/', { headers: as(writeKey, customer.id) });
    expect(byKey.body).toEqual(own.body);

    const changed = await server.api('POST', `/subscriptions/${subscriptionId}/change-plan/`, {
      headers: as(writeKey, customer.username),
      body: { plan_id: 'basic-monthly', immediate: true },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.subscription).toMatchObject({ id: subscriptionId, plan: { slug: 'basic-monthly' } });

    const canceled = await server.api('POST', `/subscriptions/${subscriptionId}/cancel/`, { headers: as(writeKey, customer.ref), body: { immediate: true } });
    expect(canceled.status, canceled.text).toBe(200);
    const seen = await server.api('GET', `/subscriptions/${subscriptionId}/`, { auth: customer });
    expect(seen.body).toMatchObject({ status: 'canceled', plan: { slug: 'basic-monthly' } });

    const events = await dbOf(server).find(AuditEvent, { targetId: customer.id, action: { $like: 'on_behalf.%' } }, { orderBy: { occurredAt: 'asc' } });
    expect(events.map((e) => e.action)).toEqual(['on_behalf.createSubscription', 'on_behalf.changeSubscriptionPlan', 'on_behalf.cancelSubscription']);
    for (const event of events) {
      expect(event).toMatchObject({ actorType: 'api_key', actorName: 'shop-backend', targetType: 'customer', requestId: expect.any(String) });
      expect(event.changes.on_behalf_of).toEqual([null, customer.id]);
    }
    expect(events[2]!.changes.resource).toEqual([null, subscriptionId]);
  });

  it('a read key reads for a customer but cannot act (403 insufficient_scope, nothing made)', async () => {
    const { server } = stage;
    const customer = await newCustomer();
    for (const path of ['/subscriptions/', '/payments/', '/invoices/', '/credit-notes/', '/notifications/', '/wallet/me/', '/wallet/transactions/', '/topups/']) {
      const read = await server.api('GET', path, { headers: as(readKey, customer.ref) });
      expect(read.status, `${path} ${read.text}`).toBe(200);
    }
    const refused = await server.api('POST', '/subscriptions/', { headers: as(readKey, customer.ref), body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('insufficient_scope');
    const link = await server.api('POST', '/portal-sessions/', { headers: as(readKey, customer.ref), body: { return_url: `${server.url}/back` } });
    expect(link.status).toBe(403);
    expect(await dbOf(server).count(Subscription, { user: customer.id })).toBe(0);
  });

  it('a key without Billing-Customer gets 400 naming the header; an unknown customer 404; the header with the customer\'s own credentials 400; a disabled customer 401', async () => {
    const { server } = stage;
    const customer = await newCustomer();
    const bare = await server.api('GET', '/subscriptions/', { headers: as(writeKey) });
    expect(bare.status).toBe(400);
    expect(bare.body).toMatchObject({ code: 'validation_error', errors: [{ field: 'Billing-Customer' }] });
    const bareWrite = await server.api('POST', '/subscriptions/', { headers: as(writeKey), body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
    expect(bareWrite.status).toBe(400);
    expect(bareWrite.body.errors[0].field).toBe('Billing-Customer');

    for (const ref of ['ext:nobody-has-this', 'nobody-has-this', '00000000-0000-4000-8000-000000000000', 'ext:']) {
      const unknown = await server.api('GET', '/subscriptions/', { headers: as(readKey, ref) });
      expect(unknown.status, ref).toBe(404);
      expect(unknown.body.code).toBe('not_found');
    }

    // Public operations need no customer: there the header is not read.
    expect((await server.api('GET', '/plans/', { headers: as(readKey, 'ext:nobody-has-this') })).status).toBe(200);

    const own = await server.api('GET', '/subscriptions/', { auth: customer, headers: { 'billing-customer': customer.ref } });
    expect(own.status).toBe(400);
    expect(own.body.errors[0].field).toBe('Billing-Customer');

    // The staff API names its customers itself: the header is ignored there.
    const staff = await server.api('GET', '/admin/subscriptions/', { headers: as(readKey, 'ext:nobody-has-this') });
    expect(staff.status).toBe(200);

    await dbOf(server).nativeUpdate(User, { id: customer.id }, { disabledAt: new Date() });
    const disabled = await server.api('GET', '/subscriptions/', { headers: as(readKey, customer.ref) });
    expect(disabled.status).toBe(401);
    expect(disabled.body.code).toBe('not_authenticated');
    expect((await server.api('GET', '/subscriptions/', { auth: customer })).status).toBe(401);
  });

  it('on every customer operation of openapi.yaml: no header 400, an unknown customer 404, a disabled one 401, a read key acting 403 or 400 (a documented answer each, never a 5xx)', async () => {
    const { server } = stage;
    const contract = loadContract();
    const customerOps = contract.operations.filter((op) => op.params.some((p) => p.in === 'header' && p.name === 'Billing-Customer'));
    expect(customerOps.length).toBeGreaterThanOrEqual(30);
    const customer = await newCustomer();
    const disabled = await newCustomer();
    await dbOf(server).nativeUpdate(User, { id: disabled.id }, { disabledAt: new Date() });
    for (const op of customerOps) {
      const path = op.path.replace(/\{\w+\}/g, '00000000-0000-4000-8000-000000000000');
      const send = (headers: Record<string, string>) =>
        server.api(op.method, path, { headers: { ...headers, 'content-type': 'application/json' }, ...(op.method === 'GET' ? {} : { body: {} }) });
      const expectAnswer = async (headers: Record<string, string>, status: number) => {
        const res = await send(headers);
        expect(res.status, `${op.id} ${res.text}`).toBe(status);
        expect(contract.check(op, res.status, res.headers.get('content-type')?.split(';')[0] ?? null, res.body), op.id).toEqual([]);
      };
      await expectAnswer(as(writeKey), 400);
      await expectAnswer(as(writeKey, 'ext:nobody-has-this'), 404);
      await expectAnswer(as(readKey, disabled.ref), 401);
      if (op.method !== 'GET') {
        const res = await send(as(readKey, customer.ref));
        expect([400, 403], `${op.id} ${res.text}`).toContain(res.status);
      }
    }
  });

  it('a key acting for customer A cannot read or act on customer B\'s subscription (404, as for A themselves)', async () => {
    const { server } = stage;
    const a = await newCustomer();
    const b = await newCustomer();
    const bs = await server.api('POST', '/subscriptions/', { headers: as(writeKey, b.ref), body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
    expect(bs.status).toBe(201);
    const id = bs.body.subscription.id as string;
    const asA = await server.api('GET', `/subscriptions/${id}/`, { headers: as(readKey, a.ref) });
    expect(asA.status).toBe(404);
    expect((await server.api('GET', `/subscriptions/${id}/`, { auth: a })).status).toBe(404);
    const cancelAsA = await server.api('POST', `/subscriptions/${id}/cancel/`, { headers: as(writeKey, a.ref), body: { immediate: true } });
    expect(cancelAsA.status).toBe(404);
    const payment = await server.api('GET', `/payments/${bs.body.payment.id}/`, { headers: as(readKey, a.ref) });
    expect(payment.status).toBe(404);
    expect((await server.api('GET', `/subscriptions/${id}/`, { headers: as(readKey, b.ref) })).body.status).toBe('pending');
  });

  it('forty subscribes at once by one key for one customer under one Idempotency-Key make one subscription; the same key for another customer is another request', async () => {
    const { server } = stage;
    const customer = await newCustomer();
    const other = await newCustomer();
    const key = nextId('idem');
    const body = { plan_id: 'basic-monthly', payment_type: 'bank_transfer' };
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => server.api('POST', '/subscriptions/', { headers: as(writeKey, customer.ref, { 'idempotency-key': key }), body })),
    );
    const made = answers.filter((r) => r.status === 201);
    expect(made.length).toBeGreaterThan(0);
    for (const r of answers) expect([201, 409], r.text).toContain(r.status);
    expect(new Set(made.map((r) => r.body.subscription.id)).size).toBe(1);
    expect(await dbOf(server).count(Subscription, { user: customer.id })).toBe(1);

    const replay = await server.api('POST', '/subscriptions/', { headers: as(writeKey, customer.ref, { 'idempotency-key': key }), body });
    expect(replay.status).toBe(201);
    expect(replay.body.subscription.id).toBe(made[0]!.body.subscription.id);

    const forOther = await server.api('POST', '/subscriptions/', { headers: as(writeKey, other.ref, { 'idempotency-key': key }), body });
    expect(forOther.status, forOther.text).toBe(201);
    expect(forOther.body.subscription.id).not.toBe(made[0]!.body.subscription.id);
    expect(await dbOf(server).count(Subscription, { user: other.id })).toBe(1);
    // The customer's own requests are not the key's: the same Idempotency-Key replays nothing of it.
    const ownAttempt = await server.api('POST', '/subscriptions/', { auth: customer, headers: { 'idempotency-key': key }, body });
    expect(ownAttempt.body.subscription?.id).not.toBe(made[0]!.body.subscription.id);
  });

  it('checkout and portal links for a customer: by the header, by the body\'s user as before, by both when they agree; 400 when they disagree', async () => {
    const { server } = stage;
    const customer = await newCustomer();
    const other = await newCustomer();
    const checkout = { plan_id: 'basic-monthly', success_url: `${server.url}/ok`, cancel_url: `${server.url}/cancel` };
    const byHeader = await server.api('POST', '/checkout-sessions/', { headers: as(writeKey, customer.ref), body: checkout });
    expect(byHeader.status, byHeader.text).toBe(201);
    const byBody = await server.api('POST', '/checkout-sessions/', { headers: as(writeKey), body: { ...checkout, user: customer.ref } });
    expect(byBody.status, byBody.text).toBe(201);
    const both = await server.api('POST', '/portal-sessions/', { headers: as(writeKey, customer.id), body: { return_url: `${server.url}/back`, user: customer.ref } });
    expect(both.status, both.text).toBe(201);
    const disagree = await server.api('POST', '/portal-sessions/', { headers: as(writeKey, customer.ref), body: { return_url: `${server.url}/back`, user: other.ref } });
    expect(disagree.status).toBe(400);
    expect(disagree.body.errors[0].field).toBe('user');
    const neither = await server.api('POST', '/portal-sessions/', { headers: as(writeKey), body: { return_url: `${server.url}/back` } });
    expect(neither.status).toBe(400);
  });
});
