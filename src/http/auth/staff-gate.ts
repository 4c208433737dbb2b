import type { EntityManager } from '@mikro-orm/knex';
import type { Context, Next } from 'koa';
import type { ApiKeyScope } from '../../db/entities/api-key.js';
import type { Orm } from '../../db/orm.js';
import type { Clock } from '../../domain/clock.js';
import { authenticateApiKey } from '../../services/api-keys/authenticate-api-key.js';
import type { Actor } from '../../services/audit/actor.js';
import { NotFoundError } from '../../domain/errors.js';
import { findCustomer } from '../../services/users/find-customer.js';
import { problem, sendProblem } from '../problem.js';

/** Who acts on a staff route: a staff user (session or Basic) or an API key. */
export interface StaffPrincipal {
  type: 'staff' | 'api_key';
  id: string;
  name: string;
  scope: ApiKeyScope;
}

/** The customer an API key acts for (the Billing-Customer header). */
export interface OnBehalfOf {
  id: string;
  username: string;
}

/** The header an API key names its customer in, on a customer operation (docs/integrating.md). */
export const BILLING_CUSTOMER_HEADER = 'Billing-Customer';

declare module 'koa' {
  interface DefaultState {
    staff?: StaffPrincipal;
    /** Set when an API key acts for a customer: `user` is then that customer. */
    onBehalfOf?: OnBehalfOf;
    /** The Billing-Customer a key sent names no customer (the API answers 404 on a customer operation). */
    onBehalfUnknown?: string;
  }
}

export function isStaffPath(apiRoot: string, path: string): boolean {
  return path === `${apiRoot}/admin` || path.startsWith(`${apiRoot}/admin/`);
}

function isApiPath(apiRoot: string, path: string): boolean {
  return path === apiRoot || path.startsWith(`${apiRoot}/`);
}

/** What every non-staff caller gets on a staff route: the answer of a path that does not exist. */
export function sendNoSuchRoute(ctx: Context): void {
  sendProblem(ctx, problem('not_found', `No operation at ${ctx.method} ${ctx.path}.`));
}

/**
 * The gate in front of the staff routes (docs/support.md), and of the customer operations an
 * API key calls for a customer (docs/integrating.md). On a staff route: a Bearer API key, or a staff
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

  /**
   * A key outside the staff API: it acts for the customer the Billing-Customer header names,
   * as that customer's own request would (the same `user` for everything after this gate, the
   * access middleware included). What a key may call there, its scope and a missing header are
   * the API's to decide (api.ts), by the operation's contract; a key alone is no customer.
   */
  async function customerRequest(ctx: Context, next: Next): Promise<void> {
    if (!bearerOf(ctx)) return next();
    if (!(await keyAccepted(ctx))) return;
    ctx.state.user = null;
    ctx.state.userFields = undefined;
    ctx.state.accessVersion = undefined;
    const named = ctx.get(BILLING_CUSTOMER_HEADER);
    if (named === '') return next();
    // An unknown customer is answered by the API: 404 on a customer operation; elsewhere (the
    // plan catalogue) the header means nothing.
    const customer = await findCustomer({ em: orm.em.fork() as EntityManager }, named).catch((err: unknown) => {
      if (err instanceof NotFoundError) return null;
      throw err;
    });
    if (!customer) {
      ctx.state.onBehalfUnknown = named;
      return next();
    }
    // NOTE: a disabled customer gets what their own login would: 401 (docs/integrating.md).
    if (customer.disabledAt !== null) return sendProblem(ctx, problem('not_authenticated', `Customer "${named}" is disabled.`));
    ctx.state.user = customer;
    ctx.state.onBehalfOf = { id: customer.id, username: customer.username };
    return next();
  }

  return async (ctx: Context, next: Next): Promise<void> => {
    ctx.state.onBehalfOf = undefined;
    ctx.state.onBehalfUnknown = undefined;
    if (!isApiPath(apiRoot, ctx.path)) return next();
    if (!isStaffPath(apiRoot, ctx.path)) return customerRequest(ctx, next);
    // NOTE: Billing-Customer means nothing on a staff route, which names its customers itself: ignored.

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
