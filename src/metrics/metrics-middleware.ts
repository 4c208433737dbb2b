import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import { API_ROOT, WEBHOOK_PATH } from '../http/api.js';
import { servedSpellings } from '../http/canonical-path.js';
import { problem, sendProblem } from '../http/problem.js';
import { processMetrics } from './process-metrics.js';
import { WEBHOOK_OUTCOMES, type ServiceMetrics, type WebhookOutcome } from './service-metrics.js';

/** Where Prometheus scrapes: the host's root, outside the API mount (openapi.yaml `getMetrics`). */
export const METRICS_PATH = '/metrics';

const WEBHOOK_OPERATION = 'receiveGatewayNotification';
const API_PREFIX = `${API_ROOT}/`;
const WEBHOOK_SPELLINGS: readonly string[] = servedSpellings(WEBHOOK_PATH);

/**
 * Times every API request by its contract operation and final status; the outermost
 * middleware, so problems made by the error boundary are counted with their status. The
 * webhook's outcome is read off the acknowledgement it answers.
 */
export function requestMetrics(metrics: ServiceMetrics): Middleware {
  return async (ctx, next) => {
    if (!ctx.path.startsWith(API_PREFIX) && ctx.path !== API_ROOT) return next();
    // performance.now() is a plain number; hrtime.bigint() would allocate two BigInts per request.
    const started = performance.now();
    try {
      await next();
    } finally {
      const operation = ctx.state.operationId ?? 'unrouted';
      metrics.observeRequest(operation, ctx.status, (performance.now() - started) / 1000);
      // Refused for its size before routing: counted, as nothing of it is stored.
      if (ctx.status === 413 && WEBHOOK_SPELLINGS.includes(ctx.path)) metrics.webhookDropped('too_large');
      if (operation === WEBHOOK_OPERATION) {
        const ack = (ctx.body as { status?: unknown } | null)?.status;
        metrics.webhookOutcome(typeof ack === 'string' && (WEBHOOK_OUTCOMES as readonly string[]).includes(ack) ? (ack as WebhookOutcome) : 'error');
      }
    }
  };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * GET /metrics in the Prometheus text format, for a scraper holding METRICS_TOKEN as a bearer
 * token: the service's metrics and the process's own (src/metrics/process-metrics.ts). With no
 * token configured the endpoint does not exist (404): metrics name operations and volumes,
 * which are not for the public.
 */
export function metricsEndpoint(metrics: ServiceMetrics, token: string | null): Middleware {
  const expected = token ? digest(token) : null;
  // Only a process that serves metrics watches its heap, pauses and event loop.
  const processRegistry = expected ? processMetrics() : null;
  return async (ctx, next) => {
    if (ctx.path !== METRICS_PATH && ctx.path !== `${METRICS_PATH}/`) return next();
    if (!expected) return sendProblem(ctx, problem('not_found', 'Metrics are off: set METRICS_TOKEN to serve them.'));
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      return sendProblem(ctx, problem('method_not_allowed', `${ctx.method} is not allowed on ${METRICS_PATH}.`));
    }
    const given = /^Bearer\s+(.+)$/i.exec(ctx.get('authorization'))?.[1]?.trim();
    if (!given || !timingSafeEqual(digest(given), expected)) {
      ctx.set('WWW-Authenticate', 'Bearer realm="metrics"');
      return sendProblem(ctx, problem('not_authenticated', 'Send METRICS_TOKEN as a bearer token.'));
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.type = metrics.registry.contentType;
    // Both registries write the same text format: the service's metrics, then the process's.
    ctx.body = (await metrics.registry.metrics()) + standardNaN(await processRegistry!.metrics());
  };
}

/**
 * prom-client writes an empty summary's value (the event-loop lag before its first sample) as
 * `Nan`; the text format spells it `NaN`, and strict parsers refuse anything else.
 */
const standardNaN = (text: string): string => text.replace(/ Nan$/gm, ' NaN');
