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

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Which source file each line of a bundle came from: esbuild starts each module with `// src/…`. */
const bundleSources = new Map<string, { line: number; file: string }[]>();
function sourceOf(url: string, lineNumber: number): string | null {
  if (!url.includes('/dist/')) return null;
  let marks = bundleSources.get(url);
  if (!marks) {
    marks = [];
    const lines = readFileSync(fileURLToPath(url), 'utf8').split('\n');
    lines.forEach((text, i) => {
      const match = /^\/\/ ((?:src|cli)\/\S+\.ts)$/.exec(text);
      if (match) marks!.push({ line: i, file: match[1] });
    });
    bundleSources.set(url, marks);
  }
  let found: string | null = null;
  for (const mark of marks) {
    if (mark.line > lineNumber) break;
    found = mark.file;
  }
  return found;
}

/**
 * The stage a frame's self time belongs to, or null when the frame is a utility whose caller
 * decides (lodash, node's internals, tslib): the innermost decisive frame of a sample names it.
 */
function stageOf(frame: ProfileNode['callFrame']): string | null {
  const { functionName, url, lineNumber } = frame;
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)') return 'V8 and native (unattributed)';
  if (!url && (functionName === 'stringify')) return 'serialisation';
  if (/^node:(net|_http_|internal\/stream_base_commons|internal\/http|internal\/streams|stream)/.test(url)) return 'HTTP parsing and sockets (node)';
  if (/^node:internal\/crypto|^node:crypto/.test(url)) return 'hashing and signatures (node crypto)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) {
    if (/^(better-sqlite3|pg|pg-protocol|pg-pool|pg-types|knex|tarn)$/.test(pkg)) return 'database (driver and statements)';
    if (pkg.startsWith('@mikro-orm/')) return 'ORM (MikroORM)';
    if (/^(openapi-backend|ajv|ajv-formats|bath-es5|@apidevtools\/.*|openapi-types|fast-uri)$/.test(pkg)) return 'routing and validation (openapi-backend, Ajv)';
    if (/^(koa-session|keygrip|cookies|tsscmp)$/.test(pkg)) return 'session (koa-session, cookies)';
    if (/^(koa|koa-compose|@koa\/.*|on-finished|delegates|statuses|http-errors|vary|content-type|type-is|accepts|mime-types|encodeurl|escape-html|fresh|only|destroy)$/.test(pkg)) return 'Koa';
    if (pkg === 'prom-client') return 'metrics';
    return null;
  }
  const source = sourceOf(url, lineNumber);
  if (!source) return null;
  if (source === 'src/db/hot-sql.ts') return 'database (driver and statements)';
  if (source.startsWith('src/http/auth/')) return 'authentication (ours)';
  if (/serializers\.ts$|^src\/db\/row-fields\.ts$/.test(source)) return 'serialisation';
  if (source.startsWith('src/metrics/')) return 'metrics';
  if (source === 'src/logger.ts' || source === 'src/http/error-boundary.ts') return 'logging and error boundary';
  if (/^src\/http\/(api|operations|canonical-path|path-ids|body|input-limits|problem)\.ts$/.test(source)) return 'routing and validation (ours)';
  if (source.startsWith('src/http/handlers/')) return 'handlers (ours)';
  if (source.startsWith('src/services/') || source.startsWith('src/domain/')) return 'services and rules (ours)';
  if (source.startsWith('src/db/')) return 'row and type mapping (ours)';
  if (source.startsWith('src/http/') || /^src\/(app|main|server)\.ts$/.test(source)) return 'other middleware (ours)';
  return `ours (${source})`;
}

/**
 * Milliseconds of CPU per request by stage, over the samples taken while the measured load ran
 * (between `from` and `to`, in the monotonic microseconds V8 and process.hrtime share on Linux).
 */
function stages(profile: Profile, from: number, to: number, requests: number): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageOfNode = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = stageOfNode.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id)!;
    const up = parent.get(id);
    const stage = stageOf(node.callFrame) ?? (up === undefined ? 'node and V8 (other)' : resolve(up));
    stageOfNode.set(id, stage);
    return stage;
  };
  const micros = new Map<string, number>();
  let t = profile.startTime;
  let total = 0;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i];
    if (t < from || t > to) return;
    const delta = profile.timeDeltas[i + 1] ?? 0;
    const stage = resolve(id);
    micros.set(stage, (micros.get(stage) ?? 0) + delta);
    if (stage !== 'idle') total += delta;
  });
  const rows = [...micros.entries()].sort((a, b) => b[1] - a[1]);
  const perRequest = (us: number) => (us / 1000 / Math.max(1, requests)).toFixed(3);
  return [
    `CPU per request by stage (${requests} requests in the window; idle excluded from the total):`,
    '| stage | ms per request | share |',
    '|---|---|---|',
    ...rows.map(([stage, us]) => `| ${stage} | ${perRequest(us)} | ${stage === 'idle' ? '' : `${((us / total) * 100).toFixed(1)} %`} |`),
    `| **total (busy)** | **${perRequest(total)}** | 100 % |`,
  ].join('\n');
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
let loadWindow = { from: 0, to: 0, requests: 0 };
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
    // The measured run starts after the loader's own start and its one-second warm-up.
    const microsNow = () => Number(process.hrtime.bigint() / 1000n);
    const loaderStarted = microsNow();
    const loader = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/load.ts'), jobFile], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    loader.stdout!.on('data', (d) => (out += d));
    let peakKb = 0;
    const sampler = setInterval(() => {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'));
      if (match) peakKb = Math.max(peakKb, Number(match[1]));
    }, 200);
    await new Promise((resolve) => loader.once('exit', resolve));
    loadWindow = { from: loaderStarted + 1_500_000, to: microsNow(), requests: 0 };
    clearInterval(sampler);
    process.stderr.write(`${out}\npeak RSS of the server: ${Math.round(peakKb / 1024)} MB\n`);
    const rps = (JSON.parse(out) as { runs: { requestsPerSecond: number }[] }).runs[0]?.requestsPerSecond ?? 0;
    loadWindow.requests = Math.round(rps * DURATION);
  }
  await new Promise<void>((resolve) => {
    server.once('exit', () => resolve());
    server.kill('SIGTERM');
  });
  if (profiling) {
    const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error('the server wrote no profile (did it exit cleanly on SIGTERM?)');
    process.stdout.write(summarise(join(profileDir, file)));
    if (loadWindow.requests > 0) {
      const profile = JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as Profile;
      process.stdout.write(`\n${stages(profile, loadWindow.from, loadWindow.to, loadWindow.requests)}\n`);
    }
    process.stdout.write(`\nprofile: ${join(profileDir, file)}\n`);
  }
} finally {
  await db.drop();
}
