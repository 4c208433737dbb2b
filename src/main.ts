// First: it reads which wrappers started this process before anything else can take time.
import { watchWrappers } from './wrapper-watch.js';
import { describeConfig, loadConfig, loadDotEnv, type Config } from './config.js';
import { createLogger, setProcessLogger, type Logger } from './logger.js';
import { VERSION } from './version.js';
import { connectionSecurity, dialectOf } from './db/orm.js';
import { API_ROOT } from './http/api.js';
import { ListenError, startServer, type RunningServer } from './server.js';
import { EXIT, exitStatusFor } from './services/common/classify-failure.js';

// A start that cannot work (bad configuration, a database that is unreachable, missing or behind)
// ends with one line and the documented exit status (docs/operations.md, "Exit codes"), not a stack trace.
let config: Config;
let logger: Logger;
let running: RunningServer;
try {
  loadDotEnv();
  config = loadConfig();
  // The server's lines go to stdout, one JSON object each, the start-up lines included.
  logger = createLogger({ level: config.logLevel, destination: 'stdout' });
  setProcessLogger(logger);
  running = await startServer(config, { logger });
} catch (err) {
  if (err instanceof ListenError) {
    console.error(`Cannot start: ${err.message}`);
    process.exit(1);
  }
  const { code, message } = exitStatusFor(err);
  console.error(`Cannot start: ${message}`);
  if (code === EXIT.internal && err instanceof Error && err.stack) console.error(err.stack);
  process.exit(code);
}

// Each start-up line says its part in words (the message) and in fields a log search can use.
const described = describeConfig(config);
const apiUrl = `${running.url}${API_ROOT}/`;
const dialect = dialectOf(config.databaseUrl);
const encryption = await connectionSecurity(running.billing.orm).catch((err) => `encryption unknown: ${String(err)}`);
const gateway = running.billing.simulator ? `built-in simulator at ${running.url}/_simulator/` : String(described.gateway);
const schedulerSeconds = config.billingSchedulerIntervalSeconds;
logger.info(`Billing service listening on ${apiUrl}`, { url: apiUrl, version: VERSION, env: config.env });
logger.info(`database: ${described.database} (${dialect}, ${encryption})`, { database: described.database, dialect, encryption });
logger.info(`gateway: ${gateway}`, { gateway });
logger.info(`webhook: ${running.billing.notificationUrl}`, { webhook: running.billing.notificationUrl });
logger.info(`docs: ${apiUrl}docs/`, { docs: `${apiUrl}docs/` });
logger.info(
  schedulerSeconds > 0
    ? `billing: a pass every ${schedulerSeconds} s (BILLING_SCHEDULER_INTERVAL=0 turns it off)`
    : 'billing: no in-server pass (BILLING_SCHEDULER_INTERVAL=0): run billing-admin billing run from a scheduler',
  { billing_interval_seconds: schedulerSeconds },
);
logger.info(
  `process: pid ${process.pid}; SIGTERM or SIGINT drains requests (up to ${config.shutdownGraceSeconds} s, SHUTDOWN_GRACE_SECONDS) and closes the database`,
  { pid: process.pid, shutdown_grace_seconds: config.shutdownGraceSeconds },
);

/*
 * SIGTERM and SIGINT however the server was started: `node dist/main.js` (a container's PID 1,
 * systemd), `npm start` (npm relays both to its child), `tsx src/main.ts` (tsx relays them too).
 * NOTE: a signal again during the drain is ignored, not a reason to exit at once: Ctrl-C or a
 * kill of the process group reaches the server twice, once directly and once relayed by npm.
 * SIGKILL remains for a drain an operator will not wait for.
 */
let stopping = false;
function stop(why: string): void {
  if (stopping) return;
  stopping = true;
  running
    .stop({
      onDraining: (inFlight) =>
        logger.info(`${why}: no new connections; draining ${inFlight} request(s) in flight (up to ${config.shutdownGraceSeconds} s)`, { signal: why, in_flight: inFlight }),
    })
    .then(
      ({ cutOff }) => {
        logger.info(cutOff > 0 ? `stopped: ${cutOff} request(s) cut off after ${config.shutdownGraceSeconds} s; database closed` : 'stopped: every request answered; database closed', { cut_off: cutOff });
        process.exit(0);
      },
      (err) => {
        logger.error('stop failed', { error: String(err) });
        process.exit(1);
      },
    );
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stop(signal));

watchWrappers(stop);
