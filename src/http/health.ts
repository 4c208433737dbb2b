import type { Middleware } from 'koa';
import type { Config } from '../config.js';
import type { Orm } from '../db/orm.js';
import type { SchedulerStatus } from '../services/billing/scheduler-status.js';
import { checkReadiness, type Readiness } from '../services/health/check-readiness.js';
import type { GatewayCredentialCheck } from '../services/health/gateway-credentials.js';
import type { Schemas } from './operations.js';
import { problem, sendProblem } from './problem.js';
import { VERSION } from '../version.js';

/** Where load balancers and orchestrators probe: the host's root, outside the API mount (openapi.yaml `health`). */
export const HEALTH_PATHS = { live: '/healthz', ready: '/readyz' } as const;

export function serializeReadiness(r: Readiness): Schemas['Readiness'] {
  return { status: r.ready ? 'ready' : 'not_ready', checks: r.checks };
}

/**
 * Answers the probes before sessions, authentication and request logging: a probe every few
 * seconds must not write sessions or fill the log. `/healthz` touches nothing; `/readyz` checks
 * the database, its schema and the gateway's server key, and shows the billing scheduler.
 */
export function healthMiddleware(deps: { orm: Orm; config: Config; schedulerStatus?: SchedulerStatus; credentials?: GatewayCredentialCheck }): Middleware {
  return async (ctx, next) => {
    const path = ctx.path.replace(/\/$/, '');
    if (path !== HEALTH_PATHS.live && path !== HEALTH_PATHS.ready) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      return sendProblem(ctx, problem('method_not_allowed', `${ctx.method} is not allowed on ${path}.`));
    }
    ctx.set('Cache-Control', 'no-store');
    if (path === HEALTH_PATHS.live) {
      ctx.body = { status: 'ok', version: VERSION } satisfies Schemas['Health'];
      return;
    }
    const readiness = await checkReadiness({ em: deps.orm.em, config: deps.config, scheduler: deps.schedulerStatus, credentials: deps.credentials });
    ctx.status = readiness.ready ? 200 : 503;
    ctx.body = serializeReadiness(readiness);
  };
}

/** What the probes answer while the app is still being built (src/server.ts): alive, not ready. */
export function startingProbeAnswer(path: string): { status: number; body: unknown } | null {
  const p = path.split('?')[0].replace(/\/$/, '');
  if (p === HEALTH_PATHS.live) return { status: 200, body: { status: 'ok', version: VERSION } };
  if (p === HEALTH_PATHS.ready) {
    const starting = { ok: false, detail: 'the service is starting' };
    return { status: 503, body: { status: 'not_ready', checks: { database: starting, schema: starting, gateway: starting } } };
  }
  return null;
}
