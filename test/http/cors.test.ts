import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';

/*
 * CORS_ORIGINS (issue 30): browser clients on the listed origins may call the API with their
 * cookies; every other origin, and every server without the setting, gets no CORS header.
 */

const APP = 'https://app.example.com';
const LOCAL = 'http://localhost:5173';
const ACAO = 'access-control-allow-origin';

function preflight(server: TestServer, path: string, origin: string, method = 'POST', headers = 'content-type,x-csrf-token,idempotency-key') {
  return server.request('OPTIONS', `/api/subscriptions${path}`, {
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });
}

const listed = (value: string | null) => (value ?? '').split(',').map((h) => h.trim().toLowerCase());

describe('CORS_ORIGINS on a server that lists two origins', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite', { env: { CORS_ORIGINS: `${APP}, ${LOCAL}` } });
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  it('a listed origin gets its own name back with credentials, and may read the headers the API sends', async () => {
    const res = await server.api('GET', '/plans/', { headers: { origin: APP } });
    expect(res.status).toBe(200);
    expect(res.headers.get(ACAO)).toBe(APP);
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    expect(listed(res.headers.get('access-control-expose-headers'))).toEqual(expect.arrayContaining(['etag', 'retry-after', 'www-authenticate', 'content-disposition']));
    expect(listed(res.headers.get('vary'))).toContain('origin');
    // An error answer carries them too: the page must be able to read a 401 problem.
    const denied = await server.api('GET', '/subscriptions/', { headers: { origin: LOCAL } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get(ACAO)).toBe(LOCAL);
  });

  it('a preflight from a listed origin is answered 204 before authentication, allowing the headers the API reads', async () => {
    const res = await preflight(server, '/subscriptions/', APP);
    expect(res.status).toBe(204);
    expect(res.headers.get(ACAO)).toBe(APP);
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    expect(listed(res.headers.get('access-control-allow-methods'))).toEqual(expect.arrayContaining(['get', 'post', 'put']));
    expect(listed(res.headers.get('access-control-allow-headers'))).toEqual(
      expect.arrayContaining(['authorization', 'content-type', 'x-csrf-token', 'idempotency-key', 'if-none-match']),
    );
    expect(Number(res.headers.get('access-control-max-age'))).toBeGreaterThan(0);
  });

  it('a disallowed origin gets no Access-Control-Allow-Origin, on a request or a preflight', async () => {
    for (const origin of ['https://evil.example.com', 'https://app.example.com.evil.example', 'http://app.example.com', 'null']) {
      const res = await server.api('GET', '/plans/', { headers: { origin } });
      expect(res.status, origin).toBe(200);
      expect(res.headers.get(ACAO), origin).toBeNull();
      expect(res.headers.get('access-control-allow-credentials'), origin).toBeNull();
      const pre = await preflight(server, '/subscriptions/', origin);
      expect(pre.headers.get(ACAO), origin).toBeNull();
      expect(pre.status, origin).not.toBe(204);
    }
  });

  it('only API paths answer CORS: the health check and the docs do not', async () => {
    for (const path of ['/healthz', '/docs/']) {
      const res = await server.request('GET', path, { headers: { origin: APP } });
      expect(res.headers.get(ACAO), path).toBeNull();
      const pre = await server.request('OPTIONS', path, { headers: { origin: APP, 'access-control-request-method': 'GET' } });
      expect(pre.headers.get(ACAO), path).toBeNull();
    }
  });
});

describe('CORS_ORIGINS unset', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
  });
  afterAll(() => server?.stop());

  it('sends no CORS header at all, whatever the origin', async () => {
    const res = await server.api('GET', '/plans/', { headers: { origin: APP } });
    expect([...res.headers.keys()].filter((h) => h.startsWith('access-control-'))).toEqual([]);
    const pre = await preflight(server, '/plans/', APP, 'GET');
    expect([...pre.headers.keys()].filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });
});

describe('CORS_ORIGINS validation at start', () => {
  it('takes exact origins, normalised as a browser sends them, without repeats', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: ' https://App.Example.com , http://localhost:5173,https://app.example.com:443' }).corsOrigins).toEqual([APP, LOCAL]);
  });

  it.each([
    ['*', /CORS_ORIGINS.*"\*" is a wildcard/],
    ['https://*.example.com', /wildcard/],
    ['https://app.example.com/app', /"https:\/\/app\.example\.com\/app" is carrying a path \(\/app\)/],
    ['https://app.example.com/', /carrying a path/],
    ['https://app.example.com?x=1', /query or fragment/],
    ['app.example.com', /not a URL|not an http/],
    ['ftp://files.example.com', /not an http: or https: origin/],
    ['https://user@app.example.com', /user name/],
  ])('refuses %s with a clear message', (value, message) => {
    expect(() => loadConfig({ CORS_ORIGINS: value })).toThrow(ConfigError);
    expect(() => loadConfig({ CORS_ORIGINS: value })).toThrow(message);
  });

  it('names every refused entry at once', () => {
    expect(() => loadConfig({ CORS_ORIGINS: `${APP},*,https://x.example.com/path` })).toThrow(/"\*".*; "https:\/\/x\.example\.com\/path"/);
  });

  it('the server refuses to start with `*`: one line, exit status non-zero, no stack', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', PORT: '0', DATABASE_URL: 'sqlite::memory:', SESSION_SECRET: 's', LOG_REQUESTS: 'false', CORS_ORIGINS: '*' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/CORS_ORIGINS/);
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});
