import cors from '@koa/cors';
import { RequestContext } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import Koa from 'koa';
import session from 'koa-session';
import { developmentSessionSecret, type Config } from './config.js';
import { assertSchemaCurrent, migrateUp, openOrm, type Orm } from './db/orm.js';
import { systemClock, type Clock } from './domain/clock.js';
import { MidtransClient } from './gateway/midtrans-client.js';
import type { PaymentGateway } from './gateway/types.js';
import { subscriptionAccessMiddleware, subscriptionAccessRule, type SubscriptionAccessOptions } from './http/access-middleware.js';
import { API_ROOT, createApiMiddleware } from './http/api.js';
import { canonicalPath } from './http/canonical-path.js';
import { AccessCache } from './http/auth/access-cache.js';
import { authenticationMiddleware } from './http/auth/authenticate.js';
import { staffGate } from './http/auth/staff-gate.js';
import { VerifiedCredentialCache } from './http/auth/basic-auth.js';
import { LoginThrottler } from './http/auth/login-throttle.js';
import { databaseSessionStore } from './http/auth/session-store.js';
import { documentBurstLimit } from './http/document-burst-limit.js';
import { docsMiddleware } from './http/docs.js';
import { hostedPages } from './http/hosted/pages.js';
import { healthMiddleware } from './http/health.js';
import { AnswerCache } from './http/answer-cache.js';
import { hotReads } from './http/hot-reads.js';
import { hotWebhook } from './http/hot-webhook.js';
import { errorBoundary } from './http/error-boundary.js';
import { requestId, requestLog } from './http/request-log.js';
import { allHandlers } from './http/handlers/index.js';
import { createLogger, type Logger } from './logger.js';
import { registerDatabaseGauges } from './metrics/database-gauges.js';
import { instrumentGateway } from './metrics/instrumented-gateway.js';
import { metricsEndpoint, requestMetrics } from './metrics/metrics-middleware.js';
import { ServiceMetrics } from './metrics/service-metrics.js';
import { SchedulerStatus } from './services/billing/scheduler-status.js';
import { InvalidNotificationQuota } from './services/gateway-events/invalid-notification-quota.js';
import { DocumentRenderer } from './services/documents/document-renderer.js';
import { RenderPool } from './services/documents/render-pool.js';
import { CatalogueCache } from './services/plans/catalogue-cache.js';
import { eventStore } from './services/usage/event-store.js';
import { GatewayCredentialCheck } from './services/health/gateway-credentials.js';
import type { Simulator } from './simulator/index.js';

export interface AppOptions {
  /** This server's own base URL (for the simulator and derived URLs); default http://HOST:PORT. */
  selfUrl?: string;
  clock?: Clock;
  /** An already open ORM (tests, host applications); otherwise opened from config.databaseUrl. */
  orm?: Orm;
  gateway?: PaymentGateway;
  logger?: Logger;
  /** Check every response against openapi.yaml (on in tests). */
  validateResponses?: boolean;
  /** Answer the polled customer reads by the fast path (src/http/hot-reads.ts); default true. Tests compare both paths. */
  hotReads?: boolean;
  /** Told each time the fast path answers (tests). */
  onHotRead?: (operationId: string, fromMemory: boolean) => void;
  /** Take the gateway's notifications by their fast path (src/http/hot-webhook.ts); default true. Tests compare both paths. */
  hotWebhook?: boolean;
  /** Told each time the webhook's fast path takes a request (tests). */
  onHotWebhook?: () => void;
}

export interface BillingApp {
  app: Koa;
  orm: Orm;
  gateway: PaymentGateway;
  simulator: Simulator | null;
  clock: Clock;
  metrics: ServiceMetrics;
  /** The in-server billing scheduler's state (src/server.ts starts it), for GET /readyz. */
  schedulerStatus: SchedulerStatus;
  /** Invoice and credit-note PDFs, rendered in worker threads (ended by close()). */
  documents: DocumentRenderer;
  /** Failed-login counters (src/server.ts sweeps the expired ones). */
  throttler: LoginThrottler;
  config: Config;
  logger: Logger;
  /** Proves the gateway's server key for /readyz (src/services/health/gateway-credentials.ts). */
  gatewayCredentials: GatewayCredentialCheck;
  /** The webhook URL the gateway is told to notify. */
  notificationUrl: string;
  close(): Promise<void>;
}

export const SESSION_COOKIE = 'billing.sid';

/** Response headers the API sends that a browser page may read (beyond the CORS-safelisted ones). */
const CORS_EXPOSED_HEADERS = ['Retry-After', 'ETag', 'WWW-Authenticate', 'Content-Disposition', 'X-Request-Id'];
/** Request headers the API reads (beyond the CORS-safelisted ones). */
const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'X-CSRF-Token', 'Idempotency-Key', 'If-None-Match', 'X-Request-Id'];

/**
 * CORS for the API's paths only (CORS_ORIGINS, docs/configuration.md): a listed origin gets
 * its own name back with credentials allowed, on requests and on preflights (answered 204
 * here, before authentication, which a preflight never carries); any other origin gets no
 * Access-Control-* header, and its preflight goes on to the API like any OPTIONS request.
 */
function apiCors(origins: string[]): Koa.Middleware {
  const allowed = new Set(origins);
  const handle = cors({
    origin: (ctx) => (allowed.has(ctx.get('Origin')) ? ctx.get('Origin') : ''),
    credentials: true,
    // The methods openapi.yaml uses.
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT'],
    allowHeaders: CORS_ALLOWED_HEADERS,
    exposeHeaders: CORS_EXPOSED_HEADERS,
    maxAge: 600,
  });
  return (ctx, next) => (ctx.path === API_ROOT || ctx.path.startsWith(`${API_ROOT}/`) ? handle(ctx, next) : next());
}

/**
 * Builds the billing service as a Koa application from one typed configuration, so tests and
 * host applications can embed it. It does not listen; see src/server.ts.
 */
export async function createApp(config: Config, options: AppOptions = {}): Promise<BillingApp> {
  const logger = options.logger ?? createLogger({ level: config.logLevel });
  const clock = options.clock ?? systemClock;
  const ownsOrm = !options.orm;
  // Only a server told to migrate may create its database; otherwise a missing, unreachable or
  // out-of-date database stops the start with one clear line (src/main.ts).
  const orm = options.orm ?? (await openOrm(config.databaseUrl, { create: config.migrateOnStart, busyTimeoutMs: config.sqliteBusyTimeoutMs, poolMax: config.databasePoolMax }));
  if (ownsOrm) {
    try {
      if (config.migrateOnStart) await migrateUp(orm);
      else await assertSchemaCurrent(orm);
      // PostgreSQL: the usage events' monthly partitions of the coming months (one catalog read when they exist).
      await eventStore.ensurePartitions(orm.em.fork() as EntityManager, clock.now());
    } catch (err) {
      await orm.close(true);
      throw err;
    }
  }

  const selfUrl = (options.selfUrl ?? `http://${config.host}:${config.port}`).replace(/\/+$/, '');
  const notificationUrl = config.gateway.notificationUrl ?? `${selfUrl}${API_ROOT}/webhook/notification/`;

  // The simulator is mounted only when no gateway URL is configured, never in production.
  // NOTE: imported only then, so the production bundle does not load it (test/build/bundle.test.ts).
  const simulator =
    config.gateway.baseUrl === null && config.env !== 'production'
      ? (await import('./simulator/index.js')).createSimulator({
          serverKey: config.gateway.serverKey,
          notificationUrl: () => notificationUrl,
          publicBaseUrl: () => selfUrl,
          threeDsMode: config.simulator.threeDs,
          retryDelaysMs: config.simulator.notificationRetryMs ?? undefined,
          refundConfirmationDelayMs: config.simulator.refundConfirmationMs,
        })
      : null;
  const metrics = new ServiceMetrics();
  const schedulerStatus = new SchedulerStatus(config.billingSchedulerIntervalSeconds);
  registerDatabaseGauges(metrics, { orm, clock, walletVerifySeconds: config.metricsWalletVerifySeconds });
  const gateway = instrumentGateway(
    options.gateway ??
      new MidtransClient({
        baseUrl: config.gateway.baseUrl ?? `${selfUrl}/_simulator`,
        serverKey: config.gateway.serverKey,
        timeoutMs: config.gateway.timeoutMs,
        // Sent as X-Override-Notification on every charge (docs/gateway.md); unset, the dashboard's URL stands.
        notificationUrl: config.gateway.notificationUrl ?? undefined,
      }),
    metrics,
  );

  // /readyz proves the server key at start and every 5 minutes (src/services/health/gateway-credentials.ts).
  const gatewayCredentials = new GatewayCredentialCheck(gateway, clock);

  const throttler = new LoginThrottler(orm, config.loginThrottleLimit, config.loginThrottleWindowSeconds * 1000);
  const credentialCache = new VerifiedCredentialCache(config.basicAuthCacheSeconds * 1000);
  // Sessions, users and access answers, valid while the user's access version stands.
  const accessCache = new AccessCache(config.accessRecheckMs, { config, clock });
  const answerCache = new AnswerCache(config.answerCacheBytes);
  const invalidWebhookQuota = new InvalidNotificationQuota(config.webhookInvalidPerMinute, {
    onRefused: () => metrics.webhookDropped('invalid_over_quota'),
  });

  // PDFs render in worker threads, started on the first document and ended by close().
  const renderPool = new RenderPool(config.pdfWorkers);
  const documents = new DocumentRenderer((view) => renderPool.render(view), undefined, metrics);

  const keys = config.sessionSecrets.length > 0 ? config.sessionSecrets : [developmentSessionSecret(config.databaseUrl)];
  // With TRUST_PROXY the client is the last X-Forwarded-For entry, the one our balancer appended:
  // whatever a client wrote into the header itself comes before it (login throttle, issue 28).
  const app = new Koa({ proxy: config.trustProxy, maxIpsCount: 1, keys });
  app.silent = true;

  app.use(requestMetrics(metrics));
  app.use(requestId());
  // Outside the error boundary: the line is written for the answer the client gets, problems included.
  if (config.logRequests) app.use(requestLog(logger));
  app.use(errorBoundary(logger));
  // One spelling per path before anything routes or authorises it (src/http/canonical-path.ts).
  app.use((ctx, next) => {
    const canonical = canonicalPath(ctx.path);
    if (canonical !== ctx.path) ctx.path = canonical;
    return next();
  });
  if (config.corsOrigins.length > 0) app.use(apiCors(config.corsOrigins));
  app.use(healthMiddleware({ orm, config, schedulerStatus, credentials: gatewayCredentials }));
  app.use(metricsEndpoint(metrics, config.metricsToken));
  if (simulator) app.use(simulator.middleware);
  app.use(docsMiddleware());
  // SECURE_COOKIES says TLS ends in front of this process: the hop to it may be plain HTTP (no
  // X-Forwarded-Proto, or TRUST_PROXY off), and the cookie must carry Secure all the same.
  if (config.secureCookies) {
    app.use((ctx, next) => {
      ctx.cookies.secure = true;
      return next();
    });
  }
  // The hosted checkout and portal: their own cookie per page, not the API's session.
  app.use(
    hostedPages({
      config,
      services: () => ({ em: orm.em.fork() as EntityManager, config, gateway, clock }),
      csrfKey: keys[0]!,
      gatewayOrigin: config.gateway.baseUrl ? new URL(config.gateway.baseUrl).origin : null,
      simulator: simulator !== null,
      renderPdf: documents.render,
    }),
  );
  const sessionOptions = {
    key: SESSION_COOKIE,
    maxAge: 7 * 24 * 60 * 60 * 1000,
    httpOnly: true,
    sameSite: 'lax',
    secure: config.secureCookies,
    signed: true,
    rolling: false,
    renew: true,
    store: databaseSessionStore(orm, accessCache),
  } as const;
  const accessOptions: SubscriptionAccessOptions = {
    settings: config.subscriptionSettings,
    getUser: (ctx) => ctx.state.userFields ?? ctx.state.user ?? null,
    hasAccess: (user, ctx) => accessCache.hasAccess(orm.em as EntityManager, user.id, ctx),
  };
  // One rule for the middleware and the staff API's access check (GET /admin/customers/{customer}/access/).
  const accessRule = subscriptionAccessRule(accessOptions);
  const handlers = allHandlers({ throttler, catalogue: new CatalogueCache(config.planCacheSeconds, clock), invalidWebhookQuota, documents, accessRule });
  const api = await createApiMiddleware({ config, orm, gateway, clock, handlers, validateResponses: options.validateResponses ?? config.env === 'test' });
  // The gateway's notifications, taken to their handler without the framework below when nothing needs it.
  if (options.hotWebhook !== false) {
    app.use(
      hotWebhook({
        orm,
        config,
        gateway,
        clock,
        handler: handlers.receiveGatewayNotification!,
        access: accessCache,
        accessRule,
        checkAnswer: api.checkAnswer,
        onServed: options.onHotWebhook,
      }),
    );
  }
  // The polled customer reads, answered from the same caches without the framework below when nothing needs it.
  if (options.hotReads !== false) {
    app.use(hotReads({ orm, config, gateway, clock, session: sessionOptions, credentials: credentialCache, access: accessCache, answers: answerCache, accessRule, onServed: options.onHotRead }));
  }
  app.use(session({ ...sessionOptions }, app));
  app.use(authenticationMiddleware(orm, credentialCache, throttler, accessCache));
  app.use(staffGate(orm, clock, API_ROOT));
  app.use(documentBurstLimit(documents));
  app.use(subscriptionAccessMiddleware(accessOptions, accessRule));
  app.use((_ctx, next) => RequestContext.create(orm.em, next));
  app.use(api.middleware);

  return {
    app,
    orm,
    gateway,
    simulator,
    clock,
    metrics,
    schedulerStatus,
    documents,
    throttler,
    config,
    logger,
    notificationUrl,
    gatewayCredentials,
    async close() {
      simulator?.close();
      await renderPool.close();
      if (ownsOrm) await orm.close(true);
    },
  };
}
