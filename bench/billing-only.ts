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
import { runBillingScenario, type BillingFigures } from './billing-scenario.js';
import { freshDatabase } from './support.js';

type Kind = 'sqlite' | 'postgresql';

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
      `[${kind}] ${size} due: ${f.renewed} renewed, ${f.errors} errors in ${f.seconds} s = ${f.renewalsPerSecond} renewals/s, ` +
        `CPU ms per 1,000: run ${f.cpu.processMs}, database ${f.cpu.databaseMs} ` +
        `(seeded in ${f.seedSeconds} s, rss ${Math.round(process.memoryUsage().rss / 1e6)} MB)\n`,
    );
  }
}
process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
