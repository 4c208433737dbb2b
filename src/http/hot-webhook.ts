import type { EntityManager } from '@mikro-orm/knex';
import type { Middleware } from 'koa';
import type { Config } from '../config.js';
import type { Orm } from '../db/orm.js';
import type { Clock } from '../domain/clock.js';
import type { PaymentGateway } from '../gateway/types.js';
import type { AccessRule } from './access-middleware.js';
import { WEBHOOK_PATH } from './api.js';
import type { AccessCache } from './auth/access-cache.js';
import { BILLING_CUSTOMER_HEADER } from './auth/staff-gate.js';
import { readWebhookBody } from './body.js';
import { servedSpellings } from './canonical-path.js';
import type { OperationHandler, OperationId } from './operations.js';

export interface HotWebhookOptions {
  orm: Orm;
  config: Config;
  gateway: PaymentGateway;
  clock: Clock;
  /** The operation's own handler (the same instance the API registers: one invalid-notification quota). */
  handler: OperationHandler<'receiveGatewayNotification'>;
  access: AccessCache;
  accessRule: AccessRule;
  /** Checks an answer against the contract, as the API does for every answer in tests. */
  checkAnswer?: (operationId: OperationId, status: number, body: unknown) => void;
  /** Called each time the fast path takes a request (tests prove it was taken). */
  onServed?: () => void;
}

const PATHS = new Set(servedSpellings(WEBHOOK_PATH));

/**
 * The gateway's notification `POST /webhook/notification/` taken to its handler without the
 * per-request framework in between: koa-session, authentication, the staff gate, MikroORM's
 * request context and openapi-backend's routing. None of them does anything for the request
 * the gateway sends: the operation needs no credentials, its body is read raw and never
 * validated (it is logged whatever it holds), and it has no parameters.
 *
 * NOTE: only that request is taken here: POST, the exact path, no query string, and no
 * Authorization, Cookie or Billing-Customer header (with one of them authentication or the
 * session could answer or set something first); and only when the subscription access rule
 * leaves the path open. Anything else goes on to the normal path, which answers it as it
 * always has. The body is read under the same limit, the handler is the same, errors go to the
 * same error boundary, and a write through this process forgets the cached access versions as
 * the authentication middleware does after every write.
 */
export function hotWebhook(options: HotWebhookOptions): Middleware {
  const services = () => ({ em: options.orm.em.fork() as EntityManager, config: options.config, gateway: options.gateway, clock: options.clock });
  return async (ctx, next) => {
    if (ctx.method !== 'POST' || !PATHS.has(ctx.path) || ctx.url.includes('?')) return next();
    const headers = ctx.headers;
    if (headers.authorization !== undefined || headers.cookie !== undefined || headers[BILLING_CUSTOMER_HEADER.toLowerCase()] !== undefined) return next();
    if (!(await options.accessRule(ctx.path, () => null, ctx)).allowed) return next();
    ctx.state.user = null;
    ctx.state.authMethod = null;
    options.onServed?.();
    try {
      await readWebhookBody(ctx, options.config.maxBodyBytes);
      // After the body, as the router names it: a body refused for its size is counted unrouted.
      ctx.state.operationId = 'receiveGatewayNotification';
      const result = await options.handler({
        koa: ctx,
        query: {} as never,
        path: {} as never,
        body: undefined as never,
        user: null,
        services: services(),
      });
      options.checkAnswer?.('receiveGatewayNotification', result.status, result.body);
      ctx.status = result.status;
      ctx.type = 'application/json';
      ctx.body = result.body;
    } finally {
      options.access.forgetVersions();
    }
  };
}
