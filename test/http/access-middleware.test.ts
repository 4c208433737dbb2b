import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subscriptionAccessMiddleware } from '../../src/http/access-middleware.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { activeSubscription, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';

const AUTH_REQUIRED = { error: 'Authentication required.', code: 'subscription_required' };
const SUBSCRIPTION_REQUIRED = { error: 'Active subscription required.', code: 'subscription_required' };

/** An example setting: PROTECTED_PATHS = [/api/v2/, /app/dashboard/], redirect /subscribe/. */
describe.each(DATABASES)('SubscriptionAccessMiddleware in the service on %s', (kind) => {
  let server: TestServer;
  let noSubscription: TestUser;
  beforeAll(async () => {
    server = await startTestServer(kind, {
      env: { SUBSCRIPTION_PROTECTED_PATHS: '/api/v2/,/app/dashboard/', SUBSCRIPTION_REQUIRED_REDIRECT: '/subscribe/' },
    });
    await server.seedPlans(STANDARD_PLANS);
    noSubscription = await server.createUser();
  });
  afterAll(() => server?.stop());

  /** Passing the middleware reaches the host's routes; this server has none there, so Koa's 404. */
  const passes = (res: { status: number }) => expect(res.status).toBe(404);

  describe('API requests are denied with 403 and exactly {error, code}', () => {
    it('/api/v2/data/ without credentials', async () => {
      const res = await server.request('GET', '/api/v2/data/');
      expect(res.status).toBe(403);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual(AUTH_REQUIRED);
    });

    it('/api/v2/data/ for a user without a subscription', async () => {
      const res = await server.request('GET', '/api/v2/data/', { auth: noSubscription });
      expect(res.status).toBe(403);
      expect(res.body).toEqual(SUBSCRIPTION_REQUIRED);
    });

    it.each([
      ['Accept: application/json', { accept: 'application/json' }],
      ['Accept: application/json; charset=utf-8', { accept: 'application/json; charset=utf-8' }],
      ['Content-Type: application/json', { 'content-type': 'application/json' }],
    ])('a non-/api/ protected path is an API request with %s', async (_what, headers) => {
      const anonymous = await server.request('GET', '/app/dashboard/', { headers });
      expect(anonymous.status).toBe(403);
      expect(anonymous.body).toEqual(AUTH_REQUIRED);
      const signedIn = await server.request('GET', '/app/dashboard/', { headers, auth: noSubscription });
      expect(signedIn.status).toBe(403);
      expect(signedIn.body).toEqual(SUBSCRIPTION_REQUIRED);
    });

    it('unsafe methods are denied the same way', async () => {
      const res = await server.request('POST', '/api/v2/data/', { auth: noSubscription, body: { x: 1 } });
      expect(res.status).toBe(403);
      expect(res.body).toEqual(SUBSCRIPTION_REQUIRED);
    });
  });

  describe('other requests are redirected to SUBSCRIPTION_REQUIRED_REDIRECT', () => {
    it.each([
      ['/app/dashboard/', {}],
      ['/app/dashboard', {}],
      ['/app/dashboard/reports/2026/', {}],
      ['//app//dashboard', {}],
      ['/app/./dashboard/', {}],
      ['/app/x/../dashboard/', {}],
      ['/app/%64ashboard/', {}],
      ['/App/Dashboard/', {}],
      ['/app/dashboard/', { accept: 'text/html,application/xhtml+xml' }],
      ['/app/dashboard/', { accept: 'text/html, application/json' }],
    ])('%s %j', async (path, headers) => {
      for (const auth of [undefined, noSubscription]) {
        const res = await server.request('GET', path, { headers, auth });
        expect(res.status).toBe(302);
        expect(res.headers.get('location')).toBe('/subscribe/');
      }
    });
  });

  describe('unprotected paths pass unchanged', () => {
    it.each(['/api/v1/public/', '/admin/', '/app/', '/app/dash', '/app/dashboards/', '/api/v2data/', '/subscribe/'])('%s', async (path) => {
      passes(await server.request('GET', path));
      passes(await server.request('GET', path, { auth: noSubscription, headers: { accept: 'application/json' } }));
    });

    it('the billing API itself is not protected here', async () => {
      const res = await server.api('GET', '/plans/');
      expect(res.status).toBe(200);
      expect((await server.api('GET', '/subscriptions/', { auth: noSubscription })).status).toBe(200);
    });
  });

  describe('who passes a protected path', () => {
    it('a staff user, without any subscription', async () => {
      const staff = await server.createUser({ isStaff: true });
      passes(await server.request('GET', '/api/v2/data/', { auth: staff }));
      passes(await server.request('GET', '/app/dashboard/', { auth: staff }));
    });

    it('a user with an active subscription, until it is canceled', async () => {
      const user = await server.createUser();
      const { subscription } = await activeSubscription(server, user);
      passes(await server.request('GET', '/api/v2/data/', { auth: user }));
      passes(await server.request('GET', '/app/dashboard/', { auth: user }));
      await server.api('POST', `/subscriptions/${subscription.id}/cancel/`, { auth: user, body: { immediate: true } });
      const res = await server.request('GET', '/api/v2/data/', { auth: user });
      expect(res.status).toBe(403);
      expect(res.body).toEqual(SUBSCRIPTION_REQUIRED);
    });

    it('a user whose subscription will cancel at the period end keeps access meanwhile', async () => {
      const user = await server.createUser();
      const { subscription } = await activeSubscription(server, user);
      await server.api('POST', `/subscriptions/${subscription.id}/cancel/`, { auth: user, body: { immediate: false } });
      passes(await server.request('GET', '/api/v2/data/', { auth: user }));
    });

    it('a trialing user', async () => {
      const user = await server.createUser();
      expect((await subscribe(server, user, { plan_id: 'pro-trial', payment_type: 'qris' })).body.subscription.status).toBe('trialing');
      passes(await server.request('GET', '/api/v2/data/', { auth: user }));
    });

    it('a user signed in with a session cookie', async () => {
      const user = await server.createUser();
      await activeSubscription(server, user);
      const session = await server.login(user);
      passes(await server.request('GET', '/api/v2/data/', { session }));
      const other = await server.login(noSubscription);
      const denied = await server.request('GET', '/api/v2/data/', { session: other });
      expect(denied.status).toBe(403);
      expect(denied.body).toEqual(SUBSCRIPTION_REQUIRED);
    });

    it.each(['pending', 'past_due', 'paused', 'canceled'])('not a user whose subscription is %s', async (status) => {
      const user = await server.createUser();
      if (status === 'pending' || status === 'past_due') {
        const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
        if (status === 'past_due') await simulate(server, created.body.payment.order_id, 'expire');
      } else {
        const { subscription } = await activeSubscription(server, user);
        if (status === 'paused') await server.api('POST', `/subscriptions/${subscription.id}/pause/`, { auth: user });
        else await server.api('POST', `/subscriptions/${subscription.id}/cancel/`, { auth: user, body: { immediate: true } });
      }
      const sub = (await server.api('GET', '/subscriptions/', { auth: user })).body.results[0];
      expect(sub.status).toBe(status);
      const api = await server.request('GET', '/api/v2/data/', { auth: user });
      expect(api.status).toBe(403);
      expect(api.body).toEqual(SUBSCRIPTION_REQUIRED);
      const page = await server.request('GET', '/app/dashboard/', { auth: user });
      expect(page.status).toBe(302);
      expect(page.headers.get('location')).toBe('/subscribe/');
    });
  });
});

describe('SubscriptionAccessMiddleware mounted by a host Koa application', () => {
  let url: string;
  let close: () => Promise<void>;
  const subscribed = new Set(['alice']);
  beforeAll(async () => {
    const app = new Koa();
    // The host's own authentication: a header names the user; "root" is staff.
    app.use(async (ctx, next) => {
      const name = ctx.get('x-user');
      ctx.state.hostUser = name ? { id: name, isStaff: name === 'root' } : null;
      await next();
    });
    app.use(
      subscriptionAccessMiddleware({
        settings: { PROTECTED_PATHS: ['/api/v2/', '/app/dashboard/'], SUBSCRIPTION_REQUIRED_REDIRECT: '/pricing/' },
        getUser: (ctx) => ctx.state.hostUser,
        hasAccess: async (user) => subscribed.has(user.id),
      }),
    );
    app.use((ctx) => {
      ctx.body = { reached: ctx.path };
    });
    const listener = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => listener.once('listening', resolve));
    url = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
    close = () => new Promise((resolve) => listener.close(() => resolve()));
  });
  afterAll(() => close?.());

  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${url}${path}`, { headers, redirect: 'manual' });
    const text = await res.text();
    const json = /json/.test(res.headers.get('content-type') ?? '');
    return { status: res.status, location: res.headers.get('location'), body: json ? JSON.parse(text) : text };
  };

  it('applies the host settings: its redirect, its users, its access check', async () => {
    expect(await get('/api/v2/x/')).toMatchObject({ status: 403, body: AUTH_REQUIRED });
    expect(await get('/api/v2/x/', { 'x-user': 'bob' })).toMatchObject({ status: 403, body: SUBSCRIPTION_REQUIRED });
    expect(await get('/app/dashboard/', { 'x-user': 'bob' })).toMatchObject({ status: 302, location: '/pricing/' });
    expect(await get('/api/v2/x/', { 'x-user': 'alice' })).toMatchObject({ status: 200, body: { reached: '/api/v2/x/' } });
    expect(await get('/app/dashboard/', { 'x-user': 'root' })).toMatchObject({ status: 200 });
    expect(await get('/admin/')).toMatchObject({ status: 200, body: { reached: '/admin/' } });
  });
});
