/**
 * The billing run with usage charges (issue 42): N wallet-paid subscriptions of a plan with a
 * base price and one usage charge, all due at one instant, each with BENCH_USAGE_EVENTS_PER_SUB
 * (10) events in the period; one billing pass, USAGE_GRACE_MINUTES after the period's end,
 * renews them all, each invoice with its usage line. Reports renewals per second.
 *
 *   npx tsx bench/usage-billing.ts     # BENCH_USAGE_BILLING_SIZES (1000), BENCH_BILLING_DATABASES
 *
 * Subscriptions are seeded as bench/billing-scenario.ts seeds them; the events and their
 * hourly rollups straight into the tables (bench/usage-scenarios.ts).
 */
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../src/config.js';
import { migrateUp, openOrm } from '../src/db/orm.js';
import { ManualClock } from '../src/domain/clock.js';
import { MICRO } from '../src/domain/usage/aggregation.js';
import { MidtransClient } from '../src/gateway/midtrans-client.js';
import { runBilling } from '../src/services/billing/run-billing.js';
import { DUE_AT, PERIOD_START, seedDueSubscriptions, type BillingFigures } from './billing-scenario.js';
import { freshDatabase, type BenchDatabase } from './support.js';
import { cpuPer1000, openRaw, rollUp, seedMeteredPlan, storageSizes, type CpuPer1000, type RawDb, type StorageSizes } from './usage-scenarios.js';

type Kind = 'sqlite' | 'postgresql';

export interface UsageBillingFigures extends BillingFigures {
  eventsPerSubscription: number;
  /** Invoice lines of kind usage the run wrote (one per renewal expected). */
  usageLines: number;
  /** Usage units billed in all (the events' sum), as the invoices' lines say. */
  usageUnits: string;
  /** PostgreSQL: the event store's sizes after the run. */
  sizes?: StorageSizes;
  /** CPU ms per 1,000 renewals: this process (the run) and PostgreSQL's backends. */
  cpu: CpuPer1000;
  /** BENCH_USAGE_BILLING_PLAIN=1: the same run with a plan without charges and no events, for comparison. */
  plain: boolean;
}

const DAY_MS = 86_400_000;

/** `perSubscription` events of every subscription, spread over [PERIOD_START, DUE_AT), `requests` 1 to 10, with their keys and rollups. */
async function loadDueEvents(raw: RawDb, metricId: string, perSubscription: number): Promise<void> {
  const sqlite = raw.kind === 'sqlite';
  const series = sqlite ? 'with recursive g(n) as (select 0 union all select n + 1 from g where n + 1 < ?)' : 'with g(n) as (select generate_series(0, ?::int - 1))';
  const spacing = Math.floor((DUE_AT.getTime() - PERIOD_START.getTime()) / perSubscription);
  const at = sqlite ? `(? + n * ${spacing} + 1000)` : `?::timestamptz + (n::bigint * ${spacing} + 1000) * interval '1 millisecond'`;
  const start = sqlite ? PERIOD_START.getTime() : PERIOD_START.toISOString();
  const tx = sqlite ? `'evt-' || printf('%028d', n)` : `'evt-' || lpad(n::text, 28, '0')`;
  await raw.transaction(async (run) => {
    await run(
      `${series} insert into usage_events (subscription_id, customer_id, metric_id, transaction_id, occurred_at, value_micro, unique_value, counted, properties, received_at)
       select s.id, s.user_id, ?, ${tx}, ${at}, (n % 10 + 1) * ${MICRO}, null, ${sqlite ? 1 : 'true'}, ${sqlite ? "json_object('requests', n % 10 + 1)" : "jsonb_build_object('requests', n % 10 + 1)"}, ${at}
       from subscriptions s cross join g`,
      [perSubscription, metricId, start, start],
    );
    await run(`${series} insert into usage_event_keys (customer_id, transaction_id, body_hash, subscription_id) select s.user_id, ${tx}, ${sqlite ? 'substr(hex(randomblob(22)), 1, 43)' : "substr(md5(s.id::text || n) || md5(n::text || s.id), 1, 43)"}, s.id from subscriptions s cross join g`, [
      perSubscription,
    ]);
  });
  await rollUp(raw, { sql: '1 = 1', params: [] });
  await raw.all(sqlite ? 'analyze' : 'analyze usage_events, usage_hourly, usage_event_keys');
}

export async function runUsageBillingScenario(kind: Kind, size: number, fresh: (kind: Kind) => Promise<BenchDatabase>): Promise<UsageBillingFigures> {
  const plain = process.env.BENCH_USAGE_BILLING_PLAIN === '1';
  const perSubscription = plain ? 0 : Number(process.env.BENCH_USAGE_EVENTS_PER_SUB ?? 10);
  const db = await fresh(kind);
  const orm = await openOrm(db.url, { create: true, debug: process.env.BENCH_BILLING_DEBUG === '1' });
  const raw = openRaw(kind, db.url);
  try {
    await migrateUp(orm);
    const config = loadConfig({ DATABASE_URL: db.url, SESSION_SECRET: 'bench', LOG_REQUESTS: 'false' });
    const { metricId, plan } = await seedMeteredPlan(orm, db.url, 'wallet-metered', 50_000, plain ? [] : undefined);
    const seeding = performance.now();
    await seedDueSubscriptions(orm, plan, size);
    if (perSubscription > 0) await loadDueEvents(raw, metricId, perSubscription);
    if (kind === 'postgresql') await orm.em.fork().execute('analyze users, wallets, wallet_transactions, subscriptions');
    const seedSeconds = (performance.now() - seeding) / 1000;
    // A plan with charges renews USAGE_GRACE_MINUTES after its period ends: the run is a minute past that.
    const at = new Date(DUE_AT.getTime() + (plain ? 0 : (config.usageGraceMinutes + 1) * 60_000));
    const gateway = new MidtransClient({ baseUrl: 'http://127.0.0.1:9', serverKey: 'bench' });
    const started = performance.now();
    const { result: report, cpu } = await cpuPer1000(raw, null, size, () => runBilling({ em: orm.em.fork(), config, clock: new ManualClock(at), gateway }, { at }));
    const seconds = (performance.now() - started) / 1000;
    const units = kind === 'sqlite' ? "cast(json_extract(subject, '$.units') as integer)" : "(subject->>'units')::numeric";
    const [lines] = await raw.all(`select count(*) as n, cast(coalesce(sum(${units}), 0) as text) as units from invoice_lines where kind = 'usage'`);
    if (report.errors.length > 0) process.stderr.write(`[${kind}] usage billing: first error ${JSON.stringify(report.errors[0]).slice(0, 400)}\n`);
    return {
      database: kind,
      subscriptions: size,
      eventsPerSubscription: perSubscription,
      renewed: report.renewed,
      errors: report.errors.length,
      usageLines: Number(lines.n),
      usageUnits: String(lines.units),
      seconds: Math.round(seconds * 10) / 10,
      renewalsPerSecond: Math.round(report.renewed / seconds),
      seedSeconds: Math.round(seedSeconds * 10) / 10,
      sizes: kind === 'postgresql' && !plain ? await storageSizes(raw) : undefined,
      cpu,
      plain,
    };
  } finally {
    await raw.close();
    await orm.close(true);
    await db.drop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const sizes = (process.env.BENCH_USAGE_BILLING_SIZES ?? '1000').split(',').map(Number);
  const kinds = (process.env.BENCH_BILLING_DATABASES?.split(',') ?? ['sqlite', ...(process.env.BENCH_DATABASE_URL ? ['postgresql'] : [])]) as Kind[];
  const figures: UsageBillingFigures[] = [];
  for (const kind of kinds) {
    for (const size of sizes) {
      const f = await runUsageBillingScenario(kind, size, freshDatabase);
      figures.push(f);
      process.stderr.write(
        `[${kind}] ${size} due ${f.plain ? 'without usage (plain)' : 'with usage'}: ${f.renewed} renewed, ${f.usageLines} usage lines (${f.usageUnits} units), ${f.errors} errors in ${f.seconds} s = ${f.renewalsPerSecond} renewals/s; ` +
          `CPU ms per 1,000: run ${f.cpu.processMs}, database ${f.cpu.databaseMs} ` +
          `(seeded in ${f.seedSeconds} s, rss ${Math.round(process.memoryUsage().rss / 1e6)} MB)\n`,
      );
    }
  }
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
