import type { EntityManager } from '@mikro-orm/knex';
import { describe, expect, it } from 'vitest';
import { Subscription } from '../../src/db/entities/subscription.js';
import { User } from '../../src/db/entities/user.js';
import { openOrm } from '../../src/db/orm.js';
import { DATABASES, createTestDatabase } from '../helpers/database.js';
import { makePlan, makeSubscriptionWithPayment } from '../helpers/factories.js';
import { prepareDatabase, type Account } from '../helpers/reliability/accounts.js';
import { API, call, cookieOf, startServerProcess } from '../helpers/reliability/server-process.js';

/*
 * Each server process remembers sessions, users and access answers (src/http/auth/access-cache.ts),
 * valid while the user's access version, raised by database triggers, stands. A process reads
 * the version again once the one it holds is ACCESS_RECHECK_MS old (default 1,000 ms), and at
 * once after a write it handled itself. Two processes on one database: with ACCESS_RECHECK_MS=0
 * a change made through one, or by SQL outside both, stops (or restores) access on the other at
 * its very next request; with the default, within the bound.
 */
const PROTECTED = `${API}/notifications/`;
const DEFAULT_BOUND_MS = 1_000;

/** Calls `probe` until it answers `status`; the milliseconds that took (fails after 10 s). */
async function msUntil(status: number, probe: () => Promise<{ status: number }>): Promise<number> {
  const start = Date.now();
  for (;;) {
    if ((await probe()).status === status) return Date.now() - start;
    if (Date.now() - start > 10_000) throw new Error(`never answered ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A user with a paid, active subscription in its current period. */
async function activeSubscriber(databaseUrl: string, username: string): Promise<{ account: Account; subscriptionId: string }> {
  const account = (await prepareDatabase(databaseUrl, [username]))[username];
  const orm = await openOrm(databaseUrl);
  try {
    const em = orm.em.fork() as EntityManager;
    const user = await em.findOneOrFail(User, account.id);
    const plan = await makePlan(em);
    const { subscription } = await makeSubscriptionWithPayment(em, { user, plan, payment: { status: 'settled', paidAt: new Date() } });
    const now = Date.now();
    Object.assign(subscription, {
      status: 'active',
      currentPeriodStart: new Date(now - 86_400_000),
      currentPeriodEnd: new Date(now + 29 * 86_400_000),
      nextBillingDate: new Date(now + 29 * 86_400_000),
    });
    await em.flush();
    return { account, subscriptionId: subscription.id };
  } finally {
    await orm.close(true);
  }
}

/**
 * Two server processes on the database, the account signed in through the first, and both having
 * seen (and cached) its session, user and access answer, by cookie and by Basic.
 */
async function twoProcessesSignedIn(databaseUrl: string, account: Account, extraEnv: Record<string, string>) {
  const env = { MIGRATE_ON_START: 'false', SUBSCRIPTION_PROTECTED_PATHS: PROTECTED, GATEWAY_BASE_URL: 'http://127.0.0.1:9', ...extraEnv };
  const a = await startServerProcess({ databaseUrl, env });
  const b = await startServerProcess({ databaseUrl, env });
  const login = await call(a.url, 'POST', `${API}/auth/login/`, { body: { username: account.username, password: account.password } });
  expect(login.status).toBe(200);
  const cookie = cookieOf(login);
  const basic = { username: account.username, password: account.password };
  for (const url of [a.url, b.url, a.url, b.url]) {
    expect((await call(url, 'GET', PROTECTED, { cookie })).status).toBe(200);
    expect((await call(url, 'GET', PROTECTED, { basic })).status).toBe(200);
  }
  return { a, b, cookie, basic, csrf: { 'x-csrf-token': login.body.csrf_token as string } };
}

/** Runs SQL on the database from outside every server process. */
async function runSql(databaseUrl: string, sql: string, params: unknown[]): Promise<void> {
  const orm = await openOrm(databaseUrl);
  try {
    await (orm.em.fork() as EntityManager).execute(sql, params);
  } finally {
    await orm.close(true);
  }
}

describe.each(DATABASES)('the access cache across two server processes on %s', (kind) => {
  it('with ACCESS_RECHECK_MS=0, a cancellation, a session revocation and a change by plain SQL are seen by the other process at once', async () => {
    const db = await createTestDatabase(kind);
    try {
      const { account: dora, subscriptionId } = await activeSubscriber(db.url, 'dora');

      const { a, b, cookie, csrf, basic } = await twoProcessesSignedIn(db.url, dora, { ACCESS_RECHECK_MS: '0' });
      try {

        // Canceled now through A: B refuses the very next request, by session and by Basic.
        const canceled = await call(a.url, 'POST', `${API}/subscriptions/${subscriptionId}/cancel/`, { cookie, headers: csrf, body: { immediate: true } });
        expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
        expect(canceled.body.status).toBe('canceled');
        const refused = await call(b.url, 'GET', PROTECTED, { cookie });
        expect(refused.status).toBe(403);
        expect(refused.body).toEqual({ error: 'Active subscription required.', code: 'subscription_required' });
        expect((await call(b.url, 'GET', PROTECTED, { basic })).status).toBe(403);
        expect((await call(b.url, 'GET', `${API}/subscriptions/active/`, { cookie })).status).toBe(404);

        // Written by SQL outside both processes (as the set-based billing run writes): seen at once.
        const sql = await openOrm(db.url);
        try {
          await (sql.em.fork() as EntityManager).execute(`update subscriptions set status = 'active', live_user_id = user_id, canceled_at = null where id = ?`, [subscriptionId]);
        } finally {
          await sql.close(true);
        }
        expect((await call(b.url, 'GET', PROTECTED, { cookie })).status).toBe(200);
        expect((await call(a.url, 'GET', PROTECTED, { basic })).status).toBe(200);
        expect((await call(b.url, 'GET', `${API}/subscriptions/active/`, { cookie })).body.id).toBe(subscriptionId);

        // The session revoked through A (logout): B no longer knows it at the next request.
        expect((await call(a.url, 'POST', `${API}/auth/logout/`, { cookie, headers: csrf })).status).toBe(204);
        expect((await call(b.url, 'GET', `${API}/auth/me/`, { cookie })).status).toBe(401);
        expect((await call(b.url, 'GET', PROTECTED, { cookie })).body).toEqual({ error: 'Authentication required.', code: 'subscription_required' });
        // Basic credentials are not a session: they still work.
        expect((await call(b.url, 'GET', PROTECTED, { basic })).status).toBe(200);
      } finally {
        await a.stop();
        await b.stop();
      }
    } finally {
      await db.drop();
    }
  }, 180_000);

  it('the subscription read and the access answer agree with the database after every change', async () => {
    // The per-process answers are keyed by the version, never by time alone: a paused
    // subscription (a change of status) is refused, a resumed one admitted, in one process.
    const db = await createTestDatabase(kind);
    try {
      const { erin } = await prepareDatabase(db.url, ['erin']);
      const orm = await openOrm(db.url);
      const server = await startServerProcess({
        databaseUrl: db.url,
        env: { MIGRATE_ON_START: 'false', SUBSCRIPTION_PROTECTED_PATHS: PROTECTED, GATEWAY_BASE_URL: 'http://127.0.0.1:9', ACCESS_RECHECK_MS: '0' },
      });
      try {
        const basic = { username: erin.username, password: erin.password };
        expect((await call(server.url, 'GET', PROTECTED, { basic })).status).toBe(403);
        const em = orm.em.fork() as EntityManager;
        const { subscription } = await makeSubscriptionWithPayment(em, { user: await em.findOneOrFail(User, erin.id) });
        expect((await call(server.url, 'GET', PROTECTED, { basic })).status).toBe(403);
        for (const [status, expected] of [['active', 200], ['paused', 403], ['trialing', 200], ['past_due', 403], ['active', 200]] as const) {
          await (orm.em.fork() as EntityManager).nativeUpdate(Subscription, { id: subscription.id }, { status });
          expect((await call(server.url, 'GET', PROTECTED, { basic })).status, status).toBe(expected);
        }
      } finally {
        await server.stop();
        await orm.close(true);
      }
    } finally {
      await db.drop();
    }
  }, 120_000);
  it(`by default, a change made elsewhere stops access within ${DEFAULT_BOUND_MS} ms and one made through the process itself at once`, async () => {
    const db = await createTestDatabase(kind);
    try {
      const { account: fay, subscriptionId } = await activeSubscriber(db.url, 'fay');
      const { a, b, cookie, csrf, basic } = await twoProcessesSignedIn(db.url, fay, {});
      try {

        // Canceled through A: A refuses at once; B within the bound (the cached version ages out).
        const canceled = await call(a.url, 'POST', `${API}/subscriptions/${subscriptionId}/cancel/`, { cookie, headers: csrf, body: { immediate: true } });
        expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
        expect((await call(a.url, 'GET', PROTECTED, { basic })).status).toBe(403);
        expect(await msUntil(403, () => call(b.url, 'GET', PROTECTED, { cookie }))).toBeLessThanOrEqual(DEFAULT_BOUND_MS + 200);
        expect((await call(b.url, 'GET', PROTECTED, { basic })).status).toBe(403);

        // Restored by SQL outside both processes: each admits again within the bound.
        await runSql(db.url, `update subscriptions set status = 'active', live_user_id = user_id, canceled_at = null where id = ?`, [subscriptionId]);
        for (const url of [a.url, b.url]) expect(await msUntil(200, () => call(url, 'GET', PROTECTED, { basic }))).toBeLessThanOrEqual(DEFAULT_BOUND_MS + 200);

        // Logged out through A: A refuses the cookie at once; B within the bound.
        expect((await call(b.url, 'GET', `${API}/auth/me/`, { cookie })).status).toBe(200);
        expect((await call(a.url, 'POST', `${API}/auth/logout/`, { cookie, headers: csrf })).status).toBe(204);
        expect((await call(a.url, 'GET', `${API}/auth/me/`, { cookie })).status).toBe(401);
        expect(await msUntil(401, () => call(b.url, 'GET', `${API}/auth/me/`, { cookie }))).toBeLessThanOrEqual(DEFAULT_BOUND_MS + 200);
      } finally {
        await a.stop();
        await b.stop();
      }
    } finally {
      await db.drop();
    }
  }, 180_000);

  it('the polled reads, answered again from memory, show a change made by the other process or by SQL at the very next request', async () => {
    // src/http/answer-cache.ts keeps the last answer of GET /payments/ and GET /subscriptions/active/
    // under the user's and the catalogue's versions, read for every such request: unlike the
    // access answer, there is no ACCESS_RECHECK_MS window.
    const db = await createTestDatabase(kind);
    try {
      const { account: gus, subscriptionId } = await activeSubscriber(db.url, 'gus');
      const { a, b, cookie, csrf, basic } = await twoProcessesSignedIn(db.url, gus, {});
      try {
        const read = async (path: string) => {
          const answer = await call(a.url, 'GET', `${API}${path}`, { basic });
          expect(answer.status, answer.text).toBe(200);
          return answer.body;
        };
        // Asked again and again: A keeps both answers.
        for (let i = 0; i < 3; i++) {
          await read('/payments/');
          await read('/subscriptions/active/');
        }
        await runSql(db.url, 'update payments set failure_reason = ? where user_id = ?', ['changed by SQL', gus.id]);
        expect((await read('/payments/')).results[0].failure_reason).toBe('changed by SQL');

        expect((await read('/subscriptions/active/')).cancel_at_period_end).toBe(false);
        const canceled = await call(b.url, 'POST', `${API}/subscriptions/${subscriptionId}/cancel/`, { cookie, headers: csrf, body: {} });
        expect(canceled.status, canceled.text).toBe(200);
        expect((await read('/subscriptions/active/')).cancel_at_period_end).toBe(true);

        const { plan } = await read('/subscriptions/active/');
        await runSql(db.url, 'update plans set name = ? where id = ?', [`${plan.name} (renamed by SQL)`, plan.id]);
        expect((await read('/subscriptions/active/')).plan.name).toBe(`${plan.name} (renamed by SQL)`);

        await runSql(db.url, `update subscriptions set status = 'past_due' where id = ?`, [subscriptionId]);
        expect((await call(a.url, 'GET', `${API}/subscriptions/active/`, { basic })).status).toBe(404);
      } finally {
        await a.stop();
        await b.stop();
      }
    } finally {
      await db.drop();
    }
  }, 180_000);
});
