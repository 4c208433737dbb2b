import { describeConfig, loadConfig, loadDotEnv, type Config } from './config.js';
import { dialectOf } from './db/orm.js';
import { API_ROOT } from './http/api.js';
import { ListenError, startServer, type RunningServer } from './server.js';
import { EXIT, exitStatusFor } from './services/common/classify-failure.js';

// A start that cannot work (bad configuration, a database that is unreachable, missing or behind)
// ends with one line and the documented exit status (README "Exit codes"), not a stack trace.
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
console.log(`  database: ${described.database} (${dialectOf(config.databaseUrl)})`);
console.log(`  gateway:  ${running.billing.simulator ? `built-in simulator at ${running.url}/_simulator/` : described.gateway}`);
console.log(`  webhook:  ${running.billing.notificationUrl}`);
console.log(`  docs:     ${running.url}${API_ROOT}/docs/`);
console.log(
  `  billing:  ${config.billingSchedulerIntervalSeconds > 0 ? `a pass every ${config.billingSchedulerIntervalSeconds} s (BILLING_SCHEDULER_INTERVAL=0 turns it off)` : 'no in-server pass (BILLING_SCHEDULER_INTERVAL=0): run billing-admin billing run from a scheduler'}`,
);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    running.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
