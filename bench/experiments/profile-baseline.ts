/**
 * The hand-written settlement (`bench/baseline-server.ts settlement`) under `--cpu-prof`, loaded
 * as bench/profile.ts loads the service's webhook: a seeded database, 8 s at 16 at once, every
 * body distinct. Prints the load figures and the folder of the .cpuprofile (Chrome DevTools).
 * Usage: npx tsx bench/experiments/profile-baseline.ts [sqlite|postgresql]  (PostgreSQL:
 * BENCH_DATABASE_URL); BASELINE_GROUP_COMMIT=1: the baseline groups its commits.
 */
import { spawn } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seedBench } from '../seed.js';
import { freshDatabase, waitFor } from '../support.js';
const kind = (process.argv[2] ?? 'sqlite') as 'sqlite' | 'postgresql';
const db = await freshDatabase(kind);
const fx = await seedBench(db.url, { webhookOrders: 20000, serverKey: 'bench-server-key' });
const dir = mkdtempSync(join(tmpdir(), 'baseprof-'));
const port = 4650;
const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--import', 'tsx', 'bench/baseline-server.ts', 'settlement', db.url, String(port)], { stdio: 'inherit' });
await waitFor(`http://127.0.0.1:${port}/`);
const job = join(dir, 'job.json');
writeFileSync(job, JSON.stringify({ url: `http://127.0.0.1:${port}/`, method: 'POST', headers: { 'content-type': 'application/json' }, bodies: fx.webhookBodies, connections: 16, durationSeconds: 8, warmupSeconds: 1, runs: 1 }));
const load = spawn(process.execPath, ['--import', 'tsx', 'bench/load.ts', job], { stdio: 'inherit' });
await new Promise((r) => load.once('exit', r));
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
console.log('profile dir', dir);
await db.drop();
