import { ConfigError, describeConfig, loadConfig, loadDotEnv } from './config.js';
import { dialectOf } from './db/orm.js';
import { API_ROOT } from './http/api.js';
import { startServer } from './server.js';

loadDotEnv();
let config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(`Configuration error: ${err.message}`);
    process.exit(2);
  }
  throw err;
}

const running = await startServer(config);
const described = describeConfig(config);
console.log(`Billing service listening on ${running.url}${API_ROOT}/`);
console.log(`  database: ${described.database} (${dialectOf(config.databaseUrl)})`);
console.log(`  gateway:  ${running.billing.simulator ? `built-in simulator at ${running.url}/_simulator/` : described.gateway}`);
console.log(`  webhook:  ${running.billing.notificationUrl}`);
console.log(`  docs:     ${running.url}${API_ROOT}/docs/`);

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
