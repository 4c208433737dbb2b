import type { Config } from '../../config.js';
import { MIGRATE_COMMAND, pendingMigrations, type Orm } from '../../db/orm.js';
import type { SchedulerHealth, SchedulerStatus } from '../billing/scheduler-status.js';
import type { GatewayCredentialCheck } from './gateway-credentials.js';

/** The gateway in use: a configured Midtrans URL, or the built-in simulator outside production (src/app.ts). */
export function gatewayConfigured(config: Config): boolean {
  return config.gateway.baseUrl !== null || config.env !== 'production';
}

export interface ReadinessCheck {
  ok: boolean;
  /** Why it failed; never a credential, a host name or a driver message (the probe is public). */
  detail: string | null;
}

export interface Readiness {
  ready: boolean;
  checks: { database: ReadinessCheck; schema: ReadinessCheck; gateway: ReadinessCheck; scheduler?: SchedulerHealth };
}

export interface ReadinessDependencies {
  em: Orm['em'];
  config: Config;
  /** The in-server billing scheduler, shown (never counted) in the answer. */
  scheduler?: SchedulerStatus;
  /** Proves the gateway's server key (asked at start and every 5 minutes, never on every probe). */
  credentials?: GatewayCredentialCheck;
  /** How long the database may take to answer before it counts as down (default 2 s). */
  timeoutMs?: number;
}

const PASS: ReadinessCheck = { ok: true, detail: null };

/** Resolves with the promise's value, or rejects once `ms` have passed: a probe must answer even when the database hangs. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Whether this process can serve requests now: the database answers, its schema has every
 * migration of this build, and a gateway is configured whose server key it accepts (the
 * credential check's standing answer: src/services/health/gateway-credentials.ts). Reads only; a failed check is reported,
 * never thrown.
 *
 * NOTE: the billing scheduler is shown, stalled or failing included, but never makes the process
 * not ready: readiness decides whether this process gets requests, and it serves them correctly
 * without a pass (access follows the clock, not the pass: src/domain/paid-access.ts). Counting
 * it would take every process out of the load balancer because one background pass hangs.
 * Alert on the metrics (billing_scheduler_last_success_timestamp_seconds) instead.
 */
export async function checkReadiness(deps: ReadinessDependencies): Promise<Readiness> {
  const timeoutMs = deps.timeoutMs ?? 2000;
  let database = PASS;
  let schema = PASS;
  try {
    const connection = await within(deps.em.getConnection().checkConnection(), timeoutMs);
    if (!connection.ok) database = { ok: false, detail: 'the database does not answer' };
  } catch {
    database = { ok: false, detail: 'the database does not answer' };
  }
  if (!database.ok) {
    schema = { ok: false, detail: 'not checked: the database does not answer' };
  } else {
    try {
      const pending = await within(pendingMigrations(deps), timeoutMs);
      if (pending.length > 0) schema = { ok: false, detail: `${pending.length} pending migration(s); apply them with ${MIGRATE_COMMAND}` };
    } catch {
      schema = { ok: false, detail: 'the migrations table could not be read' };
    }
  }
  let gateway = gatewayConfigured(deps.config) ? PASS : { ok: false, detail: 'no gateway: set GATEWAY_BASE_URL and GATEWAY_SERVER_KEY' };
  if (gateway.ok && deps.credentials) {
    try {
      gateway = await within(deps.credentials.current(), timeoutMs);
    } catch {
      // The first answer is still on its way (a slow gateway at start): not proven yet.
      gateway = { ok: false, detail: 'checking the gateway server key' };
    }
  }
  const scheduler = deps.scheduler ? { scheduler: deps.scheduler.health() } : {};
  return { ready: database.ok && schema.ok && gateway.ok, checks: { database, schema, gateway, ...scheduler } };
}
