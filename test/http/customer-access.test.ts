import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { User } from '../../src/db/entities/user.js';
import { createApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf, simulate } from '../helpers/subscriptions.js';

/*
 * GET /admin/customers/{customer}/access/?path= lets an application in any language guard its
 * own paths: it answers what SubscriptionAccessMiddleware decides for that customer and path,
 * checked here against a request through the middleware itself on the same server.
 */

const PASSWORD = 'correct horse battery';
let serial = 0;

describe.each(DATABASES)('the access check for a customer and a path (%s)', { timeout: 180_000 }, (kind) => {
  let server: TestServer;
  let readKey: string;
  let writeKey: string;

  beforeAll(async () => {
    server = await startTestServer(kind, {
      env: { SUBSCRIPTION_PROTECTED_PATHS: '/api/v2/,/app/dashboard/', SUBSCRIPTION_REQUIRED_REDIRECT: '/subscribe/' },
    });
    await server.seedPlans(STANDARD_PLANS);
    const billing = server.running.billing;
    const ctx = () => ({ em: billing.orm.em.fork(), config: billing.config, clock: billing.clock });
    writeKey = (await createApiKey(ctx(), cliActor(), { name: 'host-app', scope: 'write' })).key;
    readKey = (await createApiKey(ctx(), cliActor(), { name: 'host-app-guard', scope: 'read' })).key;
  });
  afterAll(() => server?.stop());

  const newCustomer = async () => {
    const externalId = `access_${process.pid}_${++serial}`;
    const made = await server.api('POST', '/admin/customers/', {
      headers: { authorization: `Bearer ${writeKey}` },
      body: { external_id: externalId, email: `${externalId}@example.com`, password: PASSWORD },
    });
    expect(made.status, made.text).toBe(201);
    return { id: made.body.id as string, username: made.body.username as string, password: PASSWORD, ref: `ext:${externalId}` };
  };
  const check = (customer: string, path: string) =>
    server.api('GET', `/admin/customers/${encodeURIComponent(customer)}/access/?path=${encodeURIComponent(path)}`, { headers: { authorization: `Bearer ${readKey}` } });
  /** The middleware's own decision: a JSON request by the customer; passing it reaches no route (Koa's 404). */
  const middleware = async (customer: { username: string; password: string }, path: string) => {
    const res = await server.request('GET', path, { auth: customer, headers: { accept: 'application/json' } });
    if (res.status === 404) return true;
    expect(res.status).toBe(403);
    return false;
  };

  it('agrees with the middleware on a protected path before and after the customer pays, and on a path it does not protect', async () => {
    const customer = await newCustomer();
    const paths = ['/app/dashboard/reports/2027/', '/App/Dashboard', '/app/./dashboard/x?tab=1', '/api/v2/data/', '/app/dashboard-old/', '/pricing/'];
    const unprotected = new Set(['/app/dashboard-old/', '/pricing/']);
    for (const path of paths) {
      const answer = await check(customer.ref, path);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body, path).toEqual(unprotected.has(path) ? { allowed: true, reason: 'path_not_protected' } : { allowed: false, reason: 'subscription_required' });
      expect(await middleware(customer, path.split('?')[0]!), path).toBe(answer.body.allowed);
    }

    const made = await server.api('POST', '/subscriptions/', {
      headers: { authorization: `Bearer ${writeKey}`, 'billing-customer': customer.ref },
      body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' },
    });
    expect(made.status, made.text).toBe(201);
    // Subscribed but not paid: still no access.
    expect((await check(customer.id, '/app/dashboard/')).body).toEqual({ allowed: false, reason: 'subscription_required' });
    expect(await middleware(customer, '/app/dashboard/')).toBe(false);

    await simulate(server, made.body.payment.order_id, 'settle');
    for (const path of paths) {
      const answer = await check(customer.username, path);
      expect(answer.body, path).toEqual(unprotected.has(path) ? { allowed: true, reason: 'path_not_protected' } : { allowed: true, reason: 'subscription_active' });
      expect(await middleware(customer, path.split('?')[0]!), path).toBe(true);
    }

    const canceled = await server.api('POST', `/subscriptions/${made.body.subscription.id}/cancel/`, {
      headers: { authorization: `Bearer ${writeKey}`, 'billing-customer': customer.ref },
      body: { immediate: true },
    });
    expect(canceled.status, canceled.text).toBe(200);
    expect((await check(customer.ref, '/app/dashboard/')).body).toEqual({ allowed: false, reason: 'subscription_required' });
    expect(await middleware(customer, '/app/dashboard/')).toBe(false);
  });

  it('a staff user passes every protected path; a disabled customer passes none', async () => {
    const staff = await server.createUser({ isStaff: true });
    expect((await check(staff.username, '/app/dashboard/')).body).toEqual({ allowed: true, reason: 'staff' });
    expect(await middleware(staff, '/app/dashboard/')).toBe(true);

    const customer = await newCustomer();
    await dbOf(server).nativeUpdate(User, { id: customer.id }, { disabledAt: new Date() });
    expect((await check(customer.ref, '/app/dashboard/')).body).toEqual({ allowed: false, reason: 'customer_disabled' });
    expect((await check(customer.ref, '/pricing/')).body).toEqual({ allowed: true, reason: 'path_not_protected' });
    const denied = await server.request('GET', '/app/dashboard/', { auth: customer, headers: { accept: 'application/json' } });
    expect(denied.status).not.toBe(404);
  });

  it('path is required, starts with / and is at most 2,000 characters (400); an unknown customer 404; customers cannot ask', async () => {
    const customer = await newCustomer();
    const base = `/admin/customers/${customer.id}/access/`;
    const auth = { authorization: `Bearer ${readKey}` };
    for (const query of ['', '?path=', '?path=app/dashboard', `?path=/${'a'.repeat(2000)}`]) {
      const res = await server.api('GET', `${base}${query}`, { headers: auth });
      expect(res.status, query.slice(0, 30)).toBe(400);
      expect(res.body.code).toBe('validation_error');
      expect(res.body.errors[0].field).toBe('path');
    }
    expect((await server.api('GET', `${base}?path=/${'a'.repeat(1999)}`, { headers: auth })).status).toBe(200);
    const unknown = await server.api('GET', '/admin/customers/ext:nobody-has-this/access/?path=/app/', { headers: auth });
    expect(unknown.status).toBe(404);
    const asCustomer = await server.api('GET', `${base}?path=/app/dashboard/`, { auth: customer });
    expect(asCustomer.status).toBe(404);
  });
});
