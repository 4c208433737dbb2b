/**
 * The usage scenarios of `npm run bench` (issue 42), on a database of their own, each beside its
 * baseline measured in the same run (bench/README.md, "Usage"):
 *
 * 1. ingestion: `POST /events/batch/`, 1,000 events a request from BENCH_USAGE_CLIENTS concurrent
 *    clients with an `events` key, against the same rows written by hand with the same driver:
 *    one multi-row INSERT into usage_event_keys and one into usage_events per 1,000 events, in
 *    one transaction (no attribution, validation, hashing nor hourly rollups: the rows are built
 *    before the clock starts);
 * 2. the current usage of a customer with BENCH_USAGE_QUERY_EVENTS (1,000,000) events in the
 *    period: the p95 of `GET /subscriptions/{id}/usage/` (customer API key) and its staff twin,
 *    against the same sum written by hand over the raw events (what the hourly rollups save);
 * 3. the billing run over due subscriptions with a usage charge (bench/usage-billing.ts).
 *
 * Customers, subscriptions and the million events are written straight into the tables (the
 * rollups by one grouped INSERT, with the store's own definitions), so that setting up costs
 * seconds; the service then checks them: its usage answer must equal the hand-written sum.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { RequiredEntityData } from '@mikro-orm/core';
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { ApiKey, BillableMetric, Plan, Subscription, User } from '../src/db/entities/index.js';
import { migrateUp, openOrm, type Orm } from '../src/db/orm.js';
import { systemClock } from '../src/domain/clock.js';
import { MICRO } from '../src/domain/usage/aggregation.js';
import type { PlanCharge } from '../src/domain/usage/charge-models.js';
import { newApiKeySecret } from '../src/services/api-keys/api-key-secret.js';
import { seedPlans } from '../src/services/plans/seed-plans.js';
import { runUsageBillingScenario, type UsageBillingFigures } from './usage-billing.js';
import { freshDatabase } from './support.js';

type Kind = 'sqlite' | 'postgresql';
type Row = Record<string, unknown>;

export interface ServiceHandle {
  /** `http://127.0.0.1:PORT/api/subscriptions` */
  base: string;
  pid: number;
  stop: () => Promise<void>;
}

export interface IngestionFigures {
  events: number;
  batchSize: number;
  clients: number;
  customers: number;
  seconds: number;
  eventsPerSecond: number;
  /** Per request of 1,000 events. */
  p50Ms: number;
  p99Ms: number;
  /** Requests not answered 202 with every event accepted. */
  failed: number;
  /**
   * CPU milliseconds per 1,000 events, from /proc: the service process and the PostgreSQL
   * backends of the database (SQLite runs inside the process). Steadier than events/s on a
   * machine shared with other work.
   */
  cpu: CpuPer1000;
  baseline: { writes: string; events: number; seconds: number; eventsPerSecond: number; cpu: CpuPer1000 };
  /** The idempotency keys alone by the same multi-row INSERT (no events): what a column store would leave to PostgreSQL. */
  keysOnly: { events: number; eventsPerSecond: number; cpu: CpuPer1000 };
  /** eventsPerSecond / baseline.eventsPerSecond */
  ratio: number;
  target: string;
}

export interface Latency {
  requests: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
}

export interface QueryFigures {
  /** Events of the customer in the window. */
  events: number;
  loadSeconds: number;
  /** GET /subscriptions/{id}/usage/ with a customer API key. */
  customer: Latency;
  /** GET /admin/subscriptions/{id}/usage/ with a staff API key. */
  staff: Latency;
  /** The same sum by hand over the raw events, on the bare driver. */
  baseline: Latency & { query: string };
  /** The units the service answered and the hand-written sum (they must be equal). */
  units: string;
  target: string;
}

export interface UsageFigures {
  ingestion: IngestionFigures;
  query: QueryFigures;
  /** PostgreSQL: bytes on disk per million stored events (tables with their indexes). */
  sizes?: StorageSizes;
  billing: UsageBillingFigures[];
}

export interface StorageSizes {
  events: number;
  /** Bytes per million events, each table with its indexes (usage_events: all its partitions). */
  perMillion: Record<string, { tableMb: number; indexMb: number; totalMb: number }>;
  /** usage_hourly grows with the (subscription, metric, hour) that saw events, not with events. */
  hourlyRows: number;
  hourlyBytesPerRow: number;
}

/** CPU ms per 1,000 events: the process doing the work (the service, or the bench's own for the baseline) and PostgreSQL's backends. */
export interface CpuPer1000 {
  processMs: number;
  databaseMs: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
export const METRIC_CODE = 'bench_requests';
/** The metered plan: a base price and one usage charge, Rp 5 a request. */
export const METERED_CHARGE: PlanCharge = { metric: METRIC_CODE, model: 'standard', properties: { unit_amount: '5' } };

const envNumber = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

// ---------------------------------------------------------------------------------------------
// The bare driver (the baselines and the bulk loading): `?` placeholders on both databases.

export interface RawDb {
  kind: Kind;
  all(sql: string, params?: unknown[]): Promise<Row[]>;
  /** The statements of `work` in one transaction, on one connection. */
  transaction(work: (run: (sql: string, params?: unknown[]) => Promise<Row[]>) => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

const dollarText = new Map<string, string>();
function dollars(sql: string): string {
  let text = dollarText.get(sql);
  if (text === undefined) {
    let n = 0;
    text = sql.replace(/\?/g, () => `$${++n}`);
    if (dollarText.size < 1000) dollarText.set(sql, text);
  }
  return text;
}

export function openRaw(kind: Kind, url: string, connections = 1): RawDb {
  if (kind === 'sqlite') {
    const db = new Database(url.slice('sqlite:'.length));
    db.pragma('journal_mode = WAL');
    // The service's durability (src/db/orm.ts): each COMMIT flushed to disk.
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 30000');
    const statements = new Map<string, Database.Statement>();
    const run = async (sql: string, params: unknown[] = []) => {
      let s = statements.get(sql);
      if (!s) {
        s = db.prepare(sql);
        if (statements.size < 200) statements.set(sql, s);
      }
      return s.reader ? (s.all(...params) as Row[]) : (s.run(...params), []);
    };
    return {
      kind,
      all: run,
      // better-sqlite3 is synchronous: the transaction runs without yielding, as one writer.
      transaction: async (work) => {
        db.exec('begin immediate');
        try {
          await work(run);
          db.exec('commit');
        } catch (error) {
          db.exec('rollback');
          throw error;
        }
      },
      close: async () => void db.close(),
    };
  }
  const pool = new pg.Pool({ connectionString: url, max: connections });
  return {
    kind,
    all: async (sql, params = []) => (await pool.query(dollars(sql), params)).rows,
    transaction: async (work) => {
      const client = await pool.connect();
      try {
        await client.query('begin');
        await work(async (sql, params = []) => (await client.query(dollars(sql), params)).rows);
        await client.query('commit');
      } catch (error) {
        await client.query('rollback');
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

/** A time as each database stores it: epoch milliseconds on SQLite, ISO text for timestamptz. */
const timeOf = (kind: Kind, ms: number) => (kind === 'sqlite' ? ms : new Date(ms).toISOString());

// ---------------------------------------------------------------------------------------------
// Fixtures: the metric, the metered plan, customers with a live subscription on it, API keys.

export interface MeteredFixtures {
  metricId: string;
  planId: string;
  /** One per customer: the user (the customer) and their live subscription. */
  customers: { userId: string; subscriptionId: string }[];
}

/** The billable metric (sum of `requests`) and a plan `slug` charging it, as the plans file would make them. */
export async function seedMeteredPlan(orm: Orm, databaseUrl: string, slug: string, price: number, charges: PlanCharge[] = [METERED_CHARGE]): Promise<{ metricId: string; plan: Plan }> {
  const em = orm.em.fork();
  const now = new Date();
  let metric = await em.findOne(BillableMetric, { code: METRIC_CODE });
  if (!metric) {
    metric = em.create(BillableMetric, {
      code: METRIC_CODE, name: 'API requests', description: 'bench', aggregation: 'sum', field: 'requests', filters: null, status: 'active', archivedAt: null, createdAt: now, updatedAt: now,
    });
    await em.flush();
  }
  const config = loadConfig({ DATABASE_URL: databaseUrl, SESSION_SECRET: 'bench', LOG_REQUESTS: 'false' });
  await seedPlans({ em: orm.em.fork(), config, clock: systemClock }, [
    { slug, name: `Metered ${slug}`, price, currency: 'IDR', interval: 1, interval_unit: 'month', charges },
  ]);
  const plan = await orm.em.fork().findOneOrFail(Plan, { slug });
  if (plan.charges.length !== charges.length) throw new Error(`the plans file did not store the charge of ${slug}: ${JSON.stringify(plan.charges)}`);
  return { metricId: metric.id, plan };
}

const SEED_ROWS = 2000;

/** `count` customers, each with an active subscription of `planId` in [periodStart, periodEnd), in multi-row INSERTs. */
async function seedCustomers(orm: Orm, planId: string, count: number, prefix: string, periodStart: Date, periodEnd: Date): Promise<MeteredFixtures['customers']> {
  const out: MeteredFixtures['customers'] = [];
  for (let from = 0; from < count; from += SEED_ROWS) {
    const users: RequiredEntityData<User>[] = [];
    const subs: RequiredEntityData<Subscription>[] = [];
    for (let j = from; j < Math.min(count, from + SEED_ROWS); j++) {
      const userId = randomUUID();
      const subscriptionId = randomUUID();
      const stamps = { createdAt: periodStart, updatedAt: periodStart };
      users.push({ id: userId, username: `${prefix}-${j}`, email: null, passwordHash: 'scrypt$1$1$1$AAAA$AAAA', isStaff: false, firstName: '', lastName: '', phone: null, ...stamps });
      subs.push({
        id: subscriptionId, user: userId, plan: planId, status: 'active', liveUserId: userId, paymentType: 'wallet', bank: null, cardToken: null, metadata: {}, customerDetails: {},
        billingAnchor: periodStart, currentPeriodStart: periodStart, currentPeriodEnd: periodEnd, nextBillingDate: periodEnd, trialEnd: null, trialWillEndNotifiedAt: null,
        cancelAtPeriodEnd: false, canceledAt: null, cancelReason: null, pausedAt: null, pendingPlan: null, cyclesCompleted: 1, ...stamps,
      });
      out.push({ userId, subscriptionId });
    }
    await orm.em.fork().transactional(async (tx) => {
      await tx.insertMany(User, users);
      await tx.insertMany(Subscription, subs);
    });
  }
  return out;
}

/** An API key of `scope`, stored as `billing-admin api-keys create` stores one; the key itself is returned. */
async function seedApiKey(orm: Orm, scope: ApiKey['scope']): Promise<string> {
  const secret = newApiKeySecret();
  const em = orm.em.fork();
  em.create(ApiKey, { name: `bench ${scope}`, scope, prefix: secret.prefix, secretHash: secret.hash, createdBy: 'bench', createdAt: new Date() });
  await em.flush();
  return secret.key;
}

// ---------------------------------------------------------------------------------------------
// Bulk loading: events straight into the tables, then their hourly rollups as the store keeps them.

/** SQL for the hour an event falls in (UTC), per database. */
const hourOf = (kind: Kind, column: string) => (kind === 'sqlite' ? `(${column} - ${column} % ${HOUR_MS})` : `date_trunc('hour', ${column} at time zone 'UTC') at time zone 'UTC'`);

/**
 * The hourly rollups of the counted events of `subscriptionIds` (none stored before), with the
 * store's definitions (src/services/usage/event-store.ts): events, sum and max of value_micro,
 * and the latest event by (occurred_at, transaction_id). `usage_hourly_values` stays empty: the
 * bench's metric is a sum.
 */
export async function rollUp(raw: RawDb, where: { sql: string; params: unknown[] }): Promise<void> {
  const hour = hourOf(raw.kind, 'occurred_at');
  await raw.all(
    `insert into usage_hourly (subscription_id, metric_id, hour, events, sum_micro, max_micro, latest_at, latest_tx, latest_micro)
     select subscription_id, metric_id, hour, count(*), sum(coalesce(value_micro, 0)), max(value_micro),
       max(case when n = 1 then occurred_at end), max(case when n = 1 then transaction_id end), max(case when n = 1 then value_micro end)
     from (
       select subscription_id, metric_id, occurred_at, transaction_id, value_micro, ${hour} as hour,
         row_number() over (partition by subscription_id, metric_id, ${hour} order by occurred_at desc, transaction_id desc) as n
       from usage_events where counted = ${raw.kind === 'sqlite' ? 1 : 'true'} and ${where.sql}
     ) e group by subscription_id, metric_id, hour`,
    where.params,
  );
}

/** Rows of the generated series [0, n): a recursive CTE on SQLite, generate_series on PostgreSQL. */
const series = (kind: Kind) =>
  kind === 'sqlite' ? 'with recursive g(n) as (select 0 union all select n + 1 from g where n + 1 < ?)' : 'with g(n) as (select generate_series(0, ?::int - 1))';

/**
 * `count` events of one customer, evenly spread over [fromMs, toMs), each `requests` 1 to 10
 * (value_micro accordingly), written by INSERT … SELECT in slices of 200,000 with their
 * idempotency keys; then its rollups.
 */
export async function loadCustomerEvents(raw: RawDb, c: { userId: string; subscriptionId: string; metricId: string }, count: number, fromMs: number, toMs: number): Promise<void> {
  const step = (toMs - fromMs) / count;
  const slice = 200_000;
  const sqlite = raw.kind === 'sqlite';
  // Transaction ids of 32 characters, about a UUID's length, so that the sizes measured are a real client's.
  const txOf = sqlite ? `'evt-' || printf('%028d', n + ?)` : `'evt-' || lpad((n + ?::int)::text, 28, '0')`;
  for (let offset = 0; offset < count; offset += slice) {
    const n = Math.min(slice, count - offset);
    await raw.transaction(async (run) => {
      // occurred_at strictly increases with n: the latest event of an hour is its last one.
      const at = sqlite ? `cast(? + (n + ?) * ? as integer)` : `?::timestamptz + ((n + ?::int) * ?::float8) * interval '1 millisecond'`;
      const properties = sqlite ? `json_object('requests', (n + ?) % 10 + 1, 'region', 'jkt')` : `jsonb_build_object('requests', (n + ?::int) % 10 + 1, 'region', 'jkt')`;
      await run(
        `${series(raw.kind)} insert into usage_events (subscription_id, customer_id, metric_id, transaction_id, occurred_at, value_micro, unique_value, counted, properties, received_at)
         select ?, ?, ?, ${txOf}, ${at}, ((n + ?) % 10 + 1) * ${MICRO}, null, ${sqlite ? 1 : 'true'}, ${properties}, ${at} from g`,
        [n, c.subscriptionId, c.userId, c.metricId, offset, timeOf(raw.kind, fromMs), offset, step, offset, offset, timeOf(raw.kind, fromMs), offset, step],
      );
      await run(
        `${series(raw.kind)} insert into usage_event_keys (customer_id, transaction_id, body_hash, subscription_id) select ?, ${txOf}, ${sqlite ? 'substr(hex(randomblob(22)), 1, 43)' : `substr(md5(n::text) || md5((n + 1)::text), 1, 43)`}, ? from g`,
        [n, c.userId, offset, c.subscriptionId],
      );
    });
  }
  await rollUp(raw, { sql: 'subscription_id = ?', params: [c.subscriptionId] });
  await raw.all(raw.kind === 'sqlite' ? 'analyze' : 'analyze usage_events, usage_hourly, usage_event_keys');
}

// ---------------------------------------------------------------------------------------------
// 1. Ingestion.

interface PreparedBatch {
  /** The request's body. */
  body: string;
  /** The same rows for the bare INSERT: the key's [customer, transaction, hash, subscription] and the event's row. */
  keys: unknown[][];
  events: unknown[][];
}

/**
 * `batches` batches of `size` events: batch b holds 20 events of each of 50 customers in turn, so
 * that concurrent batches touch different customers (and rollup rows), as a gateway batching its
 * traffic would. Times spread over the hour before now; `requests` 1 to 10.
 */
function prepareBatches(kind: Kind, f: MeteredFixtures, prefix: string, batches: number, size: number): PreparedBatch[] {
  const now = Date.now();
  const perCustomer = 20;
  const out: PreparedBatch[] = [];
  for (let b = 0; b < batches; b++) {
    const events: unknown[] = [];
    const keys: unknown[][] = [];
    const rows: unknown[][] = [];
    for (let i = 0; i < size; i++) {
      const c = f.customers[(b * Math.ceil(size / perCustomer) + Math.floor(i / perCustomer)) % f.customers.length];
      const transactionId = `${prefix}-${randomUUID()}`;
      const at = now - HOUR_MS + ((b * size + i) % 3_000_000);
      const requests = (i % 10) + 1;
      const properties = { requests, region: 'jkt' };
      const timestamp = new Date(at).toISOString();
      events.push({ transaction_id: transactionId, customer: c.userId, code: METRIC_CODE, timestamp, properties });
      const hash = createHash('sha256').update(JSON.stringify([METRIC_CODE, timestamp, properties])).digest('base64url');
      keys.push([c.userId, transactionId, hash, c.subscriptionId]);
      rows.push([c.subscriptionId, c.userId, f.metricId, transactionId, timeOf(kind, at), BigInt(requests) * MICRO, null, kind === 'sqlite' ? 1 : true, JSON.stringify(properties), timeOf(kind, now)]);
    }
    out.push({ body: JSON.stringify({ events }), keys, events: rows });
  }
  return out;
}

const tuples = (rows: unknown[][]) => rows.map((r) => `(${r.map(() => '?').join(', ')})`).join(', ');

/**
 * The baseline: each batch's rows by one multi-row INSERT a table, in one transaction, from
 * `clients` connections at once. `keysOnly`: the idempotency keys alone (what PostgreSQL would
 * still write per event once the events live in a column store: docs/scaling.md).
 */
async function bareInserts(raw: RawDb, batches: PreparedBatch[], clients: number, keysOnly = false): Promise<number> {
  let next = 0;
  // better-sqlite3 has one connection, and SQLite one writer: its batches go one after the other.
  const lanes = raw.kind === 'sqlite' ? 1 : clients;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      for (let b = next++; b < batches.length; b = next++) {
        const batch = batches[b];
        await raw.transaction(async (run) => {
          await run(`insert into usage_event_keys (customer_id, transaction_id, body_hash, subscription_id) values ${tuples(batch.keys)}`, batch.keys.flat());
          if (keysOnly) return;
          await run(
            `insert into usage_events (subscription_id, customer_id, metric_id, transaction_id, occurred_at, value_micro, unique_value, counted, properties, received_at) values ${tuples(batch.events)}`,
            batch.events.flat().map((v) => (typeof v === 'bigint' ? (raw.kind === 'sqlite' ? v : v.toString()) : v)),
          );
        });
      }
    }),
  );
  return (performance.now() - started) / 1000;
}

/** CPU time (user + system) of a process so far, in ms, from /proc (Linux); 0 elsewhere. */
function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 a second).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/** The PostgreSQL backends connected to this database (their pids are on this machine: the bench measures a local server). */
async function backendPids(raw: RawDb): Promise<number[]> {
  if (raw.kind === 'sqlite') return [];
  return (await raw.all('select pid from pg_stat_activity where datname = current_database()')).map((r) => Number(r.pid));
}

/** CPU used by `pid` (or this process) and the database's backends while `work` runs, per 1,000 of `events`. */
export async function cpuPer1000<T>(raw: RawDb, pid: number | null, events: number, work: () => Promise<T>): Promise<{ result: T; cpu: CpuPer1000 }> {
  const self = () => (pid === null ? (process.cpuUsage().user + process.cpuUsage().system) / 1000 : cpuMsOf(pid));
  // The backends are sampled after the work too: a pool may open connections during it.
  const before = new Map((await backendPids(raw)).map((p) => [p, cpuMsOf(p)]));
  const processBefore = self();
  const result = await work();
  const processMs = self() - processBefore;
  let databaseMs = 0;
  for (const p of await backendPids(raw)) databaseMs += cpuMsOf(p) - (before.get(p) ?? 0);
  const per = (ms: number) => Math.round((ms / events) * 1000 * 10) / 10;
  return { result, cpu: { processMs: per(processMs), databaseMs: per(databaseMs) } };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const round1 = (v: number) => Math.round(v * 10) / 10;

/** The service: each batch POSTed once, `clients` requests in flight; wall time, per-request latencies and failures. */
async function postBatches(
  base: string,
  key: string,
  batches: PreparedBatch[],
  clients: number,
): Promise<{ seconds: number; latencies: number[]; accepted: number; failed: number; firstFailure?: string }> {
  let next = 0;
  let failed = 0;
  let acceptedInAll = 0;
  let firstFailure: string | undefined;
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let b = next++; b < batches.length; b = next++) {
        const sent = performance.now();
        const res = await fetch(`${base}/events/batch/`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: batches[b].body });
        const text = await res.text();
        latencies.push(performance.now() - sent);
        const accepted = res.status === 202 ? (JSON.parse(text) as { accepted: number }).accepted : -1;
        if (accepted > 0) acceptedInAll += accepted;
        if (accepted !== batches[b].keys.length) {
          failed++;
          firstFailure ??= `${res.status} ${text.slice(0, 300)}`;
        }
      }
    }),
  );
  return { seconds: (performance.now() - started) / 1000, latencies: latencies.sort((a, b) => a - b), accepted: acceptedInAll, failed, firstFailure };
}

// ---------------------------------------------------------------------------------------------
// 2. The current usage of one customer.

async function timed(times: number, once: () => Promise<void>): Promise<Latency> {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await once();
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  return { requests: times, p50Ms: round1(percentile(ms, 50)), p95Ms: round1(percentile(ms, 95)), p99Ms: round1(percentile(ms, 99)) };
}

/** The hand-written sum over the raw events of [from, to): what the service would read without rollups. */
export const HAND_QUERY =
  'select count(*) as events, cast(coalesce(sum(value_micro), 0) as text) as micro from usage_events where subscription_id = ? and metric_id = ? and counted = ? and occurred_at >= ? and occurred_at < ?';

// ---------------------------------------------------------------------------------------------
// Sizes on PostgreSQL.

export async function storageSizes(raw: RawDb): Promise<StorageSizes> {
  const [{ n }] = await raw.all('select count(*)::bigint as n from usage_events');
  const events = Number(n);
  const tables: [string, string][] = [
    ['usage_events', "select relid from pg_partition_tree('usage_events') where isleaf"],
    ['usage_event_keys', "select 'usage_event_keys'::regclass as relid"],
    ['usage_hourly', "select 'usage_hourly'::regclass as relid"],
  ];
  const perMillion: StorageSizes['perMillion'] = {};
  const mb = (bytes: unknown) => Math.round((Number(bytes) / 1_048_576 / (events / 1_000_000)) * 10) / 10;
  for (const [name, relids] of tables) {
    const [r] = await raw.all(
      `select sum(pg_table_size(relid)) as t, sum(pg_indexes_size(relid)) as i, sum(pg_total_relation_size(relid)) as total from (${relids}) p`,
    );
    perMillion[name] = { tableMb: mb(r.t), indexMb: mb(r.i), totalMb: mb(r.total) };
  }
  const [h] = await raw.all("select count(*)::bigint as n, pg_total_relation_size('usage_hourly') as bytes from usage_hourly");
  return { events, perMillion, hourlyRows: Number(h.n), hourlyBytesPerRow: Number(h.n) > 0 ? Math.round(Number(h.bytes) / Number(h.n)) : 0 };
}

// ---------------------------------------------------------------------------------------------

export async function runUsageBench(kind: Kind, opts: { quick: boolean; startService: (databaseUrl: string) => Promise<ServiceHandle> }): Promise<UsageFigures> {
  const batchSize = 1000;
  const clients = envNumber('BENCH_USAGE_CLIENTS', 4);
  const batches = envNumber('BENCH_USAGE_BATCHES', opts.quick ? 60 : 200);
  const warmupBatches = Math.max(2, Math.round(batches / 10));
  const customersCount = envNumber('BENCH_USAGE_CUSTOMERS', 1000);
  const queryEvents = envNumber('BENCH_USAGE_QUERY_EVENTS', 1_000_000);
  const queryRequests = envNumber('BENCH_USAGE_QUERY_REQUESTS', opts.quick ? 100 : 300);
  const log = (text: string) => process.stderr.write(`[${kind}] usage: ${text}\n`);

  const db = await freshDatabase(kind);
  const raw = openRaw(kind, db.url, clients);
  let service: ServiceHandle | null = null;
  try {
    const orm = await openOrm(db.url, { create: true });
    let fixtures: MeteredFixtures;
    let heavy: MeteredFixtures['customers'][number];
    let eventsKey: string;
    let readKey: string;
    const now = Date.now();
    // The heavy customer's period started 20 days ago, at no whole hour (windows start at any millisecond).
    const periodStart = new Date(now - 20 * DAY_MS - 1_234_567);
    const periodEnd = new Date(periodStart.getTime() + 30 * DAY_MS);
    try {
      await migrateUp(orm);
      const { metricId, plan } = await seedMeteredPlan(orm, db.url, 'metered-monthly', 100_000);
      fixtures = { metricId, planId: plan.id, customers: await seedCustomers(orm, plan.id, customersCount, 'metered', periodStart, periodEnd) };
      [heavy] = await seedCustomers(orm, plan.id, 1, 'heavy', periodStart, periodEnd);
      eventsKey = await seedApiKey(orm, 'events');
      readKey = await seedApiKey(orm, 'read');
    } finally {
      await orm.close(true);
    }
    await raw.all(kind === 'sqlite' ? 'analyze' : 'vacuum analyze');

    // 1. Ingestion: the baseline first, alone; then the service (warm-up batches first, not counted).
    log(`${batches} batches of ${batchSize} events, ${clients} clients, ${customersCount} customers`);
    const baselineBatches = prepareBatches(kind, fixtures, 'b', batches, batchSize);
    const { result: baselineSeconds, cpu: baselineCpu } = await cpuPer1000(raw, null, batches * batchSize, () => bareInserts(raw, baselineBatches, clients));
    const baselineRate = Math.round((batches * batchSize) / baselineSeconds);
    log(`baseline (bare INSERT): ${baselineRate} events/s`);
    const keysOnlyBatches = prepareBatches(kind, fixtures, 'k', batches, batchSize);
    const { result: keysOnlySeconds, cpu: keysOnlyCpu } = await cpuPer1000(raw, null, batches * batchSize, () => bareInserts(raw, keysOnlyBatches, clients, true));
    const keysOnlyRate = Math.round((batches * batchSize) / keysOnlySeconds);
    log(`the keys alone (bare INSERT): ${keysOnlyRate} events/s`);

    service = await opts.startService(db.url);
    const warmup = await postBatches(service.base, eventsKey, prepareBatches(kind, fixtures, 'w', warmupBatches, batchSize), clients);
    if (warmup.failed > 0) log(`POST /events/batch/ refused ${warmup.failed} warm-up batches, first: ${warmup.firstFailure}`);
    const serviceBatches = prepareBatches(kind, fixtures, 's', batches, batchSize);
    const { result: posted, cpu } = await cpuPer1000(raw, service.pid, batches * batchSize, () => postBatches(service!.base, eventsKey, serviceBatches, clients));
    if (posted.failed > 0) log(`${posted.failed} batches not accepted, first: ${posted.firstFailure}`);
    // Events recorded per second: a refused batch counts for nothing.
    const rate = Math.round(posted.accepted / posted.seconds);
    log(`POST /events/batch/: ${rate} events/s (${(rate / baselineRate).toFixed(2)} of the baseline); CPU ms per 1,000 events: service ${cpu.processMs} + database ${cpu.databaseMs}, baseline ${baselineCpu.processMs} + ${baselineCpu.databaseMs}`);
    const ingestion: IngestionFigures = {
      events: batches * batchSize,
      batchSize,
      clients,
      customers: customersCount,
      seconds: round1(posted.seconds),
      eventsPerSecond: rate,
      p50Ms: round1(percentile(posted.latencies, 50)),
      p99Ms: round1(percentile(posted.latencies, 99)),
      failed: posted.failed,
      cpu,
      baseline: {
        writes: 'usage_event_keys + usage_events, one multi-row INSERT each per 1,000 events, one transaction',
        events: batches * batchSize,
        seconds: round1(baselineSeconds),
        eventsPerSecond: baselineRate,
        cpu: baselineCpu,
      },
      keysOnly: { events: batches * batchSize, eventsPerSecond: keysOnlyRate, cpu: keysOnlyCpu },
      ratio: Math.round((rate / baselineRate) * 100) / 100,
      target: kind === 'postgresql' ? '>= 10000 events/s, >= 0.50 of the bare INSERT' : '>= 0.50 of the bare INSERT',
    };

    // 2. The heavy customer's million events, then the hand-written sum and the service's answer.
    log(`loading ${queryEvents} events of one customer…`);
    const loading = performance.now();
    await loadCustomerEvents(raw, { ...heavy, metricId: fixtures.metricId }, queryEvents, periodStart.getTime(), Date.now() - 60_000);
    const loadSeconds = round1((performance.now() - loading) / 1000);
    log(`loaded in ${loadSeconds} s`);
    let handMicro = '';
    const handParams = () => [heavy.subscriptionId, fixtures.metricId, kind === 'sqlite' ? 1 : true, timeOf(kind, periodStart.getTime()), timeOf(kind, Date.now())];
    const baseline = await timed(opts.quick ? 10 : 30, async () => {
      const [r] = await raw.all(HAND_QUERY, handParams());
      if (Number(r.events) !== queryEvents) throw new Error(`the hand-written sum counted ${String(r.events)} events, not ${queryEvents}`);
      handMicro = String(r.micro);
    });
    log(`baseline (sum over the raw events): p95 ${baseline.p95Ms} ms`);
    let units = '';
    const usageOf = async (url: string, headers: Record<string, string>) => {
      const res = await fetch(url, { headers });
      const body = (await res.json()) as { charges?: { units: string }[] };
      if (res.status !== 200 || !body.charges?.[0]) throw new Error(`GET ${url} answered ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
      units = body.charges[0].units;
    };
    const customerUrl = `${service.base}/subscriptions/${heavy.subscriptionId}/usage/`;
    const customerHeaders = { authorization: `Bearer ${readKey}`, 'billing-customer': heavy.userId };
    const staffUrl = `${service.base}/admin/subscriptions/${heavy.subscriptionId}/usage/`;
    const staffHeaders = { authorization: `Bearer ${readKey}` };
    for (let i = 0; i < 10; i++) await usageOf(customerUrl, customerHeaders);
    const customer = await timed(queryRequests, () => usageOf(customerUrl, customerHeaders));
    const staff = await timed(queryRequests, () => usageOf(staffUrl, staffHeaders));
    const expected = (BigInt(handMicro) / MICRO).toString();
    // Every event is before now - 1 minute: the service's sum over [from, now) is the hand-written one's.
    if (units !== expected) throw new Error(`the service answered ${units} units, the hand-written sum ${expected}`);
    log(`GET usage: p95 ${customer.p95Ms} ms (customer), ${staff.p95Ms} ms (staff); ${units} units`);
    const query: QueryFigures = {
      events: queryEvents,
      loadSeconds,
      customer,
      staff,
      baseline: { ...baseline, query: HAND_QUERY },
      units,
      target: 'p95 < 100 ms',
    };
    await service.stop();
    service = null;

    const sizes = kind === 'postgresql' ? await storageSizes(raw) : undefined;

    // 3. The billing run with usage lines, each size on a fresh database.
    const billing: UsageBillingFigures[] = [];
    const sizesToRun = (process.env.BENCH_USAGE_BILLING_SIZES ?? (opts.quick ? '1000' : '1000,10000,100000')).split(',').filter(Boolean).map(Number);
    for (const size of sizesToRun) {
      log(`billing run with ${size} due metered subscriptions…`);
      billing.push(await runUsageBillingScenario(kind, size, freshDatabase));
      const b = billing.at(-1)!;
      log(`${b.renewalsPerSecond} renewals/s (${b.renewed} renewed, ${b.usageLines} usage lines, ${b.errors} errors, ${b.seconds} s)`);
    }
    return { ingestion, query, sizes, billing };
  } finally {
    if (service) await service.stop();
    await raw.close();
    // BENCH_USAGE_KEEP=1 keeps the database of the ingestion and the usage query, to look into.
    if (process.env.BENCH_USAGE_KEEP === '1') log(`database kept: ${db.url}`);
    else await db.drop();
  }
}

/** The usage figures as rows of run.ts's second table. */
export function usageTableLines(kind: string, u: UsageFigures): string[] {
  const i = u.ingestion;
  const q = u.query;
  const lines = [
    `| POST /events/batch/ (${i.batchSize} a request, ${i.clients} clients) | ${kind} | ${i.eventsPerSecond} events/s (p50 ${i.p50Ms} / p99 ${i.p99Ms} ms a request; ${i.failed} failed; CPU ms per 1,000: service ${i.cpu.processMs}, database ${i.cpu.databaseMs}); bare INSERT ${i.baseline.eventsPerSecond} events/s (CPU ${i.baseline.cpu.processMs} + ${i.baseline.cpu.databaseMs}); ratio ${i.ratio.toFixed(2)} | ${i.target} |`,
    `| GET usage, ${q.events} events in the period: customer / staff | ${kind} | p95 ${q.customer.p95Ms} / ${q.staff.p95Ms} ms (p50 ${q.customer.p50Ms} / ${q.staff.p50Ms}); the sum by hand over the raw events p95 ${q.baseline.p95Ms} ms | ${q.target} |`,
  ];
  for (const b of u.billing) {
    lines.push(`| billing run with usage, ${b.subscriptions} due | ${kind} | ${b.renewalsPerSecond} renewals/s (${b.renewed} renewed, ${b.usageLines} usage lines, ${b.errors} errors, ${b.seconds} s) | >= 1000/s at 100000 on PostgreSQL |`);
  }
  return lines;
}
