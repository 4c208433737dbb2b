import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { DATABASES, type DatabaseKind } from '../helpers/database.js';
import { startTestServer, type Credentials, type Session, type TestServer } from '../helpers/server.js';

/*
 * Issue 28 rows 7 and 11, replayed against the real server over HTTP on both databases:
 * an attacker failing logins for a victim's account (rotating X-Forwarded-For, from many
 * addresses, fifty at once) must not lock the victim out; a password change (the API and the
 * CLI) ends every session and cached Basic credential of the user. Clients are told apart by
 * the connection's own address: Linux routes all of 127.0.0.0/8 to the loopback interface, so
 * a request can come from 127.0.0.2 as another machine's would.
 */

const LIMIT = 3;

interface Answer {
  status: number;
  body: any;
  headers: Record<string, string | string[] | undefined>;
}

/** A request to the API from the local address `from`, as a client on another machine sends it. */
function fromAddress(server: TestServer, from: string, method: string, path: string, opts: { body?: unknown; headers?: Record<string, string>; auth?: Credentials; session?: Session } = {}): Promise<Answer> {
  const url = new URL(server.url);
  const headers: Record<string, string> = { ...opts.headers };
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (opts.auth) headers.authorization = `Basic ${Buffer.from(`${opts.auth.username}:${opts.auth.password}`).toString('base64')}`;
  if (opts.session) {
    headers.cookie = opts.session.cookie;
    if (method !== 'GET') headers['x-csrf-token'] = opts.session.csrfToken;
  }
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, localAddress: from, method, path: `/api/subscriptions${path}`, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, body: text && /json/.test(res.headers['content-type'] ?? '') ? JSON.parse(text) : text, headers: res.headers });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const tally = (statuses: number[]) => statuses.reduce<Record<number, number>>((t, s) => ({ ...t, [s]: (t[s] ?? 0) + 1 }), {});
const login = (server: TestServer, from: string, username: string, password: string, headers: Record<string, string> = {}) =>
  fromAddress(server, from, 'POST', '/auth/login/', { body: { username, password }, headers });

describe.each(DATABASES)('failed logins cannot lock the owner out (%s)', (kind: DatabaseKind) => {
  describe('without TRUST_PROXY: the connection is the client, X-Forwarded-For is not read', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(kind, { env: { LOGIN_THROTTLE_LIMIT: String(LIMIT) } });
    });
    afterAll(() => server?.stop());

    it('an attacker rotating X-Forwarded-For is one client: 429 after the limit; the victim logs in from their own address', async () => {
      const victim = await server.createUser();
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) statuses.push((await login(server, '127.0.0.1', victim.username, `guess-${i}`, { 'x-forwarded-for': `198.51.100.${i + 1}` })).status);
      expect(tally(statuses)).toEqual({ 401: LIMIT, 429: 12 - LIMIT });
      const owner = await login(server, '127.0.0.2', victim.username, victim.password);
      expect(owner.status, JSON.stringify(owner.body)).toBe(200);
      expect((await fromAddress(server, '127.0.0.2', 'GET', '/auth/me/', { auth: victim })).status).toBe(200);
    });

    it('fifty refused concurrent logins cost their client only the failures it compared: other accounts from it and the victim from elsewhere log in', async () => {
      const victim = await server.createUser();
      const neighbour = await server.createUser();
      const statuses = (await Promise.all(Array.from({ length: 50 }, (_, i) => login(server, '127.0.0.3', victim.username, `guess-${i}`)))).map((r) => r.status);
      const seen = tally(statuses);
      expect(seen[401] ?? 0, JSON.stringify(seen)).toBeLessThanOrEqual(LIMIT);
      expect((seen[401] ?? 0) + (seen[429] ?? 0), JSON.stringify(seen)).toBe(50);
      // The same client, another account: the address is not locked (the refused 47 did not count).
      expect((await login(server, '127.0.0.3', neighbour.username, neighbour.password)).status).toBe(200);
      // The victim's own address never failed.
      expect((await login(server, '127.0.0.4', victim.username, victim.password)).status).toBe(200);
      // And the attacker's address is still refused for the victim, even with the right password.
      const refused = await login(server, '127.0.0.3', victim.username, victim.password);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    });

    it('one client guessing across many accounts gets 429 for wrong passwords after ten times the limit; a correct one from it still logs in', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < LIMIT * 10 + 3; i++) statuses.push((await login(server, '127.0.0.5', `sprayed-${i}`, 'Summer2026!')).status);
      expect(tally(statuses)).toEqual({ 401: LIMIT * 10, 429: 3 });
      const other = await server.createUser();
      expect((await login(server, '127.0.0.6', other.username, other.password)).status).toBe(200);
      const behindTheSameAddress = await server.createUser();
      expect((await login(server, '127.0.0.5', behindTheSameAddress.username, behindTheSameAddress.password)).status).toBe(200);
    });
  });

  describe('with TRUST_PROXY: the last X-Forwarded-For entry, the one the balancer appended, is the client', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(kind, { env: { LOGIN_THROTTLE_LIMIT: String(LIMIT), TRUST_PROXY: 'true' } });
    });
    afterAll(() => server?.stop());

    it('entries a client writes before the balancer\'s are not read: rotating them is one client', async () => {
      const victim = await server.createUser();
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        statuses.push((await login(server, '127.0.0.1', victim.username, `guess-${i}`, { 'x-forwarded-for': `198.51.100.${i + 1}, 203.0.113.7` })).status);
      }
      expect(tally(statuses)).toEqual({ 401: LIMIT, 429: 8 - LIMIT });
      expect((await login(server, '127.0.0.1', victim.username, victim.password, { 'x-forwarded-for': '203.0.113.8' })).status).toBe(200);
    });

    it('failures from ten addresses slow the account down but never refuse the owner, by form or by Basic', async () => {
      const victim = await server.createUser();
      // The ten guess side by side (each one in turn): the slow-down holds each attempt up to 3 s.
      const perAddress = await Promise.all(
        Array.from({ length: 10 }, async (_, a) => {
          const statuses: number[] = [];
          for (let i = 0; i < LIMIT + 1; i++) statuses.push((await login(server, '127.0.0.1', victim.username, `guess-${a}-${i}`, { 'x-forwarded-for': `192.0.2.${a + 1}` })).status);
          return tally(statuses);
        }),
      );
      expect(perAddress).toEqual(Array.from({ length: 10 }, () => ({ 401: LIMIT, 429: 1 })));
      const owner = await login(server, '127.0.0.1', victim.username, victim.password, { 'x-forwarded-for': '203.0.113.50' });
      expect(owner.status, JSON.stringify(owner.body)).toBe(200);
      const basic = await fromAddress(server, '127.0.0.1', 'GET', '/auth/me/', { auth: victim, headers: { 'x-forwarded-for': '203.0.113.51' } });
      expect(basic.status).toBe(200);
      expect(basic.body.username).toBe(victim.username);
    }, 120_000);
  });
});

describe.each(DATABASES)('a password change ends every session and cached credential (%s)', (kind: DatabaseKind) => {
  let server: TestServer;
  beforeAll(async () => {
    // Production's cache settings: a verified Basic credential is remembered for 60 s, the
    // access version trusted for 1 s (the test server's default reads it on every request).
    server = await startTestServer(kind, { env: { LOGIN_THROTTLE_LIMIT: String(LIMIT), BASIC_AUTH_CACHE_SECONDS: '60' }, config: { accessRecheckMs: 1000 } });
  });
  afterAll(() => server?.stop());

  const me = (opts: { auth?: Credentials; session?: Session }) => server.api('GET', '/auth/me/', opts);

  it('POST /auth/password/ with Basic: 204; the old password, every session and the cached credential stop at once; the new one works', async () => {
    const alice = await server.createUser();
    const first = await server.login(alice);
    const second = await server.login(alice);
    expect((await me({ auth: alice })).status).toBe(200); // now cached
    const changed = await server.api('POST', '/auth/password/', { auth: alice, body: { current_password: alice.password, new_password: 'a brand new passphrase' } });
    expect(changed.status, changed.text).toBe(204);
    expect((await me({ auth: alice })).status).toBe(401);
    expect((await me({ session: first })).status).toBe(401);
    expect((await me({ session: second })).status).toBe(401);
    const renewed = { username: alice.username, password: 'a brand new passphrase' };
    expect((await me({ auth: renewed })).status).toBe(200);
    expect((await me({ session: await server.login(renewed) })).status).toBe(200);
  });

  it('with the session cookie (and its CSRF token): 204, that session ends too and its cookie is cleared', async () => {
    const bob = await server.createUser();
    const session = await server.login(bob);
    const other = await server.login(bob);
    const withoutToken = await server.api('POST', '/auth/password/', { session: { ...session, csrfToken: 'wrong' }, body: { current_password: bob.password, new_password: 'another good passphrase' } });
    expect(withoutToken.status).toBe(403);
    const changed = await server.api('POST', '/auth/password/', { session, body: { current_password: bob.password, new_password: 'another good passphrase' } });
    expect(changed.status, changed.text).toBe(204);
    expect(changed.headers.getSetCookie().join('; ')).toMatch(/billing\.sid=;/);
    expect((await me({ session })).status).toBe(401);
    expect((await me({ session: other })).status).toBe(401);
    expect((await me({ auth: bob })).status).toBe(401);
  });

  it('a wrong current password is 400 naming current_password, changes nothing, and counts as a failed login', async () => {
    const carol = await server.createUser();
    const session = await server.login(carol);
    for (let i = 0; i < LIMIT; i++) {
      const wrong = await server.api('POST', '/auth/password/', { auth: carol, body: { current_password: `guess-${i}`, new_password: 'stolen session password' } });
      expect(wrong.status).toBe(400);
      expect(wrong.body.code).toBe('validation_error');
      expect(wrong.body.errors).toEqual([{ field: 'current_password', message: 'is not the current password' }]);
    }
    const limited = await server.api('POST', '/auth/password/', { session, body: { current_password: carol.password, new_password: 'stolen session password' } });
    expect(limited.status).toBe(429);
    // Nothing changed: the session and the password stand.
    expect((await me({ session })).status).toBe(200);
    expect((await fromAddress(server, '127.0.0.9', 'POST', '/auth/login/', { body: { username: carol.username, password: carol.password } })).status).toBe(200);
  });

  it.each([
    [{ current_password: 'x', new_password: 'short' }, 'new_password'],
    [{ current_password: 'x', new_password: 'y'.repeat(1025) }, 'new_password'],
    [{ new_password: 'a good long passphrase' }, 'current_password'],
    [{ current_password: 'x', new_password: 'a good long passphrase', admin: true }, 'admin'],
  ])('a bad body is 400 naming the field %#', async (body, field) => {
    const dave = await server.createUser();
    const res = await server.api('POST', '/auth/password/', { auth: dave, body });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    expect((await me({ auth: dave })).status).toBe(200);
  });

  it('without credentials: 401', async () => {
    expect((await server.api('POST', '/auth/password/', { body: { current_password: 'x', new_password: 'a good long passphrase' } })).status).toBe(401);
  });

  it('billing-admin users set-password: exit 0, every session and the cached Basic credential of the running server end; bad input exits 2, an unknown user 4', async () => {
    const erin = await server.createUser();
    const session = await server.login(erin);
    expect((await me({ auth: erin })).status).toBe(200); // cached in the server process
    const env = cliEnv(server);
    const set = await runCli(['users', 'set-password', '--reason', 'test: audited change', '--username', erin.username, '--password-stdin', '--json'], env, 'set by the operator\n');
    expect(set.code, set.stderr).toBe(0);
    expect(set.json).toMatchObject({ username: erin.username, sessions_ended: 1 });
    expect(JSON.stringify(set)).not.toContain('set by the operator');
    // Another process wrote it: this one sees it at its next version read (ACCESS_RECHECK_MS).
    await new Promise((r) => setTimeout(r, 1100));
    expect((await me({ auth: erin })).status).toBe(401);
    expect((await me({ session })).status).toBe(401);
    expect((await me({ auth: { username: erin.username, password: 'set by the operator' } })).status).toBe(200);

    expect((await runCli(['users', 'set-password', '--reason', 'test: audited change', '--username', erin.username, '--password', 'short'], env)).code).toBe(2);
    expect((await runCli(['users', 'set-password', '--reason', 'test: audited change', '--username', erin.username, '--password', 'long enough one', '--password-stdin'], env, 'x\n')).code).toBe(2);
    expect((await runCli(['users', 'set-password', '--reason', 'test: audited change', '--username', 'nobody-at-all', '--password', 'long enough one'], env)).code).toBe(4);
    expect((await me({ auth: { username: erin.username, password: 'set by the operator' } })).status).toBe(200);
  });
});
