/**
 * The billing-run scenario alone (bench/run.ts runs it after the HTTP load):
 *
 *   npx tsx bench/billing-only.ts
 *
 * BENCH_BILLING_SIZES (default 1000,10000,100000), BENCH_BILLING_DATABASES (default sqlite, plus
 * postgresql when BENCH_DATABASE_URL is set), BENCH_BILLING_BATCH=false for the
 * per-subscription path, BENCH_BILLING_DEBUG=1 for MikroORM's query log. Prints one line a size and
 * database, then the table as JSON.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { runBillingScenario, type BillingFigures } from './billing-scenario.js';

type Kind = 'sqlite' | 'postgresql';

async function freshDatabase(kind: Kind): Promise<{ url: string; drop: () => Promise<void> }> {
  const id = `${Date.now()}_${randomBytes(3).toString('hex')}`;
  if (kind === 'sqlite') {
    const dir = join(tmpdir(), `billing-only-${id}`);
    mkdirSync(dir, { recursive: true });
    return { url: `sqlite:${join(dir, 'bench.sqlite')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const admin = process.env.BENCH_DATABASE_URL!;
  const name = `batchbill_bench_${id}`;
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`CREATE DATABASE ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

const sizes = (process.env.BENCH_BILLING_SIZES ?? '1000,10000,100000').split(',').map((s) => Number(s.trim()));
const kinds = (process.env.BENCH_BILLING_DATABASES?.split(',') ?? ['sqlite', ...(process.env.BENCH_DATABASE_URL ? ['postgresql'] : [])]) as Kind[];
const batch = process.env.BENCH_BILLING_BATCH !== 'false';
if (kinds.includes('postgresql') && !process.env.BENCH_DATABASE_URL) throw new Error('postgresql needs BENCH_DATABASE_URL');

const figures: BillingFigures[] = [];
for (const kind of kinds) {
  for (const size of sizes) {
    const f = await runBillingScenario(kind, size, freshDatabase, { batch });
    figures.push(f);
    process.stderr.write(
      `[${kind}] ${size} due: ${f.renewed} renewed, ${f.errors} errors in ${f.seconds} s = ${f.renewalsPerSecond} renewals/s ` +
        `(seeded in ${f.seedSeconds} s, rss ${Math.round(process.memoryUsage().rss / 1e6)} MB)\n`,
    );
  }
}
process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
