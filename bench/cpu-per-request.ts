/**
 * CPU milliseconds the server process spends per authenticated read and per webhook settlement
 * (utime+stime from /proc, after a warm-up; 10 concurrent clients in this process, 16 for the
 * webhook), next to the bare select and insert baselines', and the server's RSS sampled
 * meanwhile. On a machine shared with other work, requests/s move
 * with everyone else's load; CPU time per request moves far less.
 *
 * Usage: npm run build && npx tsx bench/cpu-per-request.ts ROOT sqlite|postgresql
 *   ROOT: the checkout whose dist/main.js runs (compare two builds); PostgreSQL takes the admin
 *   URL from BENCH_DATABASE_URL. N (default 3000) requests per scenario.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { seedBench } from './seed.js';
import { freshDatabase, productionNodeArgs, waitFor } from './support.js';

const [root, kind] = process.argv.slice(2) as [string, 'sqlite' | 'postgresql'];
const N = Number(process.env.N ?? 3000);
const cpu = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // clock ticks of 10 ms
};
const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const db = await freshDatabase(kind);
const WEBHOOK = process.env.WEBHOOK !== '0';
const fx = await seedBench(db.url, { webhookOrders: WEBHOOK ? N + 300 : 10, serverKey: 'k' });
/** GETs `url`, or POSTs each of `bodies` once (in order) when given. */
async function drive(url: string, headers: Record<string, string>, pid: number, bodies?: string[]) {
  let peak = 0;
  let next = 0;
  const run = async (n: number) => {
    let i = 0;
    await Promise.all(Array.from({ length: bodies ? 16 : 10 }, async () => {
      while (i++ < n) {
        const r = bodies
          ? await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bodies[next++] })
          : await fetch(url, { headers });
        await r.arrayBuffer();
        if (r.status !== 200 && r.status !== 201) throw new Error(`status ${r.status}`);
        if (i % 200 === 0) peak = Math.max(peak, rss(pid));
      }
    }));
  };
  await run(300);
  const c0 = cpu(pid);
  await run(N);
  return { msPerRequest: +((cpu(pid) - c0) / N).toFixed(3), peakRssMb: Math.round(peak) };
}
const out: Record<string, unknown> = {};
{
  const port = 4700 + Math.floor(Math.random() * 200);
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/baseline-server.ts', 'select', db.url, String(port)], { cwd: root, stdio: 'ignore' });
  await waitFor(`http://127.0.0.1:${port}/`);
  out['baseline select'] = await drive(`http://127.0.0.1:${port}/`, { 'x-user-id': fx.benchUserId }, child.pid!);
  child.kill();
}
if (WEBHOOK) {
  const port = 4700 + Math.floor(Math.random() * 200);
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/baseline-server.ts', 'insert', db.url, String(port)], { cwd: root, stdio: 'ignore' });
  await waitFor(`http://127.0.0.1:${port}/`);
  out['baseline insert'] = await drive(`http://127.0.0.1:${port}/`, {}, child.pid!, Array.from({ length: N + 300 }, () => '{}'));
  child.kill();
}
const port = 4900 + Math.floor(Math.random() * 90);
const server = spawn(process.execPath, productionNodeArgs(root), {
  cwd: root,
  stdio: 'ignore',
  env: { ...process.env, NODE_ENV: 'production', PORT: String(port), DATABASE_URL: db.url, MIGRATE_ON_START: 'true', GATEWAY_BASE_URL: 'http://127.0.0.1:9', PUBLIC_URL: 'https://billing.example.com', GATEWAY_SERVER_KEY: 'k', SESSION_SECRET: 's', LOG_REQUESTS: 'false' },
});
const base = `http://127.0.0.1:${port}/api/subscriptions`;
await waitFor(`${base}/plans/`);
const login = await fetch(`${base}/auth/login/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: fx.username, password: fx.password }) });
const cookie = login.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
const basic = `Basic ${Buffer.from(`${fx.username}:${fx.password}`).toString('base64')}`;
for (const [name, path, headers] of [
  ['plans (cached, no auth)', '/plans/', {}],
  ['active (session)', '/subscriptions/active/', { cookie }],
  ['active (basic)', '/subscriptions/active/', { authorization: basic }],
  ['payments (session)', '/payments/', { cookie }],
  ['payments (basic)', '/payments/', { authorization: basic }],
] as const) out[name] = await drive(`${base}${path}`, headers, server.pid!);
if (WEBHOOK) out['webhook settlement'] = await drive(`${base}/webhook/notification/`, {}, server.pid!, fx.webhookBodies);
server.kill();
await db.drop();
console.log(JSON.stringify({ root, kind, N, ...out }));
