import { loadConfig, type Config } from '../../src/config.js';
import type { Clock } from '../../src/domain/clock.js';
import { API_ROOT } from '../../src/http/api.js';
import { quietLogger, type Logger } from '../../src/logger.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { seedPlans, type PlanSeed } from '../../src/services/plans/seed-plans.js';
import { createUser, type CreateUserInput } from '../../src/services/users/create-user.js';
import { createTestDatabase, type DatabaseKind, type TestDatabase } from './database.js';

export interface Credentials {
  username: string;
  password: string;
}

export interface RequestOptions {
  body?: unknown;
  /** A raw body sent as is (for malformed input). */
  rawBody?: string;
  auth?: Credentials;
  headers?: Record<string, string>;
  session?: Session;
}

export interface Session {
  cookie: string;
  csrfToken: string;
}

export interface HttpResult<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface TestServer {
  url: string;
  db: TestDatabase;
  running: RunningServer;
  config: Config;
  /** A request to the billing API (path relative to /api/subscriptions). */
  api<T = any>(method: string, path: string, options?: RequestOptions): Promise<HttpResult<T>>;
  /** A request to any path of the server. */
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<HttpResult<T>>;
  createUser(input?: Partial<CreateUserInput>): Promise<Credentials & { id: string }>;
  seedPlans(plans: PlanSeed[]): Promise<void>;
  login(credentials: Credentials): Promise<Session>;
  stop(): Promise<void>;
}

let userCounter = 0;

/** The plans most tests need. */
export const STANDARD_PLANS: PlanSeed[] = [
  { slug: 'basic-monthly', name: 'Basic', description: 'Basic monthly plan', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 1, features: { projects: 3 } },
  { slug: 'pro-monthly', name: 'Pro', description: 'Pro monthly plan for teams', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 2, features: { projects: 50 } },
  { slug: 'pro-trial', name: 'Pro with trial', description: 'Pro with a 14 day trial', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month', trial_period_days: 14, sort_order: 3 },
  { slug: 'weekly', name: 'Weekly', description: 'Billed every week', price: 20000, currency: 'IDR', interval: 1, interval_unit: 'week', sort_order: 4 },
  { slug: 'legacy', name: 'Legacy', description: 'No longer sold', price: 10000, currency: 'IDR', interval: 1, interval_unit: 'month', status: 'inactive', sort_order: 5 },
  { slug: 'usd-monthly', name: 'Dollar plan', description: 'Priced in dollars', price: '9.99', currency: 'USD', interval: 1, interval_unit: 'month', sort_order: 6 },
];

/**
 * Starts the real server on an ephemeral port over a fresh database (migrations applied), with
 * the built-in gateway simulator, and returns an HTTP client for it.
 */
export async function startTestServer(
  kind: DatabaseKind,
  options: {
    env?: Record<string, string>;
    config?: Partial<Config>;
    clock?: Clock;
    /** Build the API as production does (no contract self-check, no response validation). */
    productionValidation?: boolean;
    /** Where the server logs (default: warnings and errors on stderr). */
    logger?: Logger;
  } = {},
): Promise<TestServer> {
  const db = await createTestDatabase(kind);
  const config = loadConfig(
    // The in-server billing pass is off unless a test asks for it: tests run billing at the times they choose.
    { NODE_ENV: 'test', DATABASE_URL: db.url, SESSION_SECRET: 'test-session-secret', PORT: '0', LOG_REQUESTS: 'false', BILLING_SCHEDULER_INTERVAL: '0', ...options.env },
    { migrateOnStart: true, planCacheSeconds: 0, accessRecheckMs: 0, ...options.config },
  );
  const running = await startServer(config, { logger: options.logger ?? quietLogger, clock: options.clock, validateResponses: !options.productionValidation });

  const request = async <T>(method: string, path: string, opts: RequestOptions = {}): Promise<HttpResult<T>> => {
    const headers: Record<string, string> = { ...opts.headers };
    let body: string | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    if (opts.auth) headers.authorization = `Basic ${Buffer.from(`${opts.auth.username}:${opts.auth.password}`).toString('base64')}`;
    if (opts.session) {
      headers.cookie = opts.session.cookie;
      if (!['GET', 'HEAD'].includes(method)) headers['x-csrf-token'] ??= opts.session.csrfToken;
    }
    const res = await fetch(`${running.url}${path}`, { method, headers, body, redirect: 'manual' });
    const text = await res.text();
    let parsed: unknown = text;
    if (/json/.test(res.headers.get('content-type') ?? '') && text) parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  };

  const server: TestServer = {
    url: running.url,
    db,
    running,
    config,
    request,
    api: (method, path, opts) => request(method, `${API_ROOT}${path}`, opts),
    async createUser(input = {}) {
      userCounter += 1;
      const username = input.username ?? `user${userCounter}_${process.pid}`;
      const password = input.password ?? 'correct horse battery';
      const user = await createUser({ em: running.billing.orm.em.fork(), config, clock: running.billing.clock }, {
        email: `${username}@example.com`,
        firstName: 'Test',
        lastName: 'User',
        ...input,
        username,
        password,
      });
      return { id: user.id, username, password };
    },
    async seedPlans(plans) {
      await seedPlans({ em: running.billing.orm.em.fork(), config, clock: running.billing.clock }, plans);
    },
    async login(credentials) {
      const res = await request<{ csrf_token: string }>('POST', `${API_ROOT}/auth/login/`, {
        body: { username: credentials.username, password: credentials.password },
      });
      if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
      const cookie = res.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      return { cookie, csrfToken: res.body.csrf_token };
    },
    async stop() {
      await running.stop();
      await db.drop();
    },
  };
  return server;
}
