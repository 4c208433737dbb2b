import type { Config } from '../../config.js';
import { withAdvisoryLock } from '../../db/advisory-lock.js';
import type { Orm } from '../../db/orm.js';
import type { Clock } from '../../domain/clock.js';
import type { PaymentGateway } from '../../gateway/types.js';
import type { Logger } from '../../logger.js';
import type { ServiceMetrics } from '../../metrics/service-metrics.js';
import { COUNTERS, runBilling, type BillingRunReport } from './run-billing.js';
import { loggableMessage } from '../../db/loggable-error.js';
import type { PassOutcome, SchedulerStatus } from './scheduler-status.js';

/** The PostgreSQL advisory lock key of the in-server billing pass ("billpass" in ASCII). */
export const BILLING_PASS_LOCK_KEY = 7091318301269259123n;

export interface BillingScheduler {
  /** Stops the timer and waits for a run in progress to finish. */
  stop(): Promise<void>;
  /** Runs a pass now (unless one is running) and resolves with its outcome; for tests and operators. */
  tick(): Promise<{ outcome: PassOutcome; report: BillingRunReport | null }>;
}

interface SchedulerDeps {
  orm: Orm;
  config: Config;
  gateway: PaymentGateway;
  clock: Clock;
  logger: Logger;
  metrics?: ServiceMetrics;
  schedulerStatus: SchedulerStatus;
}

type Tick = { outcome: PassOutcome; report: BillingRunReport | null };

/**
 * The in-server billing pass every BILLING_SCHEDULER_INTERVAL seconds (docs/billing.md). One pass
 * at a time: in this process a pass still running when the timer fires again is not doubled,
 * and across processes on PostgreSQL the pass runs under an advisory lock, skipped (and counted
 * as `skipped`) when another process holds it; SQLite is served by one process. A pass that
 * throws is logged and counted, and the timer goes on. The timer does not keep the process alive.
 */
export function startBillingScheduler(deps: SchedulerDeps, intervalSeconds: number): BillingScheduler {
  let running: Promise<Tick> | null = null;
  let stopped = false;
  const status = deps.schedulerStatus;

  const pass = async (): Promise<Tick> => {
    const startedAt = status.passBegan();
    let tick: Tick;
    try {
      const run = await withAdvisoryLock(deps.orm.em, BILLING_PASS_LOCK_KEY, () =>
        runBilling({ em: deps.orm.em.fork(), config: deps.config, gateway: deps.gateway, clock: deps.clock }),
      );
      tick = run.acquired ? { outcome: 'ok', report: run.value } : { outcome: 'skipped', report: null };
    } catch (err) {
      // A message only: a driver's error object may carry the connection string.
      deps.logger.error('billing pass failed', { error: loggableMessage(err) });
      tick = { outcome: 'failed', report: null };
    }
    const durationMs = status.tickEnded(tick.outcome, startedAt);
    const report = tick.report;
    if (report) {
      const counts = Object.fromEntries(COUNTERS.filter((c) => report[c] > 0).map((c) => [c, report[c]]));
      if (report.subscriptions > 0) deps.logger.info('billing run', { at: report.at, subscriptions: report.subscriptions, ...counts });
      for (const e of report.errors) deps.logger.warn('billing run: subscription not billed', { subscription_id: e.subscription_id, error: e.message });
    }
    deps.metrics?.billingPass(tick.outcome, report, startedAt, durationMs);
    return tick;
  };

  const tick = (): Promise<Tick> => {
    if (running) return running;
    if (stopped) return Promise.resolve({ outcome: 'skipped', report: null });
    running = pass().finally(() => {
      running = null;
    });
    return running;
  };

  const timer = setInterval(() => void tick(), intervalSeconds * 1000);
  timer.unref();
  status.started();
  return {
    tick,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
