import { randomUUID } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import type { Logger } from '../logger.js';
import { clientIp } from './auth/authenticate.js';

declare module 'koa' {
  interface DefaultState {
    /** The request's id (X-Request-Id): on its log lines, its answer and its audit events. */
    requestId?: string;
  }
}

/** A client's X-Request-Id is kept when it is a plain token; otherwise one is made. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,100}$/;

/**
 * Names every request: the client's X-Request-Id when it is a plain token (a balancer's or a
 * caller's own id, so one id follows the request through both logs), otherwise a new UUID.
 * The answer carries it back, whatever its status.
 */
export function requestId(): Middleware {
  return (ctx, next) => {
    const id = requestIdFrom(ctx.get('x-request-id'));
    ctx.state.requestId = id;
    ctx.set('X-Request-Id', id);
    return next();
  };
}

/** The client's X-Request-Id when it is a plain token, or a new one. */
export function requestIdFrom(given: string | undefined): string {
  return given && REQUEST_ID.test(given) ? given : randomUUID();
}

/** A path as logs show it: a hosted page's link secret is left out. */
export function loggedPath(path: string): string {
  return path.replace(/^\/(pay|portal)\/[^/]+/, '/$1/[link]');
}

/** A query parameter's name worth keeping; anything else (a bare value, a token as a name) is masked whole. */
const PARAMETER_NAME = /^[A-Za-z0-9_.[\]-]{1,40}$/;

/**
 * The path and query as logs show them: the query's names stay, every value is `*` (a card
 * number, an email, a token sent as a parameter never reaches a log).
 */
export function loggedUrl(path: string, querystring: string): string {
  if (querystring === '') return loggedPath(path);
  const masked = querystring.split('&').map((part) => {
    const eq = part.indexOf('=');
    const name = eq < 0 ? '' : part.slice(0, eq);
    return PARAMETER_NAME.test(name) ? `${name}=*` : '*';
  });
  return `${loggedPath(path)}?${masked.join('&')}`;
}

/**
 * Who made the request, as `type:name`: `api_key:<key name>`, `staff:<username>`,
 * `user:<username>` or `anonymous` (no credentials, or credentials that were refused).
 */
export function actorOf(ctx: Context): string {
  const staff = ctx.state.staff;
  if (staff) return `${staff.type}:${staff.name}`;
  // The wire fields first: `user` may be an entity made only when read (src/http/auth/authenticate.ts).
  const user = ctx.state.userFields ?? (ctx.state.authMethod ? ctx.state.user : null);
  return user ? `${user.isStaff ? 'staff' : 'user'}:${user.username}` : 'anonymous';
}

/**
 * One line per request once it is answered, whatever the answer: mounted outside the error
 * boundary, so a failed login, a refused body and a 500 are logged like a success. Nothing of
 * the request's headers or body is written.
 */
export function requestLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    let escaped = false;
    try {
      await next();
    } catch (err) {
      // Nothing should get past the error boundary; if something does, Koa answers it 500.
      escaped = true;
      throw err;
    } finally {
      const fields: Record<string, unknown> = {
        request_id: ctx.state.requestId,
        method: ctx.method,
        path: loggedUrl(ctx.path, ctx.querystring),
        status: escaped ? 500 : ctx.status,
        duration_ms: Math.round((performance.now() - started) * 10) / 10,
        actor: actorOf(ctx),
        client_ip: clientIp(ctx),
      };
      if (ctx.state.onBehalfOf) fields.on_behalf_of = ctx.state.onBehalfOf.username;
      logger.info('request', fields);
    }
  };
}
