/**
 * Profiles one benchmark scenario: seeds a database like `npm run bench`, starts the production
 * bundle under `node --cpu-prof`, loads one endpoint, stops the server and prints where the CPU
 * went (self time by package and by function). The .cpuprofile is kept for Chrome DevTools.
 *
 * Usage: npm run build && npx tsx bench/profile.ts SCENARIO [DATABASE_URL]
 *   BENCH_NO_PROFILE=1: only the load figures, without the profiler's overhead.
 *   SCENARIO: plans | active-session | active-basic | payments-session | payments-basic | webhook | start
 *   DATABASE_URL: an admin PostgreSQL URL (a fresh database is made in it); SQLite when absent.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { seedBench } from './seed.js';
import { freshDatabase, productionNodeArgs, waitFor } from './support.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SERVER_KEY = 'bench-server-key';
const [scenario = 'plans', adminUrl] = process.argv.slice(2);
const DURATION = Number(process.env.BENCH_DURATION ?? 8);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

/** Where a frame's code lives: a package name, "node:" internals, or "service" for our bundle. */
function owner(url: string): string {
  if (!url) return '(native/gc)';
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (match) return match[1];
  if (url.startsWith('node:')) return 'node internals';
  return url.includes('/dist/') ? 'service (dist)' : url;
}

function summarise(file: string): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[] };
  const total = profile.samples.length;
  const byOwner = new Map<string, number>();
  const byFunction = new Map<string, number>();
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    if (!hits) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const who = owner(url);
    byOwner.set(who, (byOwner.get(who) ?? 0) + hits);
    const key = `${functionName || '(anonymous)'}  ${who}:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + hits);
  }
  const top = (map: Map<string, number>, n: number) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`)
      .join('\n');
  return `samples: ${total}\n\nself time by owner:\n${top(byOwner, 20)}\n\nself time by function:\n${top(byFunction, 40)}\n`;
}

if (adminUrl) process.env.BENCH_DATABASE_URL = adminUrl;
const db = await freshDatabase(adminUrl ? 'postgresql' : 'sqlite');
const profileDir = join(tmpdir(), `billing-cpuprof-${Date.now()}`);
mkdirSync(profileDir, { recursive: true });
try {
  const fixtures = await seedBench(db.url, { webhookOrders: scenario === 'webhook' ? 20_000 : 0, serverKey: SERVER_KEY });
  const port = 4300 + Math.floor(Math.random() * 500);
  const base = `http://127.0.0.1:${port}/api/subscriptions`;
  const profiling = process.env.BENCH_NO_PROFILE !== '1';
  const server = spawn(process.execPath, [...(profiling ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), ...productionNodeArgs(ROOT)], {
    cwd: ROOT,
    env: {
      ...process.env, NODE_ENV: 'production', PORT: String(port), DATABASE_URL: db.url, MIGRATE_ON_START: 'true',
      GATEWAY_BASE_URL: 'http://127.0.0.1:9', PUBLIC_URL: 'https://billing.example.com', GATEWAY_SERVER_KEY: SERVER_KEY, SESSION_SECRET: 'bench-session-secret', LOG_REQUESTS: 'false',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const startMs = await waitFor(`${base}/plans/`);
  process.stderr.write(`first answer after ${Math.round(startMs)} ms\n`);

  if (scenario !== 'start') {
    const login = await fetch(`${base}/auth/login/`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: fixtures.username, password: fixtures.password }),
    });
    const cookie = login.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const basic = `Basic ${Buffer.from(`${fixtures.username}:${fixtures.password}`).toString('base64')}`;
    const jobs: Record<string, Record<string, unknown>> = {
      plans: { url: `${base}/plans/` },
      'active-session': { url: `${base}/subscriptions/active/`, headers: { cookie } },
      'active-basic': { url: `${base}/subscriptions/active/`, headers: { authorization: basic } },
      'payments-session': { url: `${base}/payments/`, headers: { cookie } },
      'payments-basic': { url: `${base}/payments/`, headers: { authorization: basic } },
      webhook: { url: `${base}/webhook/notification/`, method: 'POST', headers: { 'content-type': 'application/json' }, bodies: fixtures.webhookBodies, connections: 16 },
    };
    const job = jobs[scenario];
    if (!job) throw new Error(`unknown scenario ${scenario}`);
    const jobFile = join(profileDir, 'job.json');
    writeFileSync(jobFile, JSON.stringify({ warmupSeconds: 1, durationSeconds: DURATION, runs: 1, connections: 10, ...job }));
    const loader = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/load.ts'), jobFile], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    loader.stdout!.on('data', (d) => (out += d));
    let peakKb = 0;
    const sampler = setInterval(() => {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'));
      if (match) peakKb = Math.max(peakKb, Number(match[1]));
    }, 200);
    await new Promise((resolve) => loader.once('exit', resolve));
    clearInterval(sampler);
    process.stderr.write(`${out}\npeak RSS of the server: ${Math.round(peakKb / 1024)} MB\n`);
  }
  await new Promise<void>((resolve) => {
    server.once('exit', () => resolve());
    server.kill('SIGTERM');
  });
  if (profiling) {
    const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error('the server wrote no profile (did it exit cleanly on SIGTERM?)');
    process.stdout.write(summarise(join(profileDir, file)));
    process.stdout.write(`\nprofile: ${join(profileDir, file)}\n`);
  }
} finally {
  await db.drop();
}
