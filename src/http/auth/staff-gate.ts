import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import type { Context, Next } from 'koa';
import type { ApiKeyScope } from '../../db/entities/api-key.js';
import type { Orm } from '../../db/orm.js';
import type { Clock } from '../../domain/clock.js';
import { authenticateApiKey } from '../../services/api-keys/authenticate-api-key.js';
import type { Actor } from '../../services/audit/actor.js';
import { problem, sendProblem } from '../problem.js';

/** Who acts on a staff route: a staff user (session or Basic) or an API key. */
export interface StaffPrincipal {
  type: 'staff' | 'api_key';
  id: string;
  name: string;
  scope: ApiKeyScope;
}

declare module 'koa' {
  interface DefaultState {
    staff?: StaffPrincipal;
    /** The request's id on staff routes (X-Request-Id), kept with its audit events. */
    requestId?: string;
  }
}

/** A client's X-Request-Id is kept when it is a plain token; otherwise one is made. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,100}$/;

export function isStaffPath(apiRoot: string, path: string): boolean {
  return path === `${apiRoot}/admin` || path.startsWith(`${apiRoot}/admin/`);
}

/**
 * Paths outside the staff API where a write API key may act for a customer it names: the
 * hosted-page links a client's backend asks for.
 */
const ON_BEHALF_PATHS = ['/checkout-sessions', '/portal-sessions'];

function isOnBehalfPath(apiRoot: string, path: string): boolean {
  const trimmed = path.endsWith('/') ? path.slice(0, -1) : path;
  return ON_BEHALF_PATHS.some((p) => trimmed === `${apiRoot}${p}`);
}

/** What every non-staff caller gets on a staff route: the answer of a path that does not exist. */
export function sendNoSuchRoute(ctx: Context): void {
  sendProblem(ctx, problem('not_found', `No operation at ${ctx.method} ${ctx.path}.`));
}

/**
 * The gate in front of the staff routes (docs/support.md): a Bearer API key, or a staff
 * user already authenticated by Basic or session, goes on with `ctx.state.staff`; a wrong or
 * revoked key answers 401 (as a wrong password does); anyone else gets the 404 of a route
 * that does not exist, so the staff API's very existence is not shown to customers. The key
 * is read from the database on every request: a revocation holds at once on every process.
 */
export function staffGate(orm: Orm, clock: Clock, apiRoot: string) {
  const bearerOf = (ctx: Context): string | null => /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1] ?? null;

  /** A Bearer key, read from the database: true with `ctx.state.staff` set, or false with the 401 sent. */
  async function keyAccepted(ctx: Context): Promise<boolean> {
    const apiKey = await authenticateApiKey(orm.em.fork() as EntityManager, bearerOf(ctx)!, clock.now());
    if (!apiKey) {
      ctx.set('WWW-Authenticate', 'Bearer realm="billing", error="invalid_token"');
      sendProblem(ctx, problem('invalid_api_key', 'The API key is unknown or revoked.'));
      return false;
    }
    ctx.state.authMethod = 'api_key';
    ctx.state.staff = { type: 'api_key', id: apiKey.id, name: apiKey.name, scope: apiKey.scope };
    return true;
  }

  /** A hosted-page link asked for by a key (for the customer the body names) or by the customer. */
  async function onBehalf(ctx: Context, next: Next): Promise<void> {
    if (!bearerOf(ctx)) return next();
    if (!(await keyAccepted(ctx))) return;
    if (ctx.state.staff!.scope !== 'write') {
      return sendProblem(ctx, problem('insufficient_scope', 'This API key may only read; asking for a customer\'s link needs a write key.'));
    }
    return next();
  }

  return async (ctx: Context, next: Next): Promise<void> => {
    if (isOnBehalfPath(apiRoot, ctx.path)) return onBehalf(ctx, next);
    if (!isStaffPath(apiRoot, ctx.path)) return next();
    const given = ctx.get('x-request-id');
    ctx.state.requestId = REQUEST_ID.test(given) ? given : randomUUID();
    ctx.set('X-Request-Id', ctx.state.requestId);

    if (bearerOf(ctx)) return (await keyAccepted(ctx)) ? next() : undefined;
    const user = ctx.state.userFields ?? ctx.state.user;
    if (!user || !user.isStaff) return sendNoSuchRoute(ctx);
    ctx.state.staff = { type: 'staff', id: user.id, name: user.username, scope: 'write' };
    return next();
  };
}

/** The audit trail's actor of a staff request. */
export function staffActor(ctx: Context): Actor {
  const staff = ctx.state.staff;
  if (!staff) throw new Error('a staff operation ran without the staff gate');
  return { type: staff.type, id: staff.id, name: staff.name, requestId: ctx.state.requestId ?? null };
}
