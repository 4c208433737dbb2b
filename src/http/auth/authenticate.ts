import type { Orm } from '../../db/orm.js';
import type { Context, Next } from 'koa';
import type { EntityManager } from '@mikro-orm/knex';
import { User } from '../../db/entities/user.js';
import { authenticate } from '../../services/users/authenticate.js';
import { problem, sendProblem } from '../problem.js';
import type { AccessCache } from './access-cache.js';
import { parseBasicAuth, VerifiedCredentialCache, type BasicCredentials } from './basic-auth.js';
import { slowDown, SPRAY_PAUSE_MS, type LoginThrottler } from './login-throttle.js';
import { mayWrite } from '../methods.js';

/** `api_key`: a staff API key on a staff route (staff-gate.ts). */
export type AuthMethod = 'basic' | 'session' | 'api_key';

export interface AuthState {
  user: User | null;
  authMethod: AuthMethod | null;
}

declare module 'koa' {
  interface DefaultState {
    /** The authenticated user as an entity, made on first read (the hot reads use `userFields`). */
    user: User | null;
    authMethod: AuthMethod | null;
  }
}

/** Sets `ctx.state.user` to an entity that is made only if something reads it. */
function setUserLazily(ctx: Context, entity: () => User): void {
  let made: User | undefined;
  Object.defineProperty(ctx.state, 'user', {
    configurable: true,
    enumerable: true,
    get: () => (made ??= entity()),
    set: (value: User | null) => Object.defineProperty(ctx.state, 'user', { value, writable: true, configurable: true, enumerable: true }),
  });
}

/**
 * The client address: the connection's, or with TRUST_PROXY (app.proxy) the last entry of
 * X-Forwarded-For, the one the trusted balancer appended (app.maxIpsCount = 1): entries a client
 * wrote itself come before it and are never read.
 */
export function clientIp(ctx: Context): string {
  return ctx.ip || ctx.socket.remoteAddress || 'unknown';
}

export type PasswordVerdict = { result: 'ok'; user: User } | { result: 'wrong' } | { result: 'rate_limited'; wait: number };

/**
 * One password guess by a client, whatever carries it (Basic, a session login, a password
 * change's current password): counted by the throttle before the compare, so concurrent guesses
 * cannot pass its limit, and slowed down as the throttle says (LoginThrottler). A wrong guess
 * from an address that is spraying many usernames answers 429 after a pause; a correct one is
 * never held up by other usernames' failures.
 */
export async function checkPassword(
  em: EntityManager,
  throttler: LoginThrottler,
  credentials: BasicCredentials,
  client: string,
  now = new Date(),
): Promise<PasswordVerdict> {
  const attempt = await throttler.attempt(credentials.username, client, now);
  if (!attempt.allowed) return { result: 'rate_limited', wait: attempt.retryAfter };
  await slowDown(attempt.delayMs);
  const user = await authenticate({ em }, credentials.username, credentials.password);
  if (!user) {
    const counted = await throttler.failed(client, now);
    if (!counted.spraying) return { result: 'wrong' };
    await slowDown(SPRAY_PAUSE_MS);
    return { result: 'rate_limited', wait: counted.retryAfter };
  }
  await throttler.succeeded(credentials.username, client);
  return { result: 'ok', user };
}

/**
 * Resolves the user of a request from HTTP Basic or the session cookie, and sets
 * `ctx.state.user` / `ctx.state.authMethod`. Wrong Basic credentials answer 401 at once.
 */
export function authenticationMiddleware(orm: Orm, cache: VerifiedCredentialCache, throttler: LoginThrottler, access: AccessCache) {
  // A user seen before costs no query here: the session read (or the Basic credential cache)
  // already read the user's access version for this request. The entity is made only when an
  // operation asks for it: the hot reads need the id and the wire fields alone.
  // `passwordHash`: a cached Basic credential stands only while the user's password is the one it
  // was verified against (a password change on any process shows in the user row). A disabled
  // user's session or cached credential stands no longer (`billing-admin users disable`).
  const userById = async (em: EntityManager, id: string, ctx: Context, passwordHash?: string): Promise<boolean> => {
    const found = await access.user(em, id, ctx);
    if (!found || found.disabled || (passwordHash !== undefined && found.passwordHash !== passwordHash)) return false;
    ctx.state.userFields = found.fields;
    setUserLazily(ctx, found.entity);
    return true;
  };
  return async (ctx: Context, next: Next): Promise<void> => {
    ctx.state.user = null;
    ctx.state.authMethod = null;
    ctx.state.userFields = undefined;
    const credentials = parseBasicAuth(ctx.get('authorization') || undefined);
    if (credentials === 'malformed') {
      ctx.set('WWW-Authenticate', 'Basic realm="billing"');
      return sendProblem(ctx, problem('not_authenticated', 'The Authorization header is not valid Basic credentials.'));
    }
    // NOTE: the lookups below are hot statements on the pool (src/db/hot-sql.ts): they use no
    // identity map, so they need no forked entity manager; a cold Basic check forks one.
    const em = orm.em as EntityManager;
    if (credentials) {
      const cached = cache.get(credentials);
      if (!cached || !(await userById(em, cached.userId, ctx, cached.passwordHash))) {
        if (cached) cache.forget(credentials);
        const verdict = await cache.verifyOnce(credentials, () => checkPassword(orm.em.fork() as EntityManager, throttler, credentials, clientIp(ctx)));
        if (verdict.result === 'rate_limited') {
          ctx.set('Retry-After', String(verdict.wait));
          return sendProblem(ctx, problem('rate_limited', 'Too many failed logins; try again later.'));
        }
        if (verdict.result === 'wrong') {
          ctx.set('WWW-Authenticate', 'Basic realm="billing"');
          return sendProblem(ctx, problem('not_authenticated', 'Invalid username or password.'));
        }
        ctx.state.user = verdict.user;
      }
      ctx.state.authMethod = 'basic';
    } else if (ctx.session && typeof ctx.session.userId === 'string') {
      if (await userById(em, ctx.session.userId, ctx)) ctx.state.authMethod = 'session';
    }
    try {
      await next();
    } finally {
      // A write through this process acts on this process's next request (see AccessCache).
      if (mayWrite(ctx.method)) access.forgetVersions();
    }
  };
}
