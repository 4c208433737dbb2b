import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type Credentials, type TestServer } from '../helpers/server.js';

describe.each(DATABASES)('authentication on %s', (kind) => {
  let server: TestServer;
  let alice: Credentials & { id: string };

  beforeAll(async () => {
    server = await startTestServer(kind, { env: { LOGIN_THROTTLE_LIMIT: '3' } });
    alice = await server.createUser({ username: 'alice', email: 'alice@example.com' });
  });
  afterAll(() => server?.stop());

  it('answers 401 problem+json without credentials', async () => {
    const res = await server.api('GET', '/auth/me/');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/Basic/);
    expect(res.body).toMatchObject({ status: 401, code: 'not_authenticated' });
  });

  it('accepts HTTP Basic on any request, including /auth/me/', async () => {
    const res = await server.api('GET', '/auth/me/', { auth: alice });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: alice.id, username: 'alice', email: 'alice@example.com', is_staff: false });
    expect(res.body).not.toHaveProperty('password_hash');
  });

  it('refuses wrong Basic credentials and malformed Authorization headers with 401', async () => {
    expect((await server.api('GET', '/auth/me/', { auth: { username: 'alice', password: 'wrong password' } })).status).toBe(401);
    expect((await server.api('GET', '/auth/me/', { headers: { authorization: 'Basic !!!' } })).status).toBe(401);
    expect((await server.api('GET', '/auth/me/', { headers: { authorization: `Basic ${Buffer.from('nocolon').toString('base64')}` } })).status).toBe(401);
  });

  it('logs in with a session cookie that is HttpOnly and SameSite=Lax, and logs out', async () => {
    const res = await server.api('POST', '/auth/login/', { body: { username: 'alice', password: alice.password } });
    expect(res.status).toBe(200);
    expect(res.body.user.username).toBe('alice');
    expect(res.body.csrf_token).toEqual(expect.any(String));
    const cookies = res.headers.getSetCookie();
    const sid = cookies.find((c) => c.startsWith('billing.sid='));
    expect(sid).toMatch(/httponly/i);
    expect(sid).toMatch(/samesite=lax/i);
    expect(cookies.some((c) => c.startsWith('billing.sid.sig='))).toBe(true);

    const session = { cookie: cookies.map((c) => c.split(';')[0]).join('; '), csrfToken: res.body.csrf_token };
    expect((await server.api('GET', '/auth/me/', { session })).body.username).toBe('alice');
    expect((await server.api('POST', '/auth/logout/', { session })).status).toBe(204);
    expect((await server.api('GET', '/auth/me/', { session })).status).toBe(401);
  });

  it('requires the CSRF token on session-authenticated changes, but not with Basic', async () => {
    const session = await server.login(alice);
    const without = await server.api('POST', '/auth/logout/', { session, headers: { 'x-csrf-token': '' } });
    expect(without.status).toBe(403);
    expect(without.body.code).toBe('csrf_failed');
    const wrong = await server.api('POST', '/auth/logout/', { session, headers: { 'x-csrf-token': 'forged' } });
    expect(wrong.status).toBe(403);
    // The session survived the refused attempts.
    expect((await server.api('GET', '/auth/me/', { session })).status).toBe(200);
    expect((await server.api('POST', '/auth/logout/', { auth: alice })).status).toBe(204);
  });

  it('rejects a tampered session cookie', async () => {
    const session = await server.login(alice);
    const tampered = { ...session, cookie: session.cookie.replace(/billing\.sid=([^;]+)/, 'billing.sid=forged-session-id') };
    expect((await server.api('GET', '/auth/me/', { session: tampered })).status).toBe(401);
  });

  it('refuses wrong passwords with 401 and then slows repeated failures down with 429', async () => {
    const bob = await server.createUser({ username: 'bob' });
    for (let i = 0; i < 3; i++) {
      const res = await server.api('POST', '/auth/login/', { body: { username: 'bob', password: `guess-${i}` } });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('not_authenticated');
    }
    const limited = await server.api('POST', '/auth/login/', { body: { username: 'bob', password: bob.password } });
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it.each([
    [{ username: 'alice' }, 'password'],
    [{ username: 'alice', password: 'x', admin: true }, 'admin'],
    [{ username: 42, password: 'x' }, 'username'],
    [{ username: '', password: 'x' }, 'username'],
    [{ username: 'a'.repeat(151), password: 'x' }, 'username'],
  ])('answers 400 with the field for a bad login body %#', async (body, field) => {
    const res = await server.api('POST', '/auth/login/', { body });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_error');
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
  });

  it('answers malformed JSON with 400, a non-JSON body with 415 and a huge body with 413', async () => {
    const malformed = await server.api('POST', '/auth/login/', { rawBody: '{"username": "alice",', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe('validation_error');
    const form = await server.api('POST', '/auth/login/', { rawBody: 'username=alice', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(415);
    expect(form.body.code).toBe('unsupported_media_type');
    const huge = await server.api('POST', '/auth/login/', { rawBody: JSON.stringify({ username: 'a', password: 'x'.repeat(2_000_000) }), headers: { 'content-type': 'application/json' } });
    expect(huge.status).toBe(413);
    expect(huge.body.code).toBe('payload_too_large');
  });

  it('answers unknown paths with 404 and wrong methods with 405, as problems', async () => {
    const unknown = await server.api('GET', '/no-such-thing/');
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
    const method = await server.api('DELETE', '/plans/');
    expect(method.status).toBe(405);
    expect(method.body.code).toBe('method_not_allowed');
  });
});
