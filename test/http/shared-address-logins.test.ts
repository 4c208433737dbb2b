import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES, type DatabaseKind } from '../helpers/database.js';
import { startTestServer, type Credentials, type TestServer } from '../helpers/server.js';

/*
 * Many customers share one address behind an office proxy or a mobile carrier's NAT. Someone at
 * that address failing logins for made-up usernames must not keep a real customer there from
 * logging in or calling the API with Basic; a customer's password stays guarded against guessing
 * all the same. The server runs with the default LOGIN_THROTTLE_LIMIT (5), so fifty failures is
 * the address's threshold. Linux routes all of 127.0.0.0/8 to the loopback interface, so each
 * request below comes from the local address it names as another machine's would.
 */

const LIMIT = 5;

interface Answer {
  status: number;
  body: any;
  headers: Record<string, string | string[] | undefined>;
}

function fromAddress(server: TestServer, from: string, method: string, path: string, opts: { body?: unknown; auth?: Credentials } = {}): Promise<Answer> {
  const url = new URL(server.url);
  const headers: Record<string, string> = {};
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (opts.auth) headers.authorization = `Basic ${Buffer.from(`${opts.auth.username}:${opts.auth.password}`).toString('base64')}`;
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, localAddress: from, method, path: `/api/subscriptions${path}`, headers, agent: false }, (res) => {
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
const login = (server: TestServer, from: string, username: string, password: string) => fromAddress(server, from, 'POST', '/auth/login/', { body: { username, password } });

function expectRateLimited(answer: Answer): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(429);
  expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(answer.body.code).toBe('rate_limited');
  expect(Number(answer.headers['retry-after'])).toBeGreaterThan(0);
}

describe.each(DATABASES)('customers behind one shared address (%s)', (kind: DatabaseKind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
  });
  afterAll(() => server?.stop());

  it('sixty failures for made-up usernames from the address: a real customer there still logs in and calls with Basic', async () => {
    const shared = '127.0.0.21';
    const carol = await server.createUser();
    const sprayed = await Promise.all(Array.from({ length: 60 }, (_, i) => login(server, shared, `made-up-${i}`, 'Summer2026!')));
    // The address's first fifty failures answer 401; beyond them its wrong passwords answer 429.
    expect(tally(sprayed.map((r) => r.status))).toEqual({ 401: LIMIT * 10, 429: 10 });
    for (const answer of sprayed.filter((r) => r.status === 429)) expectRateLimited(answer);

    const session = await login(server, shared, carol.username, carol.password);
    expect(session.status, JSON.stringify(session.body)).toBe(200);
    expect(session.body.user.username).toBe(carol.username);
    const me = await fromAddress(server, shared, 'GET', '/auth/me/', { auth: carol });
    expect(me.status, JSON.stringify(me.body)).toBe(200);
    expect(me.body.username).toBe(carol.username);
    const list = await fromAddress(server, shared, 'GET', '/subscriptions/', { auth: carol });
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.count).toBe(0);

    // Another customer behind the address, whose first request is a Basic API call.
    const dewi = await server.createUser();
    expect((await fromAddress(server, shared, 'GET', '/subscriptions/', { auth: dewi })).status).toBe(200);
    // The spraying goes on being answered 429 for wrong passwords, made up or not.
    expectRateLimited(await login(server, shared, 'made-up-61', 'Summer2026!'));
    expectRateLimited(await fromAddress(server, shared, 'GET', '/subscriptions/', { auth: { username: dewi.username, password: 'not her password' } }));
  }, 60_000);

  it('a customer\'s password stays guarded against guessing, per username, by form and by Basic', async () => {
    const shared = '127.0.0.22';
    const budi = await server.createUser();
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 2; i++) statuses.push((await login(server, shared, budi.username, `guess-${i}`)).status);
    expect(tally(statuses)).toEqual({ 401: LIMIT, 429: 2 });
    // From that address, even the right password waits out the window: nothing more is compared.
    expectRateLimited(await login(server, shared, budi.username, budi.password));
    expectRateLimited(await fromAddress(server, shared, 'GET', '/auth/me/', { auth: budi }));
    // Other usernames from that address are untouched, and so is Budi from his own address.
    const neighbour = await server.createUser();
    expect((await login(server, shared, neighbour.username, neighbour.password)).status).toBe(200);
    expect((await fromAddress(server, '127.0.0.23', 'GET', '/auth/me/', { auth: budi })).status).toBe(200);

    // Guessing from many addresses: each address gets its own few guesses at the username, no more.
    const siti = await server.createUser();
    const perAddress = await Promise.all(
      ['127.0.0.24', '127.0.0.25', '127.0.0.26'].map(async (from) => {
        const seen: number[] = [];
        for (let i = 0; i < LIMIT + 1; i++) seen.push((await fromAddress(server, from, 'GET', '/auth/me/', { auth: { username: siti.username, password: `guess-${from}-${i}` } })).status);
        return tally(seen);
      }),
    );
    expect(perAddress).toEqual([0, 1, 2].map(() => ({ 401: LIMIT, 429: 1 })));
    // The owner is slowed by those failures, never refused.
    expect((await login(server, '127.0.0.27', siti.username, siti.password)).status).toBe(200);
  }, 60_000);
});
