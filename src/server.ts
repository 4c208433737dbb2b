import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp, type AppOptions, type BillingApp } from './app.js';
import type { Config } from './config.js';
import { loggableMessage } from './db/loggable-error.js';
import { checkpointWal } from './db/orm.js';
import { loggedUrl, requestIdFrom } from './http/request-log.js';
import { createLogger, type Logger } from './logger.js';
import { deleteExpiredSessions } from './http/auth/session-store.js';
import { deleteExpiredHostedSessions } from './services/hosted/hosted-sessions.js';
import { startingProbeAnswer } from './http/health.js';
import { startBillingScheduler } from './services/billing/billing-scheduler.js';
import { startDeliveryWorker, type DeliveryWorker } from './services/delivery/delivery-worker.js';

export interface RunningServer {
  billing: BillingApp;
  server: Server;
  url: string;
  /** Sends queued email and webhook notifications; null when neither channel is configured. */
  delivery: DeliveryWorker | null;
  /**
   * Stops gracefully: new connections are refused at once, requests already being answered get
   * up to `graceMs` (default SHUTDOWN_GRACE_SECONDS) to finish, then the background jobs stop,
   * SQLite's log is checkpointed into its file and the database is closed. `onDraining` is told
   * how many requests are in flight once the listener is closed.
   */
  stop(options?: { graceMs?: number; onDraining?: (inFlight: number) => void }): Promise<{ inFlight: number; cutOff: number }>;
}

/**
 * Listens first (PORT may be 0), then builds the app with its real address, so the simulator
 * and the notification URL point at this very server.
 */
/** Raised when the server cannot take its address: an operator's fix (another PORT or HOST), not a bug. */
export class ListenError extends Error {}

function listenFailure(err: NodeJS.ErrnoException, config: Pick<Config, 'host' | 'port'>): Error {
  const where = `${config.host}:${config.port}`;
  if (err.code === 'EADDRINUSE') return new ListenError(`${where} is already in use (EADDRINUSE): stop the process holding it, or set PORT or HOST`);
  if (err.code === 'EACCES') return new ListenError(`not allowed to listen on ${where} (EACCES): use a port above 1023, or set PORT`);
  if (err.code === 'EADDRNOTAVAIL') return new ListenError(`${config.host} is not an address of this machine (EADDRNOTAVAIL): set HOST`);
  return err;
}

/**
 * The request line of an answer given while the app is being built (src/http/request-log.ts
 * writes the others), with the client address read as Koa reads it for the app.
 */
function logStartingAnswer(req: IncomingMessage, res: ServerResponse, logger: Logger, trustProxy: boolean): void {
  const started = performance.now();
  res.once('finish', () => {
    const [path, query = ''] = (req.url ?? '/').split('?', 2);
    const forwarded = trustProxy ? String(req.headers['x-forwarded-for'] ?? '').split(',').at(-1)?.trim() : '';
    logger.info('request', {
      request_id: res.getHeader('x-request-id'),
      method: req.method,
      path: loggedUrl(path!, query),
      status: res.statusCode,
      duration_ms: Math.round((performance.now() - started) * 10) / 10,
      actor: 'anonymous',
      client_ip: forwarded || req.socket.remoteAddress || 'unknown',
    });
  });
}

export async function startServer(config: Config, options: AppOptions = {}): Promise<RunningServer> {
  // Until the app is built (migrations, contract compilation), answer 503 at once rather than
  // leave early requests — a health check, a gateway notification — hanging with no handler.
  const logger = options.logger ?? createLogger({ level: config.logLevel });
  let handle: RequestListener = (req, res) => {
    res.setHeader('x-request-id', requestIdFrom(req.headers['x-request-id'] as string | undefined));
    if (config.logRequests) logStartingAnswer(req, res, logger, config.trustProxy);
    const probe = startingProbeAnswer(req.url ?? '/');
    if (probe) {
      res.writeHead(probe.status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(probe.body));
      return;
    }
    res.writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '1' });
    res.end(JSON.stringify({ type: 'https://billing.example/problems/service-unavailable', title: 'Service unavailable', status: 503, detail: 'The service is starting; retry shortly.', code: 'service_unavailable' }));
  };
  // Requests being answered, so that a stop lets them finish; once draining, each response closes its connection.
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  const server = createServer((req, res) => {
    inFlight.add(res);
    res.once('close', () => {
      inFlight.delete(res);
      if (draining) server.closeIdleConnections();
    });
    if (draining) res.shouldKeepAlive = false;
    handle(req, res);
  });
  // The gateway's sender gives up after 15 s; keep-alive longer than typical proxies' 60 s.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenFailure(err, config)));
    server.listen(config.port, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  let billing: BillingApp;
  try {
    // Hosted links are made on PUBLIC_URL only; without it (never in production) on this address.
    billing = await createApp({ ...config, port, hosted: { ...config.hosted, publicUrl: config.hosted.publicUrl ?? url } }, { selfUrl: url, ...options, logger });
  } catch (err) {
    server.close();
    throw err;
  }
  handle = billing.app.callback();
  // The first gateway credential check, now that the server (and a built-in simulator) answers:
  // /readyz finds its answer ready (src/services/health/gateway-credentials.ts).
  void billing.gatewayCredentials.refresh();

  const sweeper = setInterval(() => {
    deleteExpiredSessions(billing.orm).catch((err) => billing.logger.warn('session sweep failed', { error: loggableMessage(err) }));
    // A client per address (TRUST_PROXY behind a balancer) leaves a counter per address: bounded by the window.
    billing.throttler.deleteExpired().catch((err) => billing.logger.warn('login throttle sweep failed', { error: loggableMessage(err) }));
    deleteExpiredHostedSessions({ em: billing.orm.em.fork() }, billing.clock.now()).catch((err) =>
      billing.logger.warn('hosted link sweep failed', { error: loggableMessage(err) }),
    );
  }, 60 * 60 * 1000);
  sweeper.unref();
  const billingScheduler =
    config.billingSchedulerIntervalSeconds > 0 ? startBillingScheduler(billing, config.billingSchedulerIntervalSeconds) : null;
  // Receipts' PDFs render in the app's worker pool too, off the event loop.
  const delivery = startDeliveryWorker({ orm: billing.orm, config: billing.config, clock: billing.clock, logger: billing.logger, renderPdf: billing.documents.render });

  return {
    billing,
    server,
    url,
    delivery,
    async stop({ graceMs = config.shutdownGraceSeconds * 1000, onDraining } = {}) {
      draining = true;
      clearInterval(sweeper);
      // Stop listening (idle keep-alive connections close too); requests under way answer with
      // `Connection: close` so that their clients do not send another on the same connection.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const res of inFlight) if (!res.headersSent) res.shouldKeepAlive = false;
      server.closeIdleConnections();
      const waiting = inFlight.size;
      onDraining?.(waiting);
      const schedulerStopped = billingScheduler?.stop();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([...inFlight].map((res) => new Promise<void>((resolve) => (res.closed ? resolve() : res.once('close', () => resolve()))))),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs))),
      ]);
      clearTimeout(timer);
      const cutOff = inFlight.size;
      server.closeAllConnections();
      await closed;
      await schedulerStopped;
      await delivery?.stop();
      // The file alone is then a complete copy (a backup of the file after a stop has everything).
      await checkpointWal(billing.orm).catch((err) => billing.logger.warn('SQLite checkpoint at stop failed', { error: loggableMessage(err) }));
      await billing.close();
      return { inFlight: waiting, cutOff };
    },
  };
}
