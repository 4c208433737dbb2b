import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { exactlyOnceRun, expectExactlyOnce, PRODUCTION_ENV } from '../helpers/reliability/scenarios.js';
import { API, baseEnv, call, cookieOf, startServerProcess } from '../helpers/reliability/server-process.js';

const SEED = Number(process.env.RELIABILITY_SEED ?? 20260117);

// Two processes share nothing but PostgreSQL (SQLite is one machine's file: not a scale-out target).
describe.skipIf(!process.env.TEST_DATABASE_URL)('two server processes on one PostgreSQL', () => {
  it(`split the same load between them and end in the reference model's state (seed ${SEED})`, async () => {
    const db = await createTestDatabase('postgresql');
    try {
      // Round-robin: duplicates of one notification race on both processes; the database lets one win.
      await expectExactlyOnce(await exactlyOnceRun(db.url, { seed: SEED, total: 2000, processes: 2 }));
    } finally {
      await db.drop();
    }
  }, 240_000);

  it('share sessions, their revocation and the login throttle through the database', async () => {
    const db = await createTestDatabase('postgresql');
    const env = baseEnv(db.url);
    try {
      expect((await runCli(['db', 'migrate'], env)).code).toBe(0);
      const created = await runCli(['users', 'create', '--reason', 'test: audited change', '--username', 'carol', '--password-stdin'], env, 'carol has a long password\n');
      expect(created.code, created.stderr).toBe(0);
      const a = await startServerProcess({ databaseUrl: db.url, env: { ...PRODUCTION_ENV, MIGRATE_ON_START: 'false' } });
      const b = await startServerProcess({ databaseUrl: db.url, env: { ...PRODUCTION_ENV, MIGRATE_ON_START: 'false' } });
      try {
        const login = await call(a.url, 'POST', `${API}/auth/login/`, { body: { username: 'carol', password: 'carol has a long password' } });
        expect(login.status).toBe(200);
        const cookie = cookieOf(login);
        const me = await call(b.url, 'GET', `${API}/auth/me/`, { cookie });
        expect(me.status).toBe(200);
        expect(me.body.username).toBe('carol');
        // The CSRF token minted by A guards changes on B.
        expect((await call(b.url, 'POST', `${API}/notifications/00000000-0000-4000-8000-000000000000/mark-read/`, { cookie })).body.code).toBe('csrf_failed');
        const logout = await call(b.url, 'POST', `${API}/auth/logout/`, { cookie, headers: { 'x-csrf-token': login.body.csrf_token } });
        expect(logout.status).toBe(204);
        expect((await call(a.url, 'GET', `${API}/auth/me/`, { cookie })).status).toBe(401);

        // A password change on A ends, within a second (ACCESS_RECHECK_MS), B's session and the
        // Basic credential B has cached (issue 28 row 11: it stayed valid for 58 s).
        const again = await call(a.url, 'POST', `${API}/auth/login/`, { body: { username: 'carol', password: 'carol has a long password' } });
        const oldBasic = { username: 'carol', password: 'carol has a long password' };
        expect((await call(b.url, 'GET', `${API}/auth/me/`, { cookie: cookieOf(again) })).status).toBe(200);
        expect((await call(b.url, 'GET', `${API}/auth/me/`, { basic: oldBasic })).status).toBe(200);
        const changed = await call(a.url, 'POST', `${API}/auth/password/`, { basic: oldBasic, body: { current_password: oldBasic.password, new_password: 'carol changed her password' } });
        expect(changed.status, changed.text).toBe(204);
        await new Promise((r) => setTimeout(r, 1100));
        expect((await call(b.url, 'GET', `${API}/auth/me/`, { cookie: cookieOf(again) })).status).toBe(401);
        expect((await call(b.url, 'GET', `${API}/auth/me/`, { basic: oldBasic })).status).toBe(401);
        expect((await call(b.url, 'GET', `${API}/auth/me/`, { basic: { username: 'carol', password: 'carol changed her password' } })).status).toBe(200);
        expect((await runCli(['users', 'set-password', '--reason', 'test: audited change', '--username', 'carol', '--password-stdin'], env, 'carol has a long password\n')).code).toBe(0);

        // Failed logins counted on either process add up (LOGIN_THROTTLE_LIMIT 5 per username).
        const wrong = { body: { username: 'carol', password: 'not the password' } };
        for (const url of [a.url, b.url, a.url, b.url, a.url]) expect((await call(url, 'POST', `${API}/auth/login/`, wrong)).status).toBe(401);
        expect((await call(b.url, 'POST', `${API}/auth/login/`, wrong)).status).toBe(429);
        expect((await call(a.url, 'POST', `${API}/auth/login/`, { body: { username: 'carol', password: 'carol has a long password' } })).status).toBe(429);
      } finally {
        await a.stop();
        await b.stop();
      }
    } finally {
      await db.drop();
    }
  }, 120_000);
});
