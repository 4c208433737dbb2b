import type { Config } from '../../config.js';
import type { Orm } from '../../db/orm.js';
import type { Clock } from '../../domain/clock.js';
import type { PaymentGateway } from '../../gateway/types.js';
import type { Logger } from '../../logger.js';
import type { ServiceMetrics } from '../../metrics/service-metrics.js';
import { COUNTERS, runBilling, type BillingRunReport } from './run-billing.js';

export interface BillingScheduler {
  /** Stops the timer and waits for a run in progress to finish. */
  stop(): Promise<void>;
  /** Runs a pass now (unless one is running) and resolves with its report; for tests and operators. */
  tick(): Promise<BillingRunReport | null>;
}

interface SchedulerDeps {
  orm: Orm;
  config: Config;
  gateway: PaymentGateway;
  clock: Clock;
  logger: Logger;
  metrics?: ServiceMetrics;
}

/**
 * The in-server billing pass every BILLING_SCHEDULER_INTERVAL seconds (off by default). One pass
 * at a time per process; passes in several processes split the work through row locks. The
 * timer does not keep the process alive.
 */
export function startBillingScheduler(deps: SchedulerDeps, intervalSeconds: number): BillingScheduler {
  let running: Promise<BillingRunReport | null> | null = null;
  let stopped = false;

  const tick = (): Promise<BillingRunReport | null> => {
    if (running || stopped) return running ?? Promise.resolve(null);
    running = runBilling({ em: deps.orm.em.fork(), config: deps.config, gateway: deps.gateway, clock: deps.clock })
      .then((report) => {
        const counts = Object.fromEntries(COUNTERS.filter((c) => report[c] > 0).map((c) => [c, report[c]]));
        if (report.subscriptions > 0) deps.logger.info('billing run', { at: report.at, subscriptions: report.subscriptions, ...counts });
        for (const e of report.errors) deps.logger.warn('billing run: subscription not billed', { subscription_id: e.subscription_id, error: e.message });
        return report;
      })
      .catch((err: unknown) => {
        deps.logger.error('billing run failed', { error: err instanceof Error ? err.message : String(err) });
        return null;
      })
      .then((report) => {
        deps.metrics?.billingRun(report);
        return report;
      })
      .finally(() => {
        running = null;
      });
    return running;
  };

  const timer = setInterval(() => void tick(), intervalSeconds * 1000);
  timer.unref();
  return {
    tick,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
