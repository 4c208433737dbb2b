/*
 * Preloaded into the service (`BENCH_SERVER_NODE_ARGS="--import ./bench/experiments/gc-watch.mjs"`):
 * every garbage collection's kind and pause, and the event loop's delay, written when the process
 * exits to `gc-watch-<pid>.json` in GC_WATCH_DIR (default: the system's temporary directory).
 * Tells whether a request's long tail is the collector stopping the process.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

const KINDS = { 1: 'scavenge', 2: 'minor mark-sweep', 4: 'mark-compact', 8: 'incremental marking', 16: 'weak callbacks' };
const pauses = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) pauses.push({ at: Math.round(entry.startTime), kind: KINDS[entry.detail?.kind] ?? String(entry.detail?.kind), ms: Number(entry.duration.toFixed(2)) });
}).observe({ entryTypes: ['gc'] });
const delay = monitorEventLoopDelay({ resolution: 5 });
delay.enable();

process.on('exit', () => {
  const byKind = {};
  for (const { kind, ms } of pauses) {
    const k = (byKind[kind] ??= { count: 0, totalMs: 0, maxMs: 0, over5ms: 0, over10ms: 0 });
    k.count++;
    k.totalMs = Number((k.totalMs + ms).toFixed(2));
    k.maxMs = Math.max(k.maxMs, ms);
    if (ms > 5) k.over5ms++;
    if (ms > 10) k.over10ms++;
  }
  const longest = [...pauses].sort((a, b) => b.ms - a.ms).slice(0, 15);
  const ms = (ns) => Number((ns / 1e6).toFixed(2));
  const eventLoopDelay = { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max) };
  writeFileSync(join(process.env.GC_WATCH_DIR ?? tmpdir(), `gc-watch-${process.pid}.json`), JSON.stringify({ byKind, longest, eventLoopDelay }, null, 1));
});
