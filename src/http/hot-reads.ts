import { timingSafeEqual } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import { LRUCache } from 'lru-cache';
import type { Context, Middleware } from 'koa';
import type { Config } from '../config.js';
import type { User } from '../db/entities/user.js';
import type { Orm } from '../db/orm.js';
import type { Clock } from '../domain/clock.js';
import type { PaymentGateway } from '../gateway/types.js';
import type { AccessRule } from './access-middleware.js';
import { API_ROOT } from './api.js';
import type { AnswerCache } from './answer-cache.js';
import type { AccessCache, AnswerVersions } from './auth/access-cache.js';
import { parseBasicAuth, type VerifiedCredentialCache } from './auth/basic-auth.js';
import { BILLING_CUSTOMER_HEADER } from './auth/staff-gate.js';
import { servedSpellings } from './canonical-path.js';
import { paymentHandlers } from './handlers/payments.js';
import { subscriptionHandlers } from './handlers/subscriptions.js';
import type { OperationId, OperationRequest } from './operations.js';

/** The koa-session options the app mounts, and the store it reads sessions through. */
export interface HotSessionOptions {
  key: string;
  maxAge: number;
  signed: boolean;
  rolling: boolean;
  store: { get(key: string, maxAge: number, opts: { ctx: Context; rolling: boolean }): Promise<Record<string, unknown> | undefined> };
}

export interface HotReadsOptions {
  orm: Orm;
  config: Config;
  gateway: PaymentGateway;
  clock: Clock;
  session: HotSessionOptions;
  credentials: VerifiedCredentialCache;
  access: AccessCache;
  /** The last answers of these reads, sent again while nothing they were read from changed. */
  answers: AnswerCache;
  accessRule: AccessRule;
  /** Called with the operation each time the fast path answers, and whether from a kept answer (tests prove which was taken). */
  onServed?: (operationId: OperationId, fromMemory: boolean) => void;
}

type Handler = (req: OperationRequest<OperationId>) => Promise<{ status: number; body: unknown; headers?: Record<string, string>; freshUntil?: number }>;

/** The reads every client polls, by their exact canonical path (with or without the trailing slash, as api.ts serves them). */
const HOT_OPERATIONS = new Map<string, { operationId: OperationId; handler: Handler }>();
for (const [path, operationId, handler] of [
  ['/subscriptions/active/', 'getActiveSubscription', subscriptionHandlers.getActiveSubscription],
  ['/payments/', 'listPayments', paymentHandlers.listPayments],
] as const) {
  const entry = { operationId, handler: handler as unknown as Handler };
  for (const spelling of servedSpellings(`${API_ROOT}${path}`)) HOT_OPERATIONS.set(spelling, entry);
}

/** What Koa's cookie jar signs cookies with (app.keys as a Keygrip): `sign` uses the current key. */
interface SigningKeys {
  sign(data: string): string;
}

/** Session cookies remembered with their signature by the current key (one HMAC per cookie and process). */
const SIGNATURES_KEPT = 10_000;

/**
 * The authenticated customer reads `GET /subscriptions/active/` and `GET /payments/` answered
 * without the per-request framework (koa-session's bookkeeping, openapi-backend's routing and
 * validation, MikroORM's request context): authentication from the same per-process caches
 * with the same checks as the normal path, then the operation's own handler, or its last
 * answer to this user when nothing it was read from has changed since (src/http/answer-cache.ts).
 *
 * NOTE: only a request the normal path would answer 200 with nothing left to validate is
 * answered here: GET, the exact path, no query string at all, no Billing-Customer header, a
 * customer (not staff) authenticated by a cached Basic credential or by a session cookie signed
 * with the current key that koa-session would neither renew nor reject, and the access rule
 * allowing the path. Anything else (HEAD, any `?`, a rotated signing key, a session due for
 * renewal, a cold credential, a staff user, an API key, no active subscription, any error) goes
 * on to the normal path untouched, which answers it as it always has. Metrics count the
 * operation (ctx.state.operationId), and the request logger and CORS, mounted before this,
 * see the request as before.
 */
export function hotReads(options: HotReadsOptions): Middleware {
  const { orm, session, credentials, access, answers } = options;
  const em = orm.em as EntityManager;
  const sessionsUsable = session.signed && !session.rolling;
  const sigName = `${session.key}.sig`;
  const services = { em, config: options.config, gateway: options.gateway, clock: options.clock };

  /** The session's user id when koa-session would load this session and leave it as it is; null otherwise. */
  async function sessionUserId(ctx: Context): Promise<string | null> {
    if (!sessionsUsable) return null;
    const externalKey = ctx.cookies.get(session.key, { signed: false });
    const sig = ctx.cookies.get(sigName, { signed: false });
    if (!externalKey || !sig) return null;
    // Koa's own keys: only the current key's signature will do; an older key's makes koa-session
    // re-sign (Set-Cookie), which is the normal path's to do.
    const keys = (ctx.cookies as unknown as { keys?: SigningKeys }).keys;
    if (!keys || !signedByCurrentKey(keys, `${session.key}=${externalKey}`, sig)) return null;
    const data = await session.store.get(externalKey, session.maxAge, { ctx, rolling: session.rolling });
    if (!data || typeof data.userId !== 'string' || '_session' in data) return null;
    // koa-session's own checks: an expired session is dropped, one past half its age is renewed.
    const expire = data._expire;
    const maxAge = typeof data._maxAge === 'number' ? data._maxAge : session.maxAge;
    if (typeof expire === 'number' && (expire < Date.now() || expire - Date.now() < maxAge / 2)) return null;
    if (expire !== undefined && typeof expire !== 'number') return null;
    return data.userId;
  }

  /**
   * Whether `sig` is `data`'s signature by the current key, as keygrip's `index(data, sig) === 0`
   * says, compared in constant time. keygrip computes an HMAC per key and compares through two
   * more HMACs of a fresh random key (tsscmp): 11 % of a session read's CPU (bench/README.md). The
   * expected signature of a cookie value is a function of it and the key alone, so it is kept.
   */
  const signatures = new LRUCache<string, Buffer>({ max: SIGNATURES_KEPT });
  function signedByCurrentKey(keys: SigningKeys, data: string, sig: string): boolean {
    let expected = signatures.get(data);
    if (expected === undefined) {
      expected = Buffer.from(keys.sign(data));
      signatures.set(data, expected);
    }
    const given = Buffer.from(sig);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** The customer this request authenticates as, by the normal path's rules, when it needs nothing the caches do not hold. */
  async function authenticated(ctx: Context): Promise<{ method: 'basic' | 'session'; entity: () => User } | null> {
    const authorization = ctx.get('authorization');
    let userId: string | null;
    let passwordHash: string | undefined;
    if (authorization !== '') {
      const given = parseBasicAuth(authorization);
      // A session cookie beside Basic is still loaded (and maybe renewed) by koa-session.
      if (given === null || given === 'malformed' || ctx.cookies.get(session.key, { signed: false }) !== undefined) return null;
      const cached = credentials.get(given);
      if (!cached) return null;
      userId = cached.userId;
      passwordHash = cached.passwordHash;
    } else {
      userId = await sessionUserId(ctx);
    }
    if (userId === null) return null;
    const found = await access.user(em, userId, ctx);
    if (!found || found.disabled || found.fields.isStaff || (passwordHash !== undefined && found.passwordHash !== passwordHash)) return null;
    ctx.state.userFields = found.fields;
    // The entity is made only if the handler asks for it (a kept answer never does).
    return { method: passwordHash !== undefined ? 'basic' : 'session', entity: found.entity };
  }

  /** Leaves the context as the normal path expects to find it. */
  const undo = (ctx: Context): void => {
    ctx.state.user = null;
    ctx.state.authMethod = null;
    ctx.state.userFields = undefined;
    ctx.state.accessVersion = undefined;
    ctx.state.operationId = undefined;
  };

  return async (ctx, next) => {
    const hot = ctx.method === 'GET' ? HOT_OPERATIONS.get(ctx.path) : undefined;
    if (!hot || ctx.url.includes('?') || ctx.get(BILLING_CUSTOMER_HEADER) !== '' || ctx.headers[BILLING_CUSTOMER_HEADER.toLowerCase()] !== undefined) return next();
    let result: Awaited<ReturnType<Handler>>;
    let versions: AnswerVersions | undefined;
    let userId: string;
    let user: User | undefined;
    try {
      const signedIn = await authenticated(ctx);
      if (signedIn === null || !ctx.state.userFields) {
        undo(ctx);
        return next();
      }
      userId = ctx.state.userFields.id;
      ctx.state.authMethod = signedIn.method;
      const decision = await options.accessRule(ctx.path, () => ctx.state.userFields ?? null, ctx);
      if (!decision.allowed) {
        undo(ctx);
        return next();
      }
      ctx.state.operationId = hot.operationId;
      if (answers.enabled) {
        // Read before the rows the answer is made of (src/http/answer-cache.ts).
        versions = await access.answerVersions(em, userId);
        const kept = answers.get(answerKey(ctx, hot.operationId, userId), versions, options.clock.now().getTime());
        if (kept) {
          send(ctx, kept.text, kept.headers);
          options.onServed?.(hot.operationId, true);
          return;
        }
      }
      result = await hot.handler({
        koa: ctx,
        query: {} as never,
        path: {} as never,
        body: undefined as never,
        get user() {
          return (user ??= signedIn.entity());
        },
        services,
      });
    } catch {
      // Not found, or anything unexpected: the normal path answers it (and logs what it must).
      undo(ctx);
      return next();
    }
    if (result.status !== 200) {
      undo(ctx);
      return next();
    }
    const text = JSON.stringify(result.body);
    if (versions && result.freshUntil !== undefined) {
      answers.set(answerKey(ctx, hot.operationId, userId), { text, headers: result.headers, versions, freshUntil: result.freshUntil });
    }
    send(ctx, text, result.headers);
    options.onServed?.(hot.operationId, false);
  };
}

/** A 200 JSON answer as text: the same bytes Koa writes for the body it was made from. */
function send(ctx: Context, text: string, headers: Record<string, string> | undefined): void {
  if (headers) ctx.set(headers);
  ctx.status = 200;
  ctx.type = 'application/json';
  ctx.body = text;
}

/**
 * Whose answer to what, as the request spells it: a page's `next` link is made of the request's
 * protocol, host and URL (src/http/pagination.ts), so each spelling keeps its own.
 */
function answerKey(ctx: Context, operationId: OperationId, userId: string): string {
  return `${operationId}\n${userId}\n${ctx.protocol}://${ctx.host}${ctx.originalUrl}`;
}
