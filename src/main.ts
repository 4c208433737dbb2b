// First: it reads which wrappers started this process before anything else can take time.
import { watchWrappers } from './wrapper-watch.js';
import { describeConfig, loadConfig, loadDotEnv, type Config } from './config.js';
import { connectionSecurity, dialectOf } from './db/orm.js';
import { API_ROOT } from './http/api.js';
import { ListenError, startServer, type RunningServer } from './server.js';
import { EXIT, exitStatusFor } from './services/common/classify-failure.js';

// A start that cannot work (bad configuration, a database that is unreachable, missing or behind)
// ends with one line and the documented exit status (docs/operations.md, "Exit codes"), not a stack trace.
let config: Config;
let running: RunningServer;
try {
  loadDotEnv();
  config = loadConfig();
  running = await startServer(config);
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
const described = describeConfig(config);
console.log(`Billing service listening on ${running.url}${API_ROOT}/`);
console.log(`  database: ${described.database} (${dialectOf(config.databaseUrl)}, ${await connectionSecurity(running.billing.orm).catch((err) => `encryption unknown: ${String(err)}`)})`);
console.log(`  gateway:  ${running.billing.simulator ? `built-in simulator at ${running.url}/_simulator/` : described.gateway}`);
console.log(`  webhook:  ${running.billing.notificationUrl}`);
console.log(`  docs:     ${running.url}${API_ROOT}/docs/`);
console.log(
  `  billing:  ${config.billingSchedulerIntervalSeconds > 0 ? `a pass every ${config.billingSchedulerIntervalSeconds} s (BILLING_SCHEDULER_INTERVAL=0 turns it off)` : 'no in-server pass (BILLING_SCHEDULER_INTERVAL=0): run billing-admin billing run from a scheduler'}`,
);

console.log(`  process:  pid ${process.pid}; SIGTERM or SIGINT drains requests (up to ${config.shutdownGraceSeconds} s, SHUTDOWN_GRACE_SECONDS) and closes the database`);

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
    .stop({ onDraining: (inFlight) => console.log(`${why}: no new connections; draining ${inFlight} request(s) in flight (up to ${config.shutdownGraceSeconds} s)`) })
    .then(
      ({ cutOff }) => {
        console.log(cutOff > 0 ? `stopped: ${cutOff} request(s) cut off after ${config.shutdownGraceSeconds} s; database closed` : 'stopped: every request answered; database closed');
        process.exit(0);
      },
      (err) => {
        console.error(`stop failed: ${String(err)}`);
        process.exit(1);
      },
    );
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stop(signal));

watchWrappers(stop);
