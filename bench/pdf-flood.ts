/**
 * The PDF flood (issue 28, row 12): the p95 of plain authenticated GETs alone, then while one
 * user asks for 400 PDFs at once, each for another of their invoices: in bursts (400 at once,
 * again when all are answered and a second has passed) or sustained (400 always in flight). The plain load and
 * the flood run in processes of their own (`bench/pdf-flood.ts measure|flood JOB`), so neither
 * load generator's event loop shows in the other's figures.
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Job {
  url: string;
  authorization: string;
  /** measure: closed-loop connections; flood: requests kept in flight. */
  concurrency: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** flood: the PDF URLs, asked for round-robin. */
  urls?: string[];
  /** flood: `sustained` keeps `concurrency` requests in flight; `bursts` sends that many at once, then again once all are answered and a second has passed. */
  pattern?: FloodPattern;
}

export type FloodPattern = 'sustained' | 'bursts';

export interface PdfFloodFigures {
  quiet: { requests: number; p50: number; p95: number; non200: number };
  flooded: { requests: number; p50: number; p95: number; non200: number };
  /** flooded p95 / quiet p95 (target < 5). */
  ratio: number;
  flood: { sent: number; byStatus: Record<string, number>; errors: number };
}

const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]);
const round = (ms: number) => Math.round(ms * 10) / 10;

/** Plain GETs on `concurrency` closed loops: the latencies of the run after the warm-up. */
async function measure(job: Job): Promise<{ requests: number; p50: number; p95: number; non200: number }> {
  const latencies: number[] = [];
  let non200 = 0;
  const warmEnd = performance.now() + job.warmupSeconds * 1000;
  const end = warmEnd + job.durationSeconds * 1000;
  await Promise.all(
    Array.from({ length: job.concurrency }, async () => {
      while (performance.now() < end) {
        const started = performance.now();
        const res = await fetch(job.url, { headers: { authorization: job.authorization } });
        await res.arrayBuffer();
        if (started < warmEnd) continue;
        latencies.push(performance.now() - started);
        if (res.status !== 200) non200 += 1;
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { requests: latencies.length, p50: round(percentile(latencies, 50)), p95: round(percentile(latencies, 95)), non200 };
}

/** PDF requests by one user for the warm-up and the run, in the job's pattern. */
async function flood(job: Job): Promise<PdfFloodFigures['flood']> {
  const urls = job.urls ?? [];
  const byStatus: Record<string, number> = {};
  let sent = 0;
  let errors = 0;
  const end = performance.now() + (job.warmupSeconds + job.durationSeconds) * 1000;
  const one = async () => {
    const url = urls[sent++ % urls.length];
    try {
      const res = await fetch(url, { headers: { authorization: job.authorization } });
      await res.arrayBuffer();
      byStatus[res.status] = (byStatus[res.status] ?? 0) + 1;
    } catch {
      errors += 1;
    }
  };
  if (job.pattern === 'bursts') {
    while (performance.now() < end) {
      await Promise.all([new Promise((r) => setTimeout(r, 1000)), ...Array.from({ length: job.concurrency }, one)]);
    }
  } else {
    await Promise.all(
      Array.from({ length: job.concurrency }, async () => {
        while (performance.now() < end) await one();
      }),
    );
  }
  return { sent, byStatus, errors };
}

function child(role: 'measure' | 'flood', job: Job): Promise<unknown> {
  const file = join(tmpdir(), `billing-bench-pdf-${process.pid}-${role}-${Date.now()}.json`);
  writeFileSync(file, JSON.stringify(job));
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/pdf-flood.ts'), role, file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    proc.once('exit', (code) => {
      rmSync(file, { force: true });
      if (code !== 0) reject(new Error(`pdf-flood ${role} exited ${code}`));
      else resolve(JSON.parse(out));
    });
  });
}

/**
 * Runs the scenario against a started service: `plainUrl` with `plainAuth` at 10 connections,
 * alone and then beside the flood of `pdfUrls` with `floodAuth`.
 */
export async function runPdfFloodScenario(opts: {
  plainUrl: string;
  plainAuth: string;
  pdfUrls: string[];
  floodAuth: string;
  durationSeconds: number;
  warmupSeconds: number;
  pattern: FloodPattern;
}): Promise<PdfFloodFigures> {
  const plain: Job = { url: opts.plainUrl, authorization: opts.plainAuth, concurrency: 10, warmupSeconds: opts.warmupSeconds, durationSeconds: opts.durationSeconds };
  const quiet = (await child('measure', plain)) as PdfFloodFigures['quiet'];
  // The flood starts first and runs past the measured window on both sides.
  const flooding = child('flood', { url: '', urls: opts.pdfUrls, authorization: opts.floodAuth, concurrency: 400, pattern: opts.pattern, warmupSeconds: opts.warmupSeconds + 1, durationSeconds: opts.durationSeconds + 1 });
  await new Promise((r) => setTimeout(r, 1000));
  const flooded = (await child('measure', plain)) as PdfFloodFigures['flooded'];
  const floodFigures = (await flooding) as PdfFloodFigures['flood'];
  return { quiet, flooded, ratio: Math.round((flooded.p95 / Math.max(quiet.p95, 0.1)) * 100) / 100, flood: floodFigures };
}

const [role, jobFile] = process.argv.slice(2);
if (role === 'measure' || role === 'flood') {
  const job = JSON.parse(readFileSync(jobFile, 'utf8')) as Job;
  process.stdout.write(JSON.stringify(role === 'measure' ? await measure(job) : await flood(job)));
}
