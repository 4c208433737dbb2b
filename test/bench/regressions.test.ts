import { describe, expect, it } from 'vitest';
import { findRegressions, type BenchReport } from '../../bench/regressions.js';

const report = (select: number, active: number, renewals: number, startMs: number, rssMb = 140): BenchReport => ({
  rows: [
    { scenario: 'baseline: select', database: 'sqlite', requestsPerSecond: select, ratio: null },
    { scenario: 'GET /subscriptions/active/ (basic)', database: 'sqlite', requestsPerSecond: active, ratio: active / select },
  ],
  extras: { sqlite: { startToFirstAnswerMs: startMs, peakRssMb: rssMb, billing: [{ subscriptions: 1000, renewalsPerSecond: renewals }] } },
});

describe('the bench regression check', () => {
  it('passes a run within 20 % of latest.json, and a faster machine with the same ratios', () => {
    expect(findRegressions(report(10000, 2400, 3000, 1000), report(10000, 2000, 2500, 1200))).toEqual([]);
    expect(findRegressions(report(10000, 2400, 3000, 1000), report(30000, 7200, 9000, 340))).toEqual([]);
  });

  it('names each figure that fell more than 20 %: a ratio, the billing run and the start scaled by the machine, memory as it is', () => {
    const found = findRegressions(report(10000, 2400, 3207, 1138, 140), report(10000, 1700, 1379, 1457, 180));
    expect(found).toHaveLength(4);
    expect(found[0]).toMatch(/^GET \/subscriptions\/active\/ \(basic\) \(sqlite\): ratio 0\.17 against 0\.24 in latest\.json, 29 % lower$/);
    expect(found.join('\n')).toMatch(/start to first answer \(sqlite\): 1457 ms against 1138 ms expected/);
    expect(found.join('\n')).toMatch(/peak RSS under load \(sqlite\): 180 MB against 140 MB/);
    expect(found.join('\n')).toMatch(/billing run, 1000 due \(sqlite\): 1379 renewals\/s against 3207\/s expected from latest\.json's 3207\/s, 57 % lower/);
  });

  it('a faster select does not raise the bar: a machine twice as fast whose renewals and start-up gained less is no regression', () => {
    // 2 December on PostgreSQL: the select 2.2 times as fast, the billing run 1.5 times, start-up 1.6 times.
    expect(findRegressions(report(3130, 600, 1399, 1154), report(6790, 1300, 2138, 738))).toEqual([]);
    // Held to latest.json's own figures: slower than them on a faster machine still fails.
    const found = findRegressions(report(3130, 600, 1399, 1154), report(6790, 1300, 1000, 1500));
    expect(found).toHaveLength(2);
    expect(found.join('\n')).toMatch(/billing run, 1000 due \(sqlite\): 1000 renewals\/s against 1399\/s expected/);
    expect(found.join('\n')).toMatch(/start to first answer \(sqlite\): 1500 ms against 1154 ms expected/);
  });

  it('a slower machine is expected to be slower: half the select, half the renewals is no regression', () => {
    expect(findRegressions(report(10000, 2400, 3000, 1000), report(5000, 1200, 1500, 2000))).toEqual([]);
    expect(findRegressions(report(10000, 2400, 3000, 1000), report(5000, 1200, 1000, 2000))).toHaveLength(1);
  });

  it('compares only what both runs measured', () => {
    const earlier: BenchReport = { rows: [], extras: {} };
    expect(findRegressions(earlier, report(10000, 100, 1, 99999))).toEqual([]);
  });
});

describe('the usage figures (issue 42)', () => {
  const withUsage = (select: number, ratio: number, p95Ms: number, renewals: number): BenchReport => ({
    rows: [{ scenario: 'baseline: select', database: 'postgresql', requestsPerSecond: select, ratio: null }],
    extras: { postgresql: { usage: { ingestion: { ratio }, query: { customer: { p95Ms } }, billing: [{ subscriptions: 1000, renewalsPerSecond: renewals }] } } },
  });

  it('a first run with usage figures has nothing to compare them with, and passes', () => {
    const before: BenchReport = { rows: [{ scenario: 'baseline: select', database: 'postgresql', requestsPerSecond: 5000, ratio: null }], extras: { postgresql: { billing: [] } } };
    expect(findRegressions(before, withUsage(5000, 0.1, 900, 10))).toEqual([]);
  });

  it('names the ingestion ratio, the usage p95 and the billing run with usage when each is more than 20 % worse', () => {
    expect(findRegressions(withUsage(5000, 0.6, 10, 1500), withUsage(10000, 0.5, 6, 2500))).toEqual([]);
    const found = findRegressions(withUsage(5000, 0.6, 10, 1500), withUsage(5000, 0.4, 20, 1000));
    expect(found).toEqual([
      'POST /events/batch/ (postgresql): ratio 0.40 to the bare INSERT against 0.60 in latest.json, 33 % lower',
      "current usage p95 (postgresql): 20 ms against 10 ms expected from latest.json's 10 ms, 50 % slower",
      "billing run with usage, 1000 due (postgresql): 1000 renewals/s against 1500/s expected from latest.json's 1500/s, 33 % lower",
    ]);
  });
});
