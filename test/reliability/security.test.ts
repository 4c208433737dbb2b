import { readFileSync } from 'node:fs';
import type { EntityManager } from '@mikro-orm/knex';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Notification } from '../../src/db/entities/notification.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Plan } from '../../src/db/entities/plan.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { Topup } from '../../src/db/entities/topup.js';
import { User } from '../../src/db/entities/user.js';
import { Wallet } from '../../src/db/entities/wallet.js';
import { openOrm, type Orm } from '../../src/db/orm.js';
import { OPENAPI_PATH } from '../../src/http/api.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';
import { signedNotification } from '../helpers/factories.js';
import { prepareDatabase, type Account } from '../helpers/reliability/accounts.js';
import { loadContract, SQL_INJECTION } from '../helpers/reliability/contract.js';
import { API, call, cookieOf, startServerProcess, TEST_SERVER_KEY, TEST_SESSION_SECRET, type HttpAnswer, type ServerProcess } from '../helpers/reliability/server-process.js';

const contract = loadContract();
/** Bodies that pass validation, so that what is checked is the ownership, not the input. */
const VALID_BODIES: Record<string, unknown> = {
  changeSubscriptionPlan: { plan_id: 'pro-monthly' },
  changeSubscriptionQuantity: { quantity: 2 },
  refundPayment: { amount: 1000 },
  createSubscription: { plan_id: 'basic-monthly', payment_type: 'gopay' },
  createTopup: { amount: 15000, payment_type: 'qris' },
  login: { username: 'alice', password: 'whatever it is' },
  changePassword: { current_password: 'whatever it is', new_password: 'a long enough new one' },
  putTaxProfile: { buyer_type: 'individual', nik: '3171015505900001', name: 'Alice', address: 'Jakarta' },
  adminCancelSubscription: { reason: 'r' },
  adminPauseSubscription: { reason: 'r' },
  adminResumeSubscription: { reason: 'r' },
  adminUndoCancelSubscription: { reason: 'r' },
  adminSyncSubscription: { reason: 'r' },
  adminRefundPayment: { reason: 'r' },
  adminAdjustWallet: { amount: '1000', reason: 'r' },
  adminResendNotification: { reason: 'r' },
  adminReplayWebhookLog: { reason: 'r' },
  adminCreateCustomer: { external_id: 'csrf-check', email: 'csrf@example.com' },
  adminUpdateCustomer: { email: 'csrf@example.com' },
  adminCreateCoupon: { code: 'CSRF25', name: 'CSRF check', percent_off: '25', duration: 'once', reason: 'r' },
  adminArchiveCoupon: { reason: 'r' },
  adminCreatePromotionCode: { code: 'csrf25', coupon: 'CSRF25', reason: 'r' },
  adminUpdatePromotionCode: { active: false, reason: 'r' },
  adminCreateMetric: { code: 'csrf_calls', name: 'CSRF check', aggregation: 'count', reason: 'r' },
  adminArchiveMetric: { reason: 'r' },
  sendUsageEvent: { transaction_id: 'csrf-1', customer: 'bob', code: 'csrf_calls' },
  sendUsageEventBatch: { events: [{ transaction_id: 'csrf-2', customer: 'bob', code: 'csrf_calls' }] },
  createCheckoutSession: { plan_id: 'pro-monthly', success_url: 'https://shop.example.com/thanks', cancel_url: 'https://shop.example.com/plans' },
  createPortalSession: { return_url: 'https://shop.example.com/account' },
};
/** The staff routes: every user's records, for staff only. */
const isStaffRoute = (op: { path: string }) => op.path.startsWith('/admin/');
type Security = Record<string, unknown>[];
const document = parse(readFileSync(OPENAPI_PATH, 'utf8')) as { security: Security; paths: Record<string, Record<string, { operationId?: string; security?: Security }>> };
/** The operations a session cookie may authenticate (their security, or the document's, names sessionCookie). */
const SESSION_OPERATIONS = new Set(
  Object.values(document.paths)
    .flatMap((item) => Object.values(item))
    .filter((op) => op.operationId && (op.security ?? document.security).some((requirement) => 'sessionCookie' in requirement))
    .map((op) => op.operationId!),
);
/** Secured routes a session cannot call (usage events: an API key only): a cookie is no credential there, so no CSRF check applies. */
const isKeyOnlyRoute = (op: { id: string; secured: boolean }) => op.secured && !SESSION_OPERATIONS.has(op.id);

describe.each(DATABASES)('security of a server process (%s)', (kind) => {
  let db: TestDatabase;
  let server: ServerProcess;
  let orm: Orm;
  let users: Record<string, Account>;
  /** Every answer the tests saw, to look for secrets in them at the end. */
  const answers: HttpAnswer[] = [];
  const api = async (method: string, path: string, opts: Parameters<typeof call>[3] = {}) => {
    const res = await call(server.url, method, `${API}${path}`, opts);
    answers.push(res);
    return res;
  };
  const em = () => orm.em.fork() as EntityManager;
  let bob: { subscription: string; payment: string; invoice: string; topup: string; notification: string; creditNote: string };

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    users = await prepareDatabase(db.url, ['alice', 'bob', 'carol', 'mallory_target']);
    // Request logs on, as in production, so that the test can read them for secrets.
    server = await startServerProcess({ databaseUrl: db.url, env: { LOG_REQUESTS: 'true' } });
    orm = await openOrm(db.url);
    const paid = await api('POST', '/subscriptions/', { basic: users.bob, body: { plan_id: 'basic-monthly', payment_type: 'credit_card', token: 'sim-card-accept-9' } });
    expect(paid.status, paid.text).toBe(201);
    await call(server.url, 'POST', `/_simulator/v2/${paid.body.payment.order_id}/settle`);
    const topup = await api('POST', '/topups/', { basic: users.bob, body: { amount: 20000, payment_type: 'bank_transfer' } });
    const notes = await api('GET', '/notifications/', { basic: users.bob });
    // A credit note needs money given back: carol's refund issues one, and bob's payment stays
    // whole for the checks below (any other user's id will do for alice).
    const carols = await api('POST', '/subscriptions/', { basic: users.carol, body: { plan_id: 'basic-monthly', payment_type: 'gopay' } });
    expect(carols.status, carols.text).toBe(201);
    await call(server.url, 'POST', `/_simulator/v2/${carols.body.payment.order_id}/settle`);
    const refund = await api('POST', `/payments/${carols.body.payment.id}/refund/`, { basic: users.carol, body: { amount: 1000 } });
    expect(refund.status, refund.text).toBeLessThan(300);
    const creditNotes = await api('GET', '/credit-notes/', { basic: users.carol });
    expect(creditNotes.body.results, creditNotes.text).toHaveLength(1);
    bob = {
      subscription: paid.body.subscription.id,
      payment: paid.body.payment.id,
      invoice: paid.body.payment.invoice_id,
      topup: topup.body.id,
      notification: notes.body.results[0].id,
      creditNote: creditNotes.body.results[0].id,
    };
  });
  afterAll(async () => {
    await orm?.close(true);
    await server?.stop();
    await db?.drop();
  });

  it("every route with an id answers 404 to another user's id, and changes nothing", async () => {
    const idFor = (path: string) =>
      path.startsWith('/subscriptions/') ? bob.subscription
      : path.startsWith('/payments/') ? bob.payment
      : path.startsWith('/invoices/') ? bob.invoice
      : path.startsWith('/notifications/') ? bob.notification
      : path.startsWith('/topups/') ? bob.topup
      : path.startsWith('/credit-notes/') ? bob.creditNote
      : null;
    // Staff routes see every user's records by design; a customer finds none of them (below).
    const routes = contract.operations.filter((op) => op.path.includes('{id}') && !isStaffRoute(op));
    expect(routes.length).toBeGreaterThanOrEqual(13);
    for (const op of routes) {
      const id = idFor(op.path);
      expect(id, op.path).not.toBeNull();
      const body = op.body ? (VALID_BODIES[op.id] ?? {}) : undefined;
      const res = await api(op.method, op.path.replace('{id}', id!), { basic: users.alice, body });
      expect({ op: op.id, status: res.status, code: res.body.code }).toEqual({ op: op.id, status: 404, code: 'not_found' });
    }
    const charge = await api('POST', '/payments/charge/', { basic: users.alice, body: { subscription_id: bob.subscription } });
    expect(charge.status).toBe(404);
    const sub = await em().findOneOrFail(Subscription, bob.subscription);
    expect(sub.status).toBe('active');
    expect((await em().findOneOrFail(Payment, bob.payment)).refundedAmount).toBe('0.00');
    expect((await em().findOneOrFail(Notification, bob.notification)).readAt).toBeNull();
  });

  it('a session-authenticated change without the CSRF token answers 403 csrf_failed', async () => {
    const login = await api('POST', '/auth/login/', { body: { username: 'alice', password: users.alice.password } });
    expect(login.status).toBe(200);
    const cookie = cookieOf(login);
    const unsafe = contract.operations.filter((op) => op.method !== 'GET' && op.secured);
    expect(unsafe.length).toBeGreaterThanOrEqual(10);
    const bodies: Record<string, unknown> = { ...VALID_BODIES, chargeSubscription: { subscription_id: bob.subscription } };
    // A staff member's session is held to the same check on the staff routes; a customer's finds no such route.
    await orm.em.fork().nativeUpdate(User, { username: 'carol' }, { isStaff: true });
    const staffLogin = await api('POST', '/auth/login/', { body: { username: 'carol', password: users.carol.password } });
    expect(staffLogin.status).toBe(200);
    const staffCookie = cookieOf(staffLogin);
    for (const op of unsafe.filter(isStaffRoute)) {
      const path = op.path.replace('{id}', bob.subscription).replace('{user}', 'bob').replace('{customer}', 'bob').replace('{coupon}', 'CSRF25').replace('{code}', 'csrf25').replace('{metric}', 'csrf_calls');
      const body = bodies[op.id] ?? {};
      const customer = await api(op.method, path, { cookie, headers: { 'x-csrf-token': login.body.csrf_token }, body });
      expect({ op: op.id, status: customer.status, code: customer.body.code }).toEqual({ op: op.id, status: 404, code: 'not_found' });
      for (const headers of [{}, { 'x-csrf-token': 'forged-token' }] as Record<string, string>[]) {
        const res = await api(op.method, path, { cookie: staffCookie, headers, body });
        expect({ op: op.id, status: res.status, code: res.body.code }).toEqual({ op: op.id, status: 403, code: 'csrf_failed' });
      }
    }
    const keyOnly = unsafe.filter(isKeyOnlyRoute);
    expect(keyOnly.map((op) => op.id).sort()).toEqual(['sendUsageEvent', 'sendUsageEventBatch']);
    for (const op of keyOnly) {
      // Not even a staff session with its token: 401, as without any credential.
      for (const [session, token] of [[staffCookie, staffLogin.body.csrf_token], [cookie, login.body.csrf_token], [cookie, 'forged-token']]) {
        const res = await api(op.method, op.path, { cookie: session, headers: { 'x-csrf-token': token }, body: bodies[op.id] });
        expect({ op: op.id, status: res.status, code: res.body.code }).toEqual({ op: op.id, status: 401, code: 'not_authenticated' });
      }
    }
    await orm.em.fork().nativeUpdate(User, { username: 'carol' }, { isStaff: false });
    for (const op of unsafe.filter((o) => !isStaffRoute(o) && !isKeyOnlyRoute(o))) {
      const path = op.path.replace('{id}', bob.subscription);
      for (const headers of [{}, { 'x-csrf-token': 'forged-token' }] as Record<string, string>[]) {
        const res = await api(op.method, path, { cookie, headers, body: op.body ? (bodies[op.id] ?? {}) : undefined });
        expect({ op: op.id, status: res.status, code: res.body.code }).toEqual({ op: op.id, status: 403, code: 'csrf_failed' });
      }
    }
    // With the token it passes the check (and reaches the handler).
    const ok = await api('POST', '/topups/', { cookie, headers: { 'x-csrf-token': login.body.csrf_token }, body: { amount: 15000, payment_type: 'qris' } });
    expect(ok.status).toBe(201);
  });

  it('forged signatures answer 403 invalid; a replayed valid notification is a duplicate that changes nothing', async () => {
    const topup = await em().findOneOrFail(Topup, bob.topup);
    const genuine = signedNotification(TEST_SERVER_KEY, { order_id: topup.orderId, transaction_status: 'settlement', gross_amount: '20000.00' });
    const forgedKey = signedNotification('SB-Mid-server-guessed', { order_id: topup.orderId, transaction_status: 'settlement', gross_amount: '20000.00' });
    const tampered = { ...genuine, gross_amount: '2000000.00' };
    const otherOrder = { ...genuine, order_id: bob.payment };
    for (const body of [forgedKey, tampered, otherOrder]) {
      const res = await api('POST', '/webhook/notification/', { body });
      expect(res.status).toBe(403);
      expect(res.body.status).toBe('invalid');
    }
    // No signature at all is not a notification (400, still logged).
    expect((await api('POST', '/webhook/notification/', { body: { ...genuine, signature_key: undefined } })).status).toBe(400);
    expect((await em().findOneOrFail(Topup, bob.topup)).status).toBe('pending');

    const first = await api('POST', '/webhook/notification/', { body: genuine });
    expect(first.body).toMatchObject({ status: 'ok' });
    const balance = (await em().findOneOrFail(Wallet, { user: users.bob.id })).balance;
    const notes = await em().count(Notification, { user: users.bob.id });
    for (let i = 0; i < 3; i++) {
      const replay = await api('POST', '/webhook/notification/', { body: genuine });
      expect(replay.status).toBe(200);
      expect(replay.body.status).toBe('duplicate');
    }
    expect(balance).toBe('20000.00');
    expect((await em().findOneOrFail(Wallet, { user: users.bob.id })).balance).toBe(balance);
    expect(await em().count(Notification, { user: users.bob.id })).toBe(notes);
  });

  it('a new session id at login: a cookie planted before login is not the one after, and is dead', async () => {
    const planted = cookieOf(await api('POST', '/auth/login/', { body: { username: 'carol', password: users.carol.password } }));
    expect(planted).toMatch(/billing\.sid=/);
    const login = await api('POST', '/auth/login/', { cookie: planted, body: { username: 'alice', password: users.alice.password } });
    expect(login.status).toBe(200);
    const fresh = cookieOf(login);
    const sid = (c: string) => /billing\.sid=([^;]+)/.exec(c)?.[1];
    expect(sid(fresh)).toBeDefined();
    expect(sid(fresh)).not.toBe(sid(planted));
    expect((await api('GET', '/auth/me/', { cookie: fresh })).body.username).toBe('alice');
    // Whoever holds the planted cookie is not alice (the old session was destroyed).
    expect((await api('GET', '/auth/me/', { cookie: planted })).status).toBe(401);
  });

  it('session cookies are HttpOnly and SameSite=Lax', async () => {
    const login = await api('POST', '/auth/login/', { body: { username: 'alice', password: users.alice.password } });
    const sessionCookie = login.headers.getSetCookie().find((c) => c.startsWith('billing.sid='))!;
    expect(sessionCookie).toMatch(/;\s*httponly/i);
    expect(sessionCookie).toMatch(/;\s*samesite=lax/i);
    expect(sessionCookie).not.toMatch(/;\s*secure/i);
  });

  it('SQL injection in search and ordering: 400 or a harmless 200, tables intact', async () => {
    const before = { users: await em().count(User, {}), plans: await em().count(Plan, {}), payments: await em().count(Payment, {}) };
    for (const attack of SQL_INJECTION) {
      const search = await api('GET', `/plans/?search=${encodeURIComponent(attack)}`);
      expect(search.status).toBe(200);
      expect(search.body.results).toEqual([]);
      for (const list of ['/plans/', '/subscriptions/', '/payments/', '/invoices/']) {
        const ordering = await api('GET', `${list}?ordering=${encodeURIComponent(attack)}`, { basic: users.alice });
        expect(ordering.status, `${list} ${attack}`).toBe(400);
        expect(ordering.body.code).toBe('validation_error');
      }
      const login = await api('POST', '/auth/login/', { body: { username: attack, password: attack } });
      expect([401, 429]).toContain(login.status);
    }
    expect({ users: await em().count(User, {}), plans: await em().count(Plan, {}), payments: await em().count(Payment, {}) }).toEqual(before);
    expect((await api('GET', '/plans/')).body.count).toBeGreaterThan(0);
  });

  it('brute-forced logins answer 429 after the limit, even for the right password, by form and by Basic', async () => {
    const target = users.mallory_target;
    for (let i = 0; i < 5; i++) {
      expect((await api('POST', '/auth/login/', { body: { username: target.username, password: `guess-${i}` } })).status).toBe(401);
    }
    const limited = await api('POST', '/auth/login/', { body: { username: target.username, password: 'guess-6' } });
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await api('POST', '/auth/login/', { body: { username: target.username, password: target.password } })).status).toBe(429);
    expect((await api('GET', '/auth/me/', { basic: target })).status).toBe(429);
    // Another user is not locked out by it.
    expect((await api('GET', '/auth/me/', { basic: users.carol })).status).toBe(200);
  });

  it('neither the server key, nor passwords, nor the session secret appear in logs or answers', async () => {
    // Exercise the paths that handle secrets: a gateway call that fails, a bad Basic password.
    await call(server.url, 'POST', '/_simulator/faults', { body: { mode: 'http_500', count: 1, operations: ['charge'] } });
    const failed = await api('POST', '/topups/', { basic: users.carol, body: { amount: 30000, payment_type: 'gopay' } });
    expect(failed.status).toBe(503);
    await api('GET', '/auth/me/', { basic: { username: 'carol', password: 'carol-wrong-password' } });
    const secrets = [
      TEST_SERVER_KEY,
      Buffer.from(`${TEST_SERVER_KEY}:`).toString('base64'),
      TEST_SESSION_SECRET,
      ...Object.values(users).map((u) => u.password),
      'carol-wrong-password',
    ];
    const logs = server.output();
    expect(logs).toMatch(/"message":"request"/);
    for (const secret of secrets) {
      expect(logs.includes(secret), `a secret in the server's output`).toBe(false);
      expect(answers.filter((a) => a.text.includes(secret)).length, 'a secret in an answer').toBe(0);
    }
  });
});

describe('SECURE_COOKIES=true behind a TLS-terminating proxy', () => {
  let db: TestDatabase;
  let server: ServerProcess;
  let alice: Account;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    alice = (await prepareDatabase(db.url, ['alice'])).alice;
    server = await startServerProcess({ databaseUrl: db.url, env: { SECURE_COOKIES: 'true' } });
  });
  afterAll(async () => {
    await server?.stop();
    await db?.drop();
  });

  // Found here: without X-Forwarded-Proto (or without TRUST_PROXY) every login answered 500
  // ("Cannot send secure cookie over unencrypted connection") after creating the session.
  it.each([
    ['with X-Forwarded-Proto: https', { 'x-forwarded-proto': 'https' }],
    ['on the plain-HTTP hop from the proxy', {}],
  ])('sets Secure, HttpOnly and SameSite=Lax on the session cookie, %s', async (_, headers) => {
    const login = await call(server.url, 'POST', `${API}/auth/login/`, { headers, body: { username: 'alice', password: alice.password } });
    expect(login.status, login.text).toBe(200);
    const sessionCookie = login.headers.getSetCookie().find((c) => c.startsWith('billing.sid='))!;
    expect(sessionCookie).toMatch(/;\s*secure/i);
    expect(sessionCookie).toMatch(/;\s*httponly/i);
    expect(sessionCookie).toMatch(/;\s*samesite=lax/i);
    expect((await call(server.url, 'GET', `${API}/auth/me/`, { cookie: cookieOf(login) })).body.username).toBe('alice');
  });
});
