import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Session as SessionRow } from '../../src/db/entities/infrastructure.js';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Plan } from '../../src/db/entities/plan.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { accessRules } from '../../src/services/subscriptions/has-access.js';
import { quietLogger } from '../../src/logger.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { sendRaw as send, type Raw } from '../helpers/raw-http.js';
import { DATABASES, type DatabaseKind } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type Credentials, type Session, type TestServer } from '../helpers/server.js';
import { activeSubscription, dbOf, openInvoice, type TestUser } from '../helpers/subscriptions.js';

/*
 * The fast path of the polled customer reads (src/http/hot-reads.ts) against the normal path,
 * request for request: two servers over the same database, one with the fast path and one
 * without, each asked the same thing; status, every header but Date, and the body must be the
 * same bytes. The normal server checks every answer against openapi.yaml, so an equal answer is
 * also the contract's. `served` proves which requests the fast path answered itself.
 */

const ORIGIN = 'https://app.example';
/** Fixed for `npm test`; PROPERTY_SEED replays or varies it. */
const PROPERTY_SEED = Number(process.env.PROPERTY_SEED ?? 43);


const basic = (c: Credentials) => `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;
/** Everything but the Date header, a request id the server made up, and a renewed cookie's own expiry instant (to the minute). */
function comparable(r: Raw) {
  const { date: _date, ...headers } = r.headers;
  if (typeof headers['x-request-id'] === 'string') headers['x-request-id'] = headers['x-request-id'].replace(/^[0-9a-f-]{36}$/, '(made up)');
  const setCookie = (headers['set-cookie'] ?? []) as string[];
  if (setCookie.length > 0) headers['set-cookie'] = setCookie.map((c) => c.replace(/expires=([^;]+)/i, (_m, d: string) => `expires~${Math.round(Date.parse(d) / 60_000)}`));
  return { status: r.status, headers, text: r.text };
}

describe.each(DATABASES)('hot reads answer as the normal path does (%s)', (kind: DatabaseKind) => {
  let setup: TestServer;
  let hot: RunningServer;
  let normal: RunningServer;
  let served: string[] = [];
  /** The fast path's answers sent again from memory (src/http/answer-cache.ts). */
  const kept: string[] = [];
  let customer: TestUser;
  let session: Session;

  beforeAll(async () => {
    setup = await startTestServer(kind, { env: { CORS_ORIGINS: ORIGIN } });
    await setup.seedPlans(STANDARD_PLANS);
    hot = await startServer({ ...setup.config }, { logger: quietLogger, validateResponses: true, onHotRead: (op, fromMemory) => {
        served.push(op);
        if (fromMemory) kept.push(op);
      },
    });
    normal = await startServer({ ...setup.config }, { logger: quietLogger, validateResponses: true, hotReads: false });
    customer = await setup.createUser();
    await activeSubscription(setup, customer);
    session = await setup.login(customer);
    // Three servers, each compiling the contract: minutes on a busy machine.
  }, 600_000);
  afterAll(async () => {
    await hot?.stop();
    await normal?.stop();
    await setup?.stop();
  });

  /** Asks both servers; expects equal answers; returns the hot server's and whether the fast path answered it. */
  async function both(method: string, path: string, headers: Record<string, string> = {}): Promise<Raw & { fast: boolean }> {
    const before = served.length;
    const fromHot = await send(hot, method, `/api/subscriptions${path}`, headers);
    const fast = served.length > before;
    const fromNormal = await send(normal, method, `/api/subscriptions${path}`, headers);
    expect(comparable(fromHot), `${method} ${path} ${JSON.stringify(headers)}`).toEqual(comparable(fromNormal));
    return { ...fromHot, fast };
  }

  it('answers both reads by Basic and by session itself, byte for byte as the normal path, with or without the trailing slash and a CORS origin', async () => {
    // The first Basic request verifies the password (normal path) and fills the credential cache.
    await both('GET', '/subscriptions/active/', { authorization: basic(customer) });
    for (const path of ['/subscriptions/active/', '/subscriptions/active', '/payments/', '/payments']) {
      for (const auth of [{ authorization: basic(customer) }, { cookie: session.cookie }] as Record<string, string>[]) {
        for (const extra of [{}, { origin: ORIGIN }, { origin: 'https://evil.example' }, { accept: 'application/json' }] as Record<string, string>[]) {
          const answer = await both('GET', path, { ...auth, ...extra });
          expect(answer.status).toBe(200);
          expect(answer.fast, `${path} ${JSON.stringify(auth)}`).toBe(true);
        }
      }
    }
    const active = JSON.parse((await both('GET', '/subscriptions/active/', { cookie: session.cookie })).text);
    expect(active.status).toBe('active');
    const page = JSON.parse((await both('GET', '/payments/', { authorization: basic(customer) })).text);
    expect(page.count).toBe(1);
    expect(page.results[0].status).toBe('settled');
  });

  it('leaves to the normal path what it has to validate or cannot answer from memory: same answers', async () => {
    const cases: [string, string, Record<string, string>][] = [
      ['HEAD', '/subscriptions/active/', { authorization: basic(customer) }],
      ['GET', '/subscriptions/active/?', { authorization: basic(customer) }],
      ['GET', '/subscriptions/active/?x=1', { cookie: session.cookie }],
      ['GET', '/payments/?page=1', { authorization: basic(customer) }],
      ['GET', '/payments/?page=2', { cookie: session.cookie }],
      ['GET', '/payments/?page=abc', { authorization: basic(customer) }],
      ['GET', '/payments/?status=nonsense', { authorization: basic(customer) }],
      ['GET', '/payments/?status=settlement&page_size=1', { authorization: basic(customer) }],
      ['GET', '/payments/', { authorization: basic(customer), 'billing-customer': customer.username }],
      ['GET', '/payments/', { authorization: basic(customer), 'billing-customer': '' }],
      ['GET', '/subscriptions/active/', {}],
      ['GET', '/subscriptions/active/', { origin: ORIGIN }],
      ['GET', '/subscriptions/active/', { authorization: 'Bearer nonsense' }],
      ['GET', '/subscriptions/active/', { authorization: 'Basic !!!' }],
      ['GET', '/subscriptions/active/', { authorization: basic({ username: customer.username, password: 'wrong' }) }],
      ['GET', '/payments/', { authorization: basic(customer), cookie: session.cookie }],
      ['GET', '/payments/', { cookie: session.cookie.replace(/billing\.sid\.sig=[^;]+/, 'billing.sid.sig=forged') }],
      ['GET', '/payments/', { cookie: session.cookie.replace(/billing\.sid=[^;]+/, 'billing.sid=someone-else') }],
      ['GET', '/subscriptions//active/', { authorization: basic(customer) }],
      ['GET', '/subscriptions/./active/', { cookie: session.cookie }],
    ];
    for (const [method, path, headers] of cases) {
      const answer = await both(method, path, headers);
      const oddPath = path.includes('//') || path.includes('/./');
      // Paths that canonical-path.ts rewrites to the exact one may be answered fast; nothing else is.
      if (!oddPath) expect(answer.fast, `${method} ${path} ${JSON.stringify(headers)}`).toBe(false);
    }
  });

  it('staff and customers without an active subscription: same answers (staff through the normal path)', async () => {
    const staff = await setup.createUser({ isStaff: true });
    const nobody = await setup.createUser();
    await both('GET', '/subscriptions/active/', { authorization: basic(staff) });
    await both('GET', '/subscriptions/active/', { authorization: basic(nobody) });
    const staffRead = await both('GET', '/payments/', { authorization: basic(staff) });
    expect(staffRead.fast).toBe(false);
    const none = await both('GET', '/subscriptions/active/', { authorization: basic(nobody) });
    expect(none.status).toBe(404);
    expect(none.fast).toBe(false);
    const empty = await both('GET', '/payments/', { cookie: (await setup.login(nobody)).cookie });
    expect(empty.status).toBe(200);
    expect(empty.fast).toBe(true);
  });

  it('a session due for renewal goes through koa-session, which renews it; an expired one is refused: the same on both', async () => {
    const user = await setup.createUser();
    const own = await setup.login(user);
    const key = decodeURIComponent(/billing\.sid=([^;]+)/.exec(own.cookie)![1]);
    const em = dbOf(setup).fork();
    const row = await em.findOneOrFail(SessionRow, { id: key });
    const data = JSON.parse(row.data) as Record<string, unknown>;
    const dueFor = async (expireInMs: number) => {
      await em.nativeUpdate(SessionRow, { id: key }, { data: JSON.stringify({ ...data, _expire: Date.now() + expireInMs }) });
    };
    // Each server renews the row it reads; put the same due session back before each.
    await dueFor(24 * 60 * 60 * 1000);
    const before = served.length;
    const renewedHot = await send(hot, 'GET', '/api/subscriptions/payments/', { cookie: own.cookie });
    expect(served.length).toBe(before);
    await dueFor(24 * 60 * 60 * 1000);
    const renewedNormal = await send(normal, 'GET', '/api/subscriptions/payments/', { cookie: own.cookie });
    expect(renewedHot.headers['set-cookie']).toBeDefined();
    expect(comparable(renewedHot)).toEqual(comparable(renewedNormal));
    await dueFor(-1000);
    const expired = await both('GET', '/payments/', { cookie: own.cookie });
    expect(expired.status).toBe(401);
  });

  it('logout, a password change and a cancellation act at the next request, as on the normal path', async () => {
    const user = await setup.createUser();
    await activeSubscription(setup, user);
    const own = await setup.login(user);
    const other = await setup.login(user);
    expect((await both('GET', '/subscriptions/active/', { cookie: own.cookie })).fast).toBe(true);
    expect((await setup.api('POST', '/auth/logout/', { session: own })).status).toBeLessThan(300);
    const loggedOut = await both('GET', '/subscriptions/active/', { cookie: own.cookie });
    expect(loggedOut.status).toBe(401);

    await both('GET', '/subscriptions/active/', { authorization: basic(user) });
    expect((await both('GET', '/subscriptions/active/', { authorization: basic(user) })).fast).toBe(true);
    const changed = await setup.api('POST', '/auth/password/', { auth: user, body: { current_password: user.password, new_password: 'a brand new passphrase' } });
    expect(changed.status).toBe(204);
    expect((await both('GET', '/subscriptions/active/', { authorization: basic(user) })).status).toBe(401);
    expect((await both('GET', '/payments/', { cookie: other.cookie })).status).toBe(401);
    const renamed = { ...user, password: 'a brand new passphrase' };

    await both('GET', '/subscriptions/active/', { authorization: basic(renamed) });
    expect((await both('GET', '/subscriptions/active/', { authorization: basic(renamed) })).fast).toBe(true);
    const subscription = JSON.parse((await both('GET', '/subscriptions/active/', { authorization: basic(renamed) })).text);
    const cancelled = await setup.api('POST', `/subscriptions/${subscription.id}/cancel/`, { auth: renamed, body: { immediate: true } });
    expect(cancelled.status).toBe(200);
    const gone = await both('GET', '/subscriptions/active/', { authorization: basic(renamed) });
    expect(gone.status).toBe(404);
    expect(gone.fast).toBe(false);
    expect((await both('GET', '/payments/', { authorization: basic(renamed) })).fast).toBe(true);
  });

  it('a kept answer is sent again only while nothing it was read from changed: a change made anywhere shows at the next request', async () => {
    const user = await setup.createUser();
    const { subscription, payment } = await activeSubscription(setup, user);
    const auth = { authorization: basic(user) };
    const em = dbOf(setup);
    const grace = accessRules(setup.config).graceMinutes * 60_000;
    /** Asks both servers until the fast path sends its kept answer (the first asks verify the credential and keep it). */
    async function keptAnswer(path: string): Promise<Raw> {
      for (let i = 0; i < 3; i++) {
        const before = kept.length;
        const answer = await both('GET', path, auth);
        if (kept.length > before) return answer;
      }
      throw new Error(`${path} was never sent from memory`);
    }
    /** Asks both once: the first answer after a change, which must already be the normal path's. */
    const next = (path: string) => both('GET', path, auth);

    // A payment changed by another process (here: plain SQL through another server's connection).
    await keptAnswer('/payments/');
    await em.nativeUpdate(Payment, { id: payment.id }, { failureReason: 'changed elsewhere' });
    expect((await next('/payments/')).text).toContain('changed elsewhere');

    // The subscription's own row, and one of its plans: the catalogue's version.
    await keptAnswer('/subscriptions/active/');
    await em.nativeUpdate(Subscription, { id: subscription.id }, { metadata: { changed: 'elsewhere' } });
    expect(JSON.parse((await next('/subscriptions/active/')).text).metadata).toEqual({ changed: 'elsewhere' });
    await keptAnswer('/subscriptions/active/');
    const planName = subscription.plan.name as string;
    await em.nativeUpdate(Plan, { id: subscription.plan.id }, { name: `${planName} (renamed)` });
    try {
      expect(JSON.parse((await next('/subscriptions/active/')).text).plan.name).toBe(`${planName} (renamed)`);
    } finally {
      await em.nativeUpdate(Plan, { id: subscription.plan.id }, { name: planName });
    }

    // Access held only by an open renewal invoice: voiding it ends access at once, on both.
    await em.nativeUpdate(Subscription, { id: subscription.id }, { currentPeriodEnd: new Date(Date.now() - grace - 60_000) });
    const invoiceId = await openInvoice(setup, subscription.id, '1000.00');
    expect((await keptAnswer('/subscriptions/active/')).status).toBe(200);
    await em.nativeUpdate(Invoice, { id: invoiceId }, { status: 'void' });
    expect((await next('/subscriptions/active/')).status).toBe(404);

    // Nothing changes, but the access ends: the kept answer ends with it.
    await em.nativeUpdate(Subscription, { id: subscription.id }, { currentPeriodEnd: new Date(Date.now() - grace + 1_500) });
    expect((await keptAnswer('/subscriptions/active/')).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    expect((await next('/subscriptions/active/')).status).toBe(404);
  });

  it('property: through any sequence of writes made elsewhere, each answer of the fast path, kept or not, is the normal path\'s', async () => {
    const user = await setup.createUser();
    const { subscription, payment } = await activeSubscription(setup, user);
    const auth = { authorization: basic(user) };
    const em = () => dbOf(setup);
    const grace = accessRules(setup.config).graceMinutes * 60_000;
    const planId = subscription.plan.id as string;
    const planName = subscription.plan.name as string;
    type Step =
      | { kind: 'read'; path: '/payments/' | '/subscriptions/active/' }
      | { kind: 'payment'; reason: string }
      | { kind: 'plan'; suffix: string }
      | { kind: 'metadata'; value: string }
      | { kind: 'period'; minutesFromGraceEnd: number }
      | { kind: 'open-invoice' }
      | { kind: 'void-invoices' };
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.record({ kind: fc.constant('read' as const), path: fc.constantFrom('/payments/' as const, '/subscriptions/active/' as const) }),
      fc.record({ kind: fc.constant('payment' as const), reason: fc.string({ maxLength: 20 }) }),
      fc.record({ kind: fc.constant('plan' as const), suffix: fc.string({ maxLength: 8 }) }),
      fc.record({ kind: fc.constant('metadata' as const), value: fc.string({ maxLength: 12 }) }),
      // The access ending a few minutes before or after now by the period alone.
      fc.record({ kind: fc.constant('period' as const), minutesFromGraceEnd: fc.integer({ min: -3, max: 3 }) }),
      fc.constant({ kind: 'open-invoice' as const }),
      fc.constant({ kind: 'void-invoices' as const }),
    );
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 10 }), async (steps) => {
          for (const s of steps) {
            if (s.kind === 'payment') await em().nativeUpdate(Payment, { id: payment.id }, { failureReason: s.reason });
            if (s.kind === 'plan') await em().nativeUpdate(Plan, { id: planId }, { name: `${planName}${s.suffix}` });
            if (s.kind === 'metadata') await em().nativeUpdate(Subscription, { id: subscription.id }, { metadata: { note: s.value } });
            if (s.kind === 'period') {
              await em().nativeUpdate(Subscription, { id: subscription.id }, { currentPeriodEnd: new Date(Date.now() - grace + s.minutesFromGraceEnd * 60_000) });
            }
            if (s.kind === 'open-invoice') await openInvoice(setup, subscription.id, '1000.00');
            if (s.kind === 'void-invoices') await em().nativeUpdate(Invoice, { subscription: subscription.id, status: 'open' }, { status: 'void' });
            // Twice each: the second may be the kept answer.
            for (const path of s.kind === 'read' ? [s.path] : (['/payments/', '/subscriptions/active/'] as const)) {
              await both('GET', path, auth);
              await both('GET', path, auth);
            }
          }
        }),
        { numRuns: 12, seed: PROPERTY_SEED },
      );
    } finally {
      await em().nativeUpdate(Plan, { id: planId }, { name: planName });
    }
  });
});

describe.each(DATABASES)('hot reads under ACCESS_RECHECK_MS (%s)', (kind: DatabaseKind) => {
  let setup: TestServer;
  let hot: RunningServer;
  let normal: RunningServer;
  const RECHECK_MS = 300;

  beforeAll(async () => {
    setup = await startTestServer(kind);
    await setup.seedPlans(STANDARD_PLANS);
    const config = { ...setup.config, accessRecheckMs: RECHECK_MS };
    hot = await startServer(config, { logger: quietLogger, validateResponses: true });
    normal = await startServer(config, { logger: quietLogger, validateResponses: true, hotReads: false });
  }, 600_000);
  afterAll(async () => {
    await hot?.stop();
    await normal?.stop();
    await setup?.stop();
  });

  it('a logout and a cancellation made by another process stop the fast path within ACCESS_RECHECK_MS, as the normal path', async () => {
    const user = await setup.createUser();
    await activeSubscription(setup, user);
    const own = await setup.login(user);
    const ask = async (server: RunningServer, path: string, headers: Record<string, string>) => (await send(server, 'GET', `/api/subscriptions${path}`, headers)).status;
    for (const server of [hot, normal]) {
      expect(await ask(server, '/subscriptions/active/', { cookie: own.cookie })).toBe(200);
      expect(await ask(server, '/subscriptions/active/', { authorization: basic(user) })).toBe(200);
    }
    const subscription = (await setup.api('GET', '/subscriptions/active/', { auth: user })).body;
    expect((await setup.api('POST', '/auth/logout/', { session: own })).status).toBeLessThan(300);
    expect((await setup.api('POST', `/subscriptions/${subscription.id}/cancel/`, { auth: user, body: { immediate: true } })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, RECHECK_MS + 100));
    for (const server of [hot, normal]) {
      expect(await ask(server, '/subscriptions/active/', { cookie: own.cookie })).toBe(401);
      expect(await ask(server, '/subscriptions/active/', { authorization: basic(user) })).toBe(404);
    }
    const [fromHot, fromNormal] = [await send(hot, 'GET', '/api/subscriptions/payments/', { authorization: basic(user) }), await send(normal, 'GET', '/api/subscriptions/payments/', { authorization: basic(user) })];
    expect(comparable(fromHot)).toEqual(comparable(fromNormal));
  });
});
