/**
 * `npm run bench`: the production bundle under load next to bare-Koa baselines on the same
 * machine and database, in one run. See bench/README.md.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runPdfFloodScenario, type PdfFloodFigures } from './pdf-flood.js';
import { findRegressions, TOLERANCE, type BenchReport } from './regressions.js';
import { seedBench, type BenchFixtures } from './seed.js';
import { runUsageBench, usageTableLines, type UsageFigures } from './usage-scenarios.js';
import { freshDatabase, productionNodeArgs, waitFor } from './support.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SERVER_KEY = 'bench-server-key';
const QUICK = process.env.BENCH_QUICK === '1';
const DURATION = Number(process.env.BENCH_DURATION ?? (QUICK ? 3 : 10));
const WARMUP = Number(process.env.BENCH_WARMUP ?? (QUICK ? 1 : 3));
const RUNS = Number(process.env.BENCH_RUNS ?? (QUICK ? 1 : 3));
/** `pdf-flood` or `usage`: that scenario alone (the service is still started from the bundle); unset: everything. */
const ONLY = process.env.BENCH_ONLY ?? '';
if (ONLY !== '' && ONLY !== 'pdf-flood' && ONLY !== 'usage' && ONLY !== 'webhook') throw new Error(`BENCH_ONLY must be pdf-flood, usage or webhook, got "${ONLY}"`);
/** BENCH_ONLY=webhook: the webhook with its two baselines (insert, settlement), nothing else. */
const WEBHOOK_ONLY = ONLY === 'webhook';
const CONNECTIONS = 10;
const WEBHOOK_CONNECTIONS = 16;
/**
 * BENCH_WEBHOOK_RATE (with BENCH_ONLY=webhook only): the service's webhook and the hand-written
 * settlement are both offered that many requests a second, so their tails compare at the same
 * load on the database rather than each at its own pace.
 */
const WEBHOOK_RATE = Number(process.env.BENCH_WEBHOOK_RATE ?? 0);
if (WEBHOOK_RATE && !WEBHOOK_ONLY) throw new Error('BENCH_WEBHOOK_RATE needs BENCH_ONLY=webhook: a full run is compared with latest.json, measured uncapped');
const webhookRate = WEBHOOK_RATE ? { overallRate: WEBHOOK_RATE } : {};

interface Row {
  scenario: string;
  database: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  baseline: string | null;
  ratio: number | null;
  /** The webhook's ratio to the same statements written by hand (baseline: settlement). */
  settlementRatio?: number;
  non2xx: number;
  target: string;
  /** Whether the figures meet the target (null: a baseline, no target). */
  met: boolean | null;
}

/** A scenario's target: its ratio to its baseline, and for the webhook also to the hand-written settlement and its p99. */
interface Target {
  minRatio: number;
  minSettlementRatio?: number;
  maxP99Ms?: number;
}

const targetText = (t: Target) =>
  [`>= ${t.minRatio.toFixed(2)}`, t.minSettlementRatio === undefined ? '' : `>= ${t.minSettlementRatio.toFixed(2)} of settlement`, t.maxP99Ms === undefined ? '' : `p99 < ${t.maxP99Ms} ms`]
    .filter(Boolean)
    .join(', ');

const meets = (t: Target, ratio: number, settlementRatio: number | undefined, p99: number) =>
  ratio >= t.minRatio && (t.minSettlementRatio === undefined || (settlementRatio ?? 0) >= t.minSettlementRatio) && (t.maxP99Ms === undefined || p99 < t.maxP99Ms);

/** Start to first answer, in milliseconds. */
const START_TARGET_MS = 1000;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

let nextPort = 4100;

function startProcess(command: string, args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr!.on('data', (d: Buffer) => {
    const text = d.toString();
    if (/error/i.test(text)) process.stderr.write(`[${args[0]}] ${text}`);
  });
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

interface LoadFigures {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** Requests sent with a body list (warm-up included); beyond its length bodies were reused. */
  requestsSent?: number;
}

/** Runs autocannon in its own process and returns the median of its runs. */
async function load(job: Record<string, unknown>): Promise<LoadFigures> {
  // The job goes through a file: tens of thousands of webhook bodies do not fit in argv.
  const jobFile = join(tmpdir(), `billing-bench-job-${process.pid}-${nextPort}.json`);
  writeFileSync(jobFile, JSON.stringify({ warmupSeconds: WARMUP, durationSeconds: DURATION, runs: RUNS, connections: CONNECTIONS, ...job }));
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/load.ts'), jobFile], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  await new Promise((resolve) => child.once('exit', resolve));
  rmSync(jobFile, { force: true });
  const { runs, requestsSent } = JSON.parse(out) as { runs: (LoadFigures & { errors: number })[]; requestsSent: number };
  const bodies = (job.bodies as unknown[] | undefined)?.length;
  if (bodies !== undefined && requestsSent > bodies && !job.bodiesMayRepeat) {
    process.stderr.write(`WARNING: ${requestsSent} requests for ${bodies} distinct bodies: raise BENCH_WEBHOOK_ORDERS, the figures include duplicates\n`);
  }
  return {
    requestsSent,
    requestsPerSecond: Math.round(median(runs.map((r) => r.requestsPerSecond))),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    non2xx: runs.reduce((sum, r) => sum + r.non2xx + r.errors, 0),
  };
}

/** Samples the resident memory of a process (Linux /proc) while `work` runs. */
async function peakRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; peakMb: number }> {
  let peak = 0;
  const sample = () => {
    try {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (match) peak = Math.max(peak, Number(match[1]) / 1024);
    } catch {
      // process gone
    }
  };
  const timer = setInterval(sample, 200);
  try {
    const result = await work();
    sample();
    return { result, peakMb: Math.round(peak) };
  } finally {
    clearInterval(timer);
  }
}

/** The service from the production bundle on `databaseUrl`, once it answers; `startMs` from spawning to that first answer. */
async function startService(databaseUrl: string): Promise<{ base: string; server: ChildProcess; startMs: number }> {
  const port = nextPort++;
  const base = `http://127.0.0.1:${port}/api/subscriptions`;
  const spawnedAt = performance.now();
  // BENCH_SERVER_NODE_ARGS: more node flags for the service, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` (written when it
  // stops) or `--max-semi-space-size=16` (overriding start:prod's).
  const extraArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const production = productionNodeArgs(ROOT);
  // Before the script, after the production flags: a V8 flag given twice takes the last value.
  const server = startProcess(process.execPath, [...production.slice(0, -1), ...extraArgs, ...production.slice(-1)], {
    NODE_ENV: 'production',
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    MIGRATE_ON_START: 'true',
    GATEWAY_BASE_URL: 'http://127.0.0.1:9', PUBLIC_URL: 'https://billing.example.com',
    GATEWAY_SERVER_KEY: SERVER_KEY,
    SESSION_SECRET: 'bench-session-secret',
    LOG_REQUESTS: 'false',
  });
  await waitFor(`${base}/plans/`);
  return { base, server, startMs: Math.round(performance.now() - spawnedAt) };
}

/** The usage scenarios (bench/usage-scenarios.ts) on a database of their own, with the service they start. */
function usageBench(kind: 'sqlite' | 'postgresql'): Promise<UsageFigures> {
  return runUsageBench(kind, {
    quick: QUICK,
    startService: async (databaseUrl) => {
      const { base, server } = await startService(databaseUrl);
      return { base, pid: server.pid!, stop: () => stop(server) };
    },
  });
}

async function benchDatabase(kind: 'sqlite' | 'postgresql'): Promise<{ rows: Row[]; extras: Record<string, unknown> }> {
  const rows: Row[] = [];
  const extras: Record<string, unknown> = {};
  if (ONLY === 'usage') {
    extras.usage = await usageBench(kind);
    return { rows, extras };
  }
  const db = await freshDatabase(kind);
  try {
    process.stderr.write(`\n[${kind}] seeding…\n`);
    const fixtures: BenchFixtures = await seedBench(db.url, {
      webhookOrders: ONLY && !WEBHOOK_ONLY ? 0 : Number(process.env.BENCH_WEBHOOK_ORDERS ?? (QUICK ? 15_000 : 100_000)),
      serverKey: SERVER_KEY,
    });

    // The settlement baseline settles orders of its own: the second half; the service the first.
    // Enough for about 1,500 settlements a second through warm-up and runs on each side: a
    // duplicate is answered from its log and would make the webhook look faster than it is.
    const half = Math.floor(fixtures.webhookBodies.length / 2);
    const serviceBodies = fixtures.webhookBodies.slice(0, half);
    const baselineBodies = fixtures.webhookBodies.slice(half);

    // Baselines first, each alone on the machine.
    const baselines: Record<string, LoadFigures> = {};
    const baselineModes = WEBHOOK_ONLY ? (['insert', 'settlement'] as const) : ONLY ? [] : (['plans', 'select', 'insert', 'settlement'] as const);
    for (const mode of baselineModes) {
      const port = nextPort++;
      const child = startProcess(process.execPath, ['--import', 'tsx', 'bench/baseline-server.ts', mode, db.url, String(port)], {});
      await waitFor(`http://127.0.0.1:${port}/`);
      process.stderr.write(`[${kind}] baseline ${mode}…\n`);
      baselines[mode] = await load({
        url: `http://127.0.0.1:${port}/`,
        method: mode === 'insert' || mode === 'settlement' ? 'POST' : 'GET',
        headers: mode === 'select' ? { 'x-user-id': fixtures.benchUserId } : mode === 'settlement' ? { 'content-type': 'application/json' } : undefined,
        connections: mode === 'insert' || mode === 'settlement' ? WEBHOOK_CONNECTIONS : CONNECTIONS,
        // Bodies are reused once they run out: the baseline settles again without deduplicating.
        ...(mode === 'settlement' ? { bodies: baselineBodies, bodiesMayRepeat: true, ...webhookRate } : {}),
      });
      await stop(child);
      rows.push({ scenario: `baseline: ${mode}`, database: kind, ...baselines[mode], baseline: null, ratio: null, target: '', met: null });
    }

    // The service, from the production bundle.
    const { base, server, startMs } = await startService(db.url);
    extras.startToFirstAnswerMs = startMs;

    const login = await fetch(`${base}/auth/login/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: fixtures.username, password: fixtures.password }),
    });
    const cookie = login.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const basic = `Basic ${Buffer.from(`${fixtures.username}:${fixtures.password}`).toString('base64')}`;

    const ratioTo = (rps: number, baseline: keyof typeof baselines) => Math.round((rps / baselines[baseline].requestsPerSecond) * 100) / 100;
    const scenario = async (name: string, job: Record<string, unknown>, baseline: keyof typeof baselines, target: Target) => {
      process.stderr.write(`[${kind}] ${name}…\n`);
      const figures = await load(job);
      const ratio = ratioTo(figures.requestsPerSecond, baseline);
      const settlementRatio = target.minSettlementRatio === undefined ? undefined : ratioTo(figures.requestsPerSecond, 'settlement');
      rows.push({
        scenario: name,
        database: kind,
        ...figures,
        baseline: `baseline: ${baseline}`,
        ratio,
        ...(settlementRatio === undefined ? {} : { settlementRatio }),
        target: targetText(target),
        met: meets(target, ratio, settlementRatio, figures.p99),
      });
    };

    const webhook = () =>
      scenario(
        'POST /webhook/notification/ (settlement)',
        { url: `${base}/webhook/notification/`, method: 'POST', headers: { 'content-type': 'application/json' }, bodies: serviceBodies, connections: WEBHOOK_CONNECTIONS, ...webhookRate },
        'insert',
        { minRatio: 0.35, minSettlementRatio: 0.9, maxP99Ms: 50 },
      );
    if (WEBHOOK_ONLY) {
      await webhook();
      await stop(server);
      return { rows, extras };
    }
    if (!ONLY) {
      const { peakMb } = await peakRss(server.pid!, async () => {
        const read: Target = { minRatio: 0.5 };
        await scenario('GET /plans/', { url: `${base}/plans/` }, 'plans', { minRatio: 0.6 });
        await scenario('GET /subscriptions/active/ (session)', { url: `${base}/subscriptions/active/`, headers: { cookie } }, 'select', read);
        await scenario('GET /subscriptions/active/ (basic)', { url: `${base}/subscriptions/active/`, headers: { authorization: basic } }, 'select', read);
        await scenario('GET /payments/ (session)', { url: `${base}/payments/`, headers: { cookie } }, 'select', read);
        await scenario('GET /payments/ (basic)', { url: `${base}/payments/`, headers: { authorization: basic } }, 'select', read);
        await webhook();
      });
      extras.peakRssMb = peakMb;
    }

    // Plain authenticated GETs alone, then while one user asks for 400 PDFs at once (bench/pdf-flood.ts).
    const pdfBasic = `Basic ${Buffer.from(`${fixtures.pdfUsername}:${fixtures.password}`).toString('base64')}`;
    for (const pattern of ['bursts', 'sustained'] as const) {
      process.stderr.write(`[${kind}] PDF flood (${pattern})…\n`);
      const { result, peakMb: floodPeakMb } = await peakRss(server.pid!, () =>
        runPdfFloodScenario({
          plainUrl: `${base}/subscriptions/active/`,
          plainAuth: basic,
          pdfUrls: fixtures.pdfInvoiceIds.map((id) => `${base}/invoices/${id}/pdf/`),
          floodAuth: pdfBasic,
          durationSeconds: DURATION,
          warmupSeconds: WARMUP,
          pattern,
        }),
      );
      extras[pattern === 'bursts' ? 'pdfFlood' : 'pdfFloodSustained'] = { ...result, pattern, peakRssMb: floodPeakMb };
    }
    await stop(server);

    if (process.env.BENCH_SKIP_BILLING !== '1' && !ONLY) {
      const sizes = (process.env.BENCH_BILLING_SIZES ?? (QUICK ? '1000' : '1000,10000,100000')).split(',').map(Number);
      const { runBillingScenario } = await import('./billing-scenario.js');
      const billing: unknown[] = [];
      for (const size of sizes) {
        process.stderr.write(`[${kind}] billing run with ${size} due wallet subscriptions…\n`);
        billing.push(await runBillingScenario(kind, size, freshDatabase));
      }
      extras.billing = billing;
    }
    if (process.env.BENCH_SKIP_USAGE !== '1' && !ONLY) extras.usage = await usageBench(kind);
  } finally {
    await db.drop();
  }
  return { rows, extras };
}

function printTable(rows: Row[]): string {
  const header = ['scenario', 'database', 'req/s', 'p50 ms', 'p99 ms', 'ratio', 'target', 'met', 'non-2xx'];
  const ratioCell = (r: Row) =>
    r.ratio === null ? '' : r.settlementRatio === undefined ? r.ratio.toFixed(2) : `${r.ratio.toFixed(2)}, ${r.settlementRatio.toFixed(2)} of settlement`;
  const metCell = (r: Row) => (r.met === null ? '' : r.met ? 'yes' : 'no');
  const body = rows.map((r) => [r.scenario, r.database, String(r.requestsPerSecond), String(r.p50), String(r.p99), ratioCell(r), r.target, metCell(r), String(r.non2xx)]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

// BENCH_DATABASES=postgresql (or sqlite): one of the two only.
const kinds = (process.env.BENCH_DATABASES?.split(',') ?? ['sqlite', ...(process.env.BENCH_DATABASE_URL ? ['postgresql'] : [])]) as ('sqlite' | 'postgresql')[];
const all: Row[] = [];
const extras: Record<string, unknown> = {};
for (const kind of kinds) {
  const result = await benchDatabase(kind);
  all.push(...result.rows);
  extras[kind] = result.extras;
}

/** Start time, memory and the billing run against their targets, as a second table. */
function printExtras(byKind: Record<string, Record<string, unknown>>): string {
  const lines = ['| measure | database | figure | target |', '|---|---|---|---|'];
  for (const [kind, e] of Object.entries(byKind)) {
    if (e.startToFirstAnswerMs !== undefined) lines.push(`| start to first answer | ${kind} | ${e.startToFirstAnswerMs} ms | < ${START_TARGET_MS} ms |`);
    if (e.peakRssMb !== undefined) lines.push(`| peak RSS under load | ${kind} | ${e.peakRssMb} MB | < 250 MB |`);
    for (const flood of [e.pdfFlood, e.pdfFloodSustained] as ((PdfFloodFigures & { pattern: string; peakRssMb: number }) | undefined)[]) {
      if (!flood) continue;
      const statuses = Object.entries(flood.flood.byStatus).map(([status, n]) => `${n} x ${status}`).join(', ');
      lines.push(`| plain GET p95, alone / during 400 PDFs (${flood.pattern}) | ${kind} | ${flood.quiet.p95} / ${flood.flooded.p95} ms (${flood.ratio}x; ${flood.quiet.requests} / ${flood.flooded.requests} GETs; flood: ${statuses}${flood.flood.errors ? `, ${flood.flood.errors} errors` : ''}; peak RSS ${flood.peakRssMb} MB) | < 5x |`);
    }
    for (const b of (e.billing as { subscriptions: number; renewed: number; errors: number; seconds: number; renewalsPerSecond: number }[] | undefined) ?? []) {
      const perSubscription = (1000 / Math.max(1, b.renewalsPerSecond)).toFixed(3);
      lines.push(`| billing run, ${b.subscriptions} due | ${kind} | ${b.renewalsPerSecond} renewals/s (${b.renewed} renewed, ${b.errors} errors, ${b.seconds} s, ${perSubscription} ms each) | >= 2000/s at 100000 on PostgreSQL, per renewal no worse than at 1000 |`);
    }
    if (e.usage) lines.push(...usageTableLines(kind, e.usage as UsageFigures));
  }
  return lines.join('\n');
}

const table = `${printTable(all)}\n\n${printExtras(extras as Record<string, Record<string, unknown>>)}`;
process.stdout.write(`\n${table}\n\n${JSON.stringify(extras, null, 2)}\n`);
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const report = {
  date: new Date().toISOString(),
  node: process.version,
  only: ONLY || null,
  settings: { durationSeconds: DURATION, warmupSeconds: WARMUP, runs: RUNS, connections: CONNECTIONS, webhookConnections: WEBHOOK_CONNECTIONS, webhookRate: WEBHOOK_RATE || null },
  rows: all,
  extras,
};
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(join(ROOT, `bench/results/${stamp}.json`), `${JSON.stringify(report, null, 2)}\n`);
process.stderr.write(`\nwritten to bench/results/${stamp}.json\n`);
// One scenario alone neither is checked against nor replaces the latest full run.
if (!ONLY) {
  const latest = join(ROOT, 'bench/results/latest.json');
  const previous = (() => {
    try {
      return JSON.parse(readFileSync(latest, 'utf8')) as BenchReport;
    } catch {
      return null;
    }
  })();
  const regressions = previous ? findRegressions(previous, report as BenchReport) : [];
  // BENCH_ACCEPT=1: a slower figure is known and accepted (say why in the commit); it becomes the new reference.
  if (regressions.length > 0 && process.env.BENCH_ACCEPT !== '1') {
    process.stderr.write(
      `\nBENCH REGRESSION: ${regressions.length} figure(s) fell more than ${TOLERANCE * 100} % below bench/results/latest.json:\n` +
        regressions.map((r) => `  - ${r}\n`).join('') +
        'latest.json is kept. Find the cause, or accept the figures with BENCH_ACCEPT=1 and say why in the commit.\n',
    );
    process.exitCode = 1;
  } else {
    writeFileSync(latest, `${JSON.stringify(report, null, 2)}\n`);
    writeFileSync(join(ROOT, 'bench/results/latest.md'), `${table}\n`);
  }
}
