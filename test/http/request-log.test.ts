import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, describeConfig, loadConfig } from '../../src/config.js';
import { openOrm } from '../../src/db/orm.js';
import { systemClock } from '../../src/domain/clock.js';
import { createApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { systemActor } from '../../src/services/audit/actor.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';
import { prepareDatabase, type Account } from '../helpers/reliability/accounts.js';
import { API, call, startServerProcess, TEST_SERVER_KEY, TEST_SESSION_SECRET, type HttpAnswer, type ServerProcess } from '../helpers/reliability/server-process.js';

/*
 * What an operator reads: the server run as a process with request logs on (as in production),
 * its output taken line by line. Every line is JSON; every request, whatever its answer, is
 * exactly one `request` line with its id, method, path, status, duration, actor and client
 * address; no password, credential, cookie or query value is ever written.
 */

const METRICS_TOKEN = 'metrics-token-4e1d9c7b2a';
const CARD_NUMBER = '4811111111111114';

interface LogLine {
  level: string;
  time: string;
  message: string;
  [field: string]: unknown;
}

describe.each(DATABASES)('request log and process metrics of a server process (%s)', (kind) => {
  let db: TestDatabase;
  let server: ServerProcess;
  let users: Record<string, Account>;
  let apiKey: string;
  /** Each request the test made, by the id it sent (or was given), with its answer. */
  const made = new Map<string, { answer: HttpAnswer; method: string; path: string; actor: string; client: string }>();
  let lines: LogLine[] = [];
  let output = '';
  /** Credentials and values that must appear in no line. */
  const secrets: string[] = [];

  const basic = (a: Account) => `Basic ${Buffer.from(`${a.username}:${a.password}`).toString('base64')}`;

  /** Sends one request under the id `id`, remembering what its log line must say. */
  async function send(
    id: string,
    method: string,
    path: string,
    expected: { actor: string; client?: string; path?: string },
    opts: Parameters<typeof call>[3] = {},
  ): Promise<HttpAnswer> {
    const answer = await call(server.url, method, path, { ...opts, headers: { 'x-request-id': id, ...opts.headers } });
    made.set(id, { answer, method, path: expected.path ?? path, actor: expected.actor, client: expected.client ?? '127.0.0.1' });
    return answer;
  }

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    users = await prepareDatabase(db.url, ['alice', 'carol', 'dave'], { staff: ['carol'] });
    const orm = await openOrm(db.url);
    try {
      const ctx = { em: orm.em.fork() as EntityManager, config: loadConfig({ DATABASE_URL: db.url, SESSION_SECRET: 'x' }), clock: systemClock };
      apiKey = (await createApiKey(ctx, systemActor, { name: 'shop-backend', scope: 'read' })).key;
    } finally {
      await orm.close(true);
    }
    secrets.push(users.alice.password, users.carol.password, basic(users.alice), basic(users.carol), apiKey, METRICS_TOKEN, TEST_SERVER_KEY, TEST_SESSION_SECRET, CARD_NUMBER);
    // TRUST_PROXY: the client is the last X-Forwarded-For entry, as the login throttle reads it.
    server = await startServerProcess({
      databaseUrl: db.url,
      env: { LOG_REQUESTS: 'true', METRICS_TOKEN, TRUST_PROXY: 'true', LOGIN_THROTTLE_LIMIT: '2' },
    });

    // A success, by Basic, through a balancer that appends the client's address.
    const forwarded = { 'x-forwarded-for': '10.9.8.7, 198.51.100.7' };
    expect((await send('req-basic', 'GET', `${API}/subscriptions/`, { actor: 'user:alice', client: '198.51.100.7' }, { basic: users.alice, headers: forwarded })).status).toBe(200);
    // A path that does not exist.
    expect((await send('req-404', 'GET', `${API}/no-such-thing/`, { actor: 'anonymous' })).status).toBe(404);
    // A body that is not JSON, holding a password.
    const broken = `{"username": "alice", "password": "${users.alice.password}`;
    expect((await send('req-400', 'POST', `${API}/auth/login/`, { actor: 'anonymous' }, { rawBody: broken })).status).toBe(400);
    // Failed logins, then the throttle (LOGIN_THROTTLE_LIMIT=2).
    for (const [id, guess, status] of [['req-401-a', 'dave-guess-one', 401], ['req-401-b', 'dave-guess-two', 401], ['req-429', 'dave-guess-three', 429]] as const) {
      secrets.push(guess);
      expect((await send(id, 'POST', `${API}/auth/login/`, { actor: 'anonymous' }, { body: { username: 'dave', password: guess } })).status).toBe(status);
    }
    // A session: its cookie is a credential too.
    const login = await send('req-login', 'POST', `${API}/auth/login/`, { actor: 'anonymous' }, { body: { username: 'alice', password: users.alice.password } });
    expect(login.status, login.text).toBe(200);
    const cookie = login.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    secrets.push(...cookie.split('; ').map((pair) => pair.slice(pair.indexOf('=') + 1)), login.body.csrf_token);
    expect((await send('req-session', 'GET', `${API}/subscriptions/`, { actor: 'user:alice' }, { cookie })).status).toBe(200);
    // Staff by Basic, and an API key.
    expect((await send('req-staff', 'GET', `${API}/admin/customers/`, { actor: 'staff:carol' }, { basic: users.carol })).status).toBe(200);
    expect((await send('req-key', 'GET', `${API}/admin/customers/`, { actor: 'api_key:shop-backend' }, { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(200);
    // Values in a query string (the simulator's card tokenizer takes the card number there).
    const query = `card_number=${CARD_NUMBER}&card_cvv=123&card_exp_month=12&card_exp_year=2030`;
    const tokenized = await send('req-query', 'GET', `/_simulator/v2/token?${query}`, {
      actor: 'anonymous',
      path: '/_simulator/v2/token?card_number=*&card_cvv=*&card_exp_month=*&card_exp_year=*',
    });
    expect(tokenized.status, tokenized.text).toBe(200);
    // A gateway failing with its own 500: the charge is answered 5xx.
    expect((await call(server.url, 'POST', '/_simulator/faults', { body: { mode: 'http_500', count: 1, operations: ['charge'] } })).status).toBe(200);
    const failed = await send('req-5xx', 'POST', `${API}/subscriptions/`, { actor: 'user:alice' }, { basic: users.alice, body: { plan_id: 'basic-monthly', payment_type: 'gopay' } });
    expect(failed.status, failed.text).toBeGreaterThanOrEqual(500);
    // No id sent: the server makes one.
    const plans = await call(server.url, 'GET', `${API}/plans/`);
    expect(plans.status).toBe(200);
    made.set(plans.headers.get('x-request-id')!, { answer: plans, method: 'GET', path: `${API}/plans/`, actor: 'anonymous', client: '127.0.0.1' });
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await db?.drop();
  });

  /** The lines written so far, each parsed (a line that is not JSON fails the test). */
  function readLines(): LogLine[] {
    output = server.output();
    return output
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => {
        expect(() => JSON.parse(line), `not a JSON line: ${line}`).not.toThrow();
        return JSON.parse(line) as LogLine;
      });
  }

  it('answers carry the request id they are logged under, a made one when the client sent none', () => {
    for (const [id, { answer }] of made) expect(answer.headers.get('x-request-id')).toBe(id);
    const generated = [...made.keys()].find((id) => !id.startsWith('req-'))!;
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('every request is exactly one JSON line with its id, method, path, status, duration, actor and client address', () => {
    lines = readLines();
    expect(lines.length).toBeGreaterThan(made.size);
    for (const [id, want] of made) {
      const mine = lines.filter((line) => line.message === 'request' && line.request_id === id);
      expect(mine, `the request line of ${id}`).toHaveLength(1);
      const [line] = mine;
      expect(line).toMatchObject({ level: 'info', method: want.method, path: want.path, status: want.answer.status, actor: want.actor, client_ip: want.client });
      expect(typeof line.duration_ms).toBe('number');
      expect(line.duration_ms as number).toBeGreaterThanOrEqual(0);
      expect(Number.isNaN(Date.parse(line.time))).toBe(false);
    }
    // The 5xx is explained on a line of its own, under the same id.
    const failure = lines.filter((line) => line.request_id === 'req-5xx' && line.message !== 'request');
    expect(failure.length).toBeGreaterThanOrEqual(1);
    expect(['warn', 'error']).toContain(failure[0].level);
  });

  it('/metrics shows the heap, garbage collection and event-loop lag', async () => {
    const scraped = await call(server.url, 'GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(scraped.status).toBe(200);
    const series = new Set(scraped.text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => l.split(/[{ ]/)[0]));
    for (const name of [
      'process_heap_bytes',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_heap_size_limit_bytes',
      'nodejs_gc_duration_seconds_count',
      'nodejs_eventloop_lag_seconds',
      'nodejs_eventloop_lag_p99_seconds',
      // The service's own metrics are still there.
      'billing_http_request_duration_seconds_count',
    ]) {
      expect(series, name).toContain(name);
    }
    // Each metric once: the process's registry is not added twice.
    const helps = scraped.text.split('\n').filter((l) => l.startsWith('# HELP '));
    expect(new Set(helps).size).toBe(helps.length);
  });

  it('start-up and stop lines are JSON too, and no line holds a password, credential, cookie or query value', async () => {
    await server.stop();
    lines = readLines();
    const listening = lines.find((l) => l.message.startsWith('Billing service listening on'));
    expect(listening).toMatchObject({ level: 'info', url: `${server.url}${API}/`, message: `Billing service listening on ${server.url}${API}/` });
    expect(lines.find((l) => l.message.startsWith('process: pid'))).toMatchObject({ pid: server.child.pid });
    expect(lines.map((l) => l.message)).toContain('stopped: every request answered; database closed');
    for (const secret of secrets) expect(output.includes(secret), `"${secret}" in the server's output`).toBe(false);
  });
});

describe('LOG_LEVEL', () => {
  it('takes debug, info, warn, error or silent (info when unset); anything else stops the start naming it', () => {
    const env = { DATABASE_URL: 'sqlite::memory:', SESSION_SECRET: 's' };
    expect(loadConfig(env).logLevel).toBe('info');
    expect(loadConfig({ ...env, LOG_LEVEL: 'WARN' }).logLevel).toBe('warn');
    expect(() => loadConfig({ ...env, LOG_LEVEL: 'loud' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...env, LOG_LEVEL: 'loud' })).toThrow(/LOG_LEVEL must be one of debug, info, warn, error, silent/);
  });
});

describe('the start-up line of the database', () => {
  it('shows no password, neither in the authority nor as a password= parameter', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://billing:hunter2@db.internal:5432/billing?sslmode=require&password=also-secret', SESSION_SECRET: 's' });
    const shown = String(describeConfig(config).database);
    expect(shown).toBe('postgres://billing:***@db.internal:5432/billing?sslmode=require&password=***');
  });
});
