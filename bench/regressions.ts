/**
 * The bench's regression check: a figure of this run more than TOLERANCE worse than the
 * committed `bench/results/latest.json` fails the run, so that a slower hot path is seen the day
 * it lands (two figures fell unseen before this check existed).
 *
 * NOTE: machines differ threefold in speed, so raw figures are not compared as they are. A
 * scenario with a baseline is compared by its ratio to the baseline of its own run (usage
 * ingestion: to the bare INSERT); the figures without one (the billing runs' renewals per second,
 * with and without usage, start to first answer, the current usage's p95) are first scaled by
 * how much slower this run's `baseline: select` was on the same database: a machine half as fast
 * is expected to renew half as fast. A faster select does not raise the bar: the billing run and
 * start-up did not follow it (on 2 December the select on PostgreSQL ran 2.2 times as fast as in
 * latest.json, the billing run of 1,000 1.5 times and start-up 1.6 times, and the check failed
 * both as regressions that were not there), so on a faster machine they are held to latest.json's
 * own figures. Peak memory does not depend on speed:
 * compared as it is.
 */

export const TOLERANCE = 0.2;

export interface BenchRow {
  scenario: string;
  database: string;
  requestsPerSecond: number;
  ratio: number | null;
}

export interface BillingFigure {
  subscriptions: number;
  renewalsPerSecond: number;
}

/** The usage scenarios' figures the check compares (bench/usage-scenarios.ts). */
export interface UsageFigure {
  ingestion?: { ratio: number };
  query?: { customer: { p95Ms: number } };
  billing?: BillingFigure[];
}

export interface BenchReport {
  rows: BenchRow[];
  extras: Record<string, { startToFirstAnswerMs?: number; peakRssMb?: number; billing?: BillingFigure[]; usage?: UsageFigure } | undefined>;
}

/**
 * How fast this run's machine is against the earlier one's, by the bare select on `database`,
 * never above 1 (1 when either lacks it): a slower machine lowers the bar, a faster one does not raise it.
 */
export function speedup(previous: BenchReport, current: BenchReport, database: string): number {
  const select = (r: BenchReport) => r.rows.find((row) => row.scenario === 'baseline: select' && row.database === database)?.requestsPerSecond;
  const before = select(previous);
  const now = select(current);
  return before && now ? Math.min(1, now / before) : 1;
}

const pct = (worse: number) => `${Math.round(worse * 100)} %`;

/** Every figure of `current` more than `tolerance` worse than the same figure of `previous`, in words. */
export function findRegressions(previous: BenchReport, current: BenchReport, tolerance = TOLERANCE): string[] {
  const found: string[] = [];
  for (const row of current.rows) {
    if (row.ratio === null) continue;
    const before = previous.rows.find((r) => r.scenario === row.scenario && r.database === row.database);
    if (!before || before.ratio === null || before.ratio <= 0) continue;
    const worse = 1 - row.ratio / before.ratio;
    if (worse > tolerance) found.push(`${row.scenario} (${row.database}): ratio ${row.ratio.toFixed(2)} against ${before.ratio.toFixed(2)} in latest.json, ${pct(worse)} lower`);
  }
  for (const [database, now] of Object.entries(current.extras)) {
    const before = previous.extras[database];
    if (!now || !before) continue;
    const faster = speedup(previous, current, database);
    /** A time of this run against the earlier one's on a machine `faster` times as fast (at most 1). */
    const slowerTime = (what: string, nowMs: number | undefined, beforeMs: number | undefined) => {
      if (nowMs === undefined || beforeMs === undefined) return;
      const expected = beforeMs / faster;
      // Slower: its speed (1 / ms) more than the tolerance below the expected one.
      const worse = 1 - expected / nowMs;
      if (worse > tolerance) found.push(`${what} (${database}): ${nowMs} ms against ${Math.round(expected)} ms expected from latest.json's ${beforeMs} ms, ${pct(worse)} slower`);
    };
    /** Billing runs of this run against the earlier one's of the same size, scaled the same way. */
    const slowerRuns = (what: string, runs: BillingFigure[] | undefined, earlierRuns: BillingFigure[] | undefined) => {
      for (const run of runs ?? []) {
        const earlier = earlierRuns?.find((b) => b.subscriptions === run.subscriptions);
        if (!earlier || earlier.renewalsPerSecond <= 0) continue;
        const expected = earlier.renewalsPerSecond * faster;
        const worse = 1 - run.renewalsPerSecond / expected;
        if (worse > tolerance) found.push(`${what}, ${run.subscriptions} due (${database}): ${run.renewalsPerSecond} renewals/s against ${Math.round(expected)}/s expected from latest.json's ${earlier.renewalsPerSecond}/s, ${pct(worse)} lower`);
      }
    };
    slowerTime('start to first answer', now.startToFirstAnswerMs, before.startToFirstAnswerMs);
    if (now.peakRssMb !== undefined && before.peakRssMb !== undefined && now.peakRssMb > before.peakRssMb * (1 + tolerance)) {
      found.push(`peak RSS under load (${database}): ${now.peakRssMb} MB against ${before.peakRssMb} MB in latest.json`);
    }
    slowerRuns('billing run', now.billing, before.billing);
    // Usage (issue 42): ingestion by its ratio to the bare INSERT of its own run, like the scenarios of `rows`.
    const ingestion = now.usage?.ingestion;
    const ingestionBefore = before.usage?.ingestion;
    if (ingestion && ingestionBefore && ingestionBefore.ratio > 0 && 1 - ingestion.ratio / ingestionBefore.ratio > tolerance) {
      found.push(`POST /events/batch/ (${database}): ratio ${ingestion.ratio.toFixed(2)} to the bare INSERT against ${ingestionBefore.ratio.toFixed(2)} in latest.json, ${pct(1 - ingestion.ratio / ingestionBefore.ratio)} lower`);
    }
    slowerTime('current usage p95', now.usage?.query?.customer.p95Ms, before.usage?.query?.customer.p95Ms);
    slowerRuns('billing run with usage', now.usage?.billing, before.usage?.billing);
  }
  return found;
}
