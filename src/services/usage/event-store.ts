import type { EntityManager } from '@mikro-orm/knex';
import type { Knex } from 'knex';
import { isPostgres } from '../../db/dialect.js';
import { hotRows, hotWrite } from '../../db/hot-sql.js';
import { formatUnits, MICRO, type MetricAggregation } from '../../domain/usage/aggregation.js';
import { toDate } from '../../db/row-fields.js';

/*
 * The usage event store (docs/usage.md): the one module that knows where events live, behind
 * `EventStore`, so that a column store (ClickHouse) can replace the SQL one without touching
 * ingestion or billing. Raw SQL over four tables (migrations Migration20261202020000):
 *
 * - usage_event_keys (customer_id, transaction_id) → body_hash: idempotency. On PostgreSQL a
 *   unique key of a partitioned table must contain the partition key, hence its own table.
 * - usage_events: every accepted event (PostgreSQL: partitioned by month of occurred_at, with a
 *   DEFAULT partition; SQLite: one table), indexed by (subscription_id, metric_id, occurred_at).
 * - usage_hourly (subscription_id, metric_id, hour) → events, sum, max and the latest event of
 *   the counted events of that hour; usage_hourly_values the distinct values of an hour for
 *   unique_count. Both are maintained in the transaction that inserts the events.
 *
 * A window [from, to) is the rollups of the whole hours inside it plus the raw events of the
 * partial hours at its two ends, so a period's query reads ~720 rollups and at most two hours of
 * events, however many events the period holds. Values are integer micro-units (bigint); sums and
 * maxima are read back as text so they stay exact (better-sqlite3 reads integers as doubles).
 * "Latest" is the event with the greatest (timestamp, transaction_id): a total order within a
 * subscription (transaction ids are unique per customer), whatever order the events arrived in.
 */

export interface UsageMetricRef {
  id: string;
  aggregation: MetricAggregation;
}

/** One subscription's usage window [from, to). */
export interface UsageWindow {
  subscriptionId: string;
  from: Date;
  to: Date;
}

/** An event ready to store: validated, attributed and valued by ingestion. */
export interface PreparedEvent {
  customerId: string;
  transactionId: string;
  /** Hash of the canonical body (code, timestamp as sent, properties): same hash = same event. */
  bodyHash: string;
  subscriptionId: string;
  metricId: string;
  timestamp: Date;
  /** sum / max / latest: the field's value in micro-units; null for the other aggregations. */
  valueMicro: bigint | null;
  /** unique_count: the field's value as text; null for the other aggregations. */
  uniqueValue: string | null;
  /** Whether it passed the metric's filters (stored either way, counted only then). */
  counted: boolean;
  /** The event's properties as JSON text. */
  properties: string;
  receivedAt: Date;
}

/**
 * Per event, in order: `inserted` (new), `duplicate` (the same body was stored before, or
 * earlier in this batch: counted once) or `conflict` (another body under the same customer and
 * transaction_id).
 */
export type InsertOutcome = 'inserted' | 'duplicate' | 'conflict';

export interface EventStore {
  /**
   * Stores the events in the caller's transaction (required). When any outcome is `conflict`,
   * nothing but the idempotency keys was written, and the caller must roll back. Safe under
   * concurrency on both databases: the same key sent at once is inserted once (the database's
   * unique key decides; PostgreSQL's ON CONFLICT waits for the other transaction's outcome).
   */
  insert(em: EntityManager, events: PreparedEvent[]): Promise<InsertOutcome[]>;
  /** What is stored for these keys (absent: never recorded), keyed by `eventKey`. */
  storedKeys(em: EntityManager, keys: readonly EventKey[]): Promise<Map<string, StoredKey>>;
  /** Units of one metric of one subscription in [from, to): exact decimal text (formatUnits). */
  aggregate(em: EntityManager, subscriptionId: string, metric: UsageMetricRef, from: Date, to: Date): Promise<string>;
  /**
   * The same for many subscriptions at once (the batched billing run): one grouped query per
   * call. Every window's subscription is in the map (units "0" when nothing counted); one window
   * per subscription.
   */
  aggregateMany(em: EntityManager, metric: UsageMetricRef, windows: readonly UsageWindow[]): Promise<Map<string, string>>;
  /**
   * The timestamp of the subscription's latest counted event at or after `since` (any metric), or
   * null: a window closed early (a plan change, an end) takes the events already accepted ahead
   * of the clock too (usage-invoice.ts).
   */
  lastCountedAt(em: EntityManager, subscriptionId: string, since: Date): Promise<Date | null>;
  /**
   * PostgreSQL: makes sure the monthly partitions from the month before `around` to `monthsAhead`
   * months after it exist (moving any of their rows out of the DEFAULT partition). SQLite: nothing.
   */
  ensurePartitions(em: EntityManager, around: Date, monthsAhead?: number): Promise<void>;
}

const HOUR_MS = 3_600_000;
const floorHour = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;
const ceilHour = (ms: number) => Math.ceil(ms / HOUR_MS) * HOUR_MS;

/** SQLite's default SQLITE_MAX_VARIABLE_NUMBER is 32766. */
const SQLITE_MAX_PARAMS = 32_000;

type Row = Record<string, unknown>;

function requireTransaction(em: EntityManager): void {
  if (!em.getTransactionContext<Knex.Transaction>()) throw new Error('the event store writes inside a transaction');
}

/** Dates as each driver binds them: ISO text inside PostgreSQL arrays, epoch ms on SQLite (hot-sql converts). */
const pgTime = (d: Date) => d.toISOString();
const pgBigint = (v: bigint | null) => (v === null ? null : v.toString());

/**
 * One multi-row statement per slice on SQLite (multi-row VALUES under the bound-variable
 * limit), one statement with an array a column on PostgreSQL (`unnest`), for any row count.
 * `pg(arrays)` / `sqlite(tuples)` return the statement text.
 */
async function bulk(
  em: EntityManager,
  rows: unknown[][],
  statements: { pg: string; sqlite: (tuples: string) => string; returning?: boolean },
): Promise<Row[]> {
  if (rows.length === 0) return [];
  const width = rows[0].length;
  if (isPostgres(em)) {
    const arrays = Array.from({ length: width }, (_, i) => rows.map((r) => r[i]));
    return statements.returning ? hotRows(em, statements.pg, arrays) : (await hotWrite(em, statements.pg, arrays), []);
  }
  const tuple = `(${Array(width).fill('?').join(', ')})`;
  const perStatement = Math.max(1, Math.floor(SQLITE_MAX_PARAMS / width));
  const out: Row[] = [];
  for (let from = 0; from < rows.length; from += perStatement) {
    const slice = rows.slice(from, from + perStatement);
    const sql = statements.sqlite(slice.map(() => tuple).join(', '));
    if (statements.returning) out.push(...(await hotRows(em, sql, slice.flat())));
    else await hotWrite(em, sql, slice.flat());
  }
  return out;
}

/** The key of a (customer, transaction_id) in the maps this store answers. */
export const eventKey = (customerId: string, transactionId: string): string => `${customerId}\u0000${transactionId}`;
const byKey = (a: PreparedEvent, b: PreparedEvent) =>
  a.customerId < b.customerId ? -1 : a.customerId > b.customerId ? 1 : a.transactionId < b.transactionId ? -1 : a.transactionId > b.transactionId ? 1 : 0;

/** What usage_event_keys holds for a (customer, transaction_id): the body's hash and the subscription the event counted for. */
export interface StoredKey {
  bodyHash: string;
  subscriptionId: string;
}

export interface EventKey {
  customerId: string;
  transactionId: string;
}

async function storedKeysOf(em: EntityManager, keys: readonly EventKey[]): Promise<Map<string, StoredKey>> {
  const stored = new Map<string, StoredKey>();
  const rows = await bulk(
    em,
    keys.map((e) => [e.customerId, e.transactionId]),
    {
      pg: 'select k.customer_id, k.transaction_id, k.body_hash, k.subscription_id from usage_event_keys k join unnest(?::uuid[], ?::text[]) as q (c, t) on k.customer_id = q.c and k.transaction_id = q.t',
      sqlite: (tuples) => `select customer_id, transaction_id, body_hash, subscription_id from usage_event_keys where (customer_id, transaction_id) in (values ${tuples})`,
      returning: true,
    },
  );
  for (const r of rows) stored.set(eventKey(String(r.customer_id), String(r.transaction_id)), { bodyHash: String(r.body_hash), subscriptionId: String(r.subscription_id) });
  return stored;
}

/** The idempotency step: which of `firsts` (one per key, sorted) were new, and what is stored for the others. */
async function claimKeys(em: EntityManager, firsts: PreparedEvent[]): Promise<{ inserted: Set<string>; stored: Map<string, StoredKey> }> {
  const claimed = await bulk(
    em,
    firsts.map((e) => [e.customerId, e.transactionId, e.bodyHash, e.subscriptionId]),
    {
      pg: 'insert into usage_event_keys (customer_id, transaction_id, body_hash, subscription_id) select * from unnest(?::uuid[], ?::text[], ?::text[], ?::uuid[]) on conflict do nothing returning customer_id, transaction_id',
      sqlite: (tuples) => `insert into usage_event_keys (customer_id, transaction_id, body_hash, subscription_id) values ${tuples} on conflict do nothing returning customer_id, transaction_id`,
      returning: true,
    },
  );
  const inserted = new Set(claimed.map((r) => eventKey(String(r.customer_id), String(r.transaction_id))));
  const others = firsts.filter((e) => !inserted.has(eventKey(e.customerId, e.transactionId)));
  return { inserted, stored: others.length > 0 ? await storedKeysOf(em, others) : new Map() };
}

interface HourlyRow {
  subscriptionId: string;
  metricId: string;
  hour: number;
  events: number;
  sum: bigint;
  max: bigint | null;
  latest: PreparedEvent;
}

const later = (a: PreparedEvent, b: PreparedEvent) =>
  a.timestamp.getTime() !== b.timestamp.getTime() ? a.timestamp.getTime() > b.timestamp.getTime() : a.transactionId > b.transactionId;

function rollup(events: PreparedEvent[]): { hourly: HourlyRow[]; values: [string, string, number, string][] } {
  const hours = new Map<string, HourlyRow>();
  const values = new Map<string, [string, string, number, string]>();
  for (const e of events) {
    if (!e.counted) continue;
    const hour = floorHour(e.timestamp.getTime());
    const k = `${e.subscriptionId}|${e.metricId}|${hour}`;
    let h = hours.get(k);
    if (!h) hours.set(k, (h = { subscriptionId: e.subscriptionId, metricId: e.metricId, hour, events: 0, sum: 0n, max: null, latest: e }));
    h.events++;
    if (e.valueMicro !== null) {
      h.sum += e.valueMicro;
      if (h.max === null || e.valueMicro > h.max) h.max = e.valueMicro;
    }
    if (later(e, h.latest)) h.latest = e;
    if (e.uniqueValue !== null) values.set(`${k}|${e.uniqueValue}`, [e.subscriptionId, e.metricId, hour, e.uniqueValue]);
  }
  // Sorted, so that concurrent batches lock rollup rows in one order (no deadlock between them).
  const hourly = [...hours.values()].sort((a, b) =>
    a.subscriptionId !== b.subscriptionId ? (a.subscriptionId < b.subscriptionId ? -1 : 1) : a.metricId !== b.metricId ? (a.metricId < b.metricId ? -1 : 1) : a.hour - b.hour,
  );
  const sortedValues = [...values.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
  return { hourly, values: sortedValues };
}

const UPSERT_HOURLY_SET = `on conflict (subscription_id, metric_id, hour) do update set
  events = usage_hourly.events + excluded.events,
  sum_micro = usage_hourly.sum_micro + excluded.sum_micro,
  max_micro = case when excluded.max_micro is null then usage_hourly.max_micro when usage_hourly.max_micro is null or excluded.max_micro > usage_hourly.max_micro then excluded.max_micro else usage_hourly.max_micro end,
  latest_at = case when (excluded.latest_at, excluded.latest_tx) > (usage_hourly.latest_at, usage_hourly.latest_tx) then excluded.latest_at else usage_hourly.latest_at end,
  latest_tx = case when (excluded.latest_at, excluded.latest_tx) > (usage_hourly.latest_at, usage_hourly.latest_tx) then excluded.latest_tx else usage_hourly.latest_tx end,
  latest_micro = case when (excluded.latest_at, excluded.latest_tx) > (usage_hourly.latest_at, usage_hourly.latest_tx) then excluded.latest_micro else usage_hourly.latest_micro end`;

const HOURLY_COLUMNS = 'subscription_id, metric_id, hour, events, sum_micro, max_micro, latest_at, latest_tx, latest_micro';
const EVENT_COLUMNS = 'subscription_id, customer_id, metric_id, transaction_id, occurred_at, value_micro, unique_value, counted, properties, received_at';

async function insertEvents(em: EntityManager, events: PreparedEvent[]): Promise<void> {
  const pg = isPostgres(em);
  const time = pg ? pgTime : (d: Date) => d.getTime();
  const big = pg ? pgBigint : (v: bigint | null) => v;
  await bulk(
    em,
    events.map((e) => [e.subscriptionId, e.customerId, e.metricId, e.transactionId, time(e.timestamp), big(e.valueMicro), e.uniqueValue, pg ? e.counted : e.counted ? 1 : 0, e.properties, time(e.receivedAt)]),
    {
      pg: `insert into usage_events (${EVENT_COLUMNS}) select * from unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::text[], ?::timestamptz[], ?::bigint[], ?::text[], ?::boolean[], ?::jsonb[], ?::timestamptz[])`,
      sqlite: (tuples) => `insert into usage_events (${EVENT_COLUMNS}) values ${tuples}`,
    },
  );
  const { hourly, values } = rollup(events);
  const hourTime = pg ? (ms: number) => new Date(ms).toISOString() : (ms: number) => ms;
  await bulk(
    em,
    hourly.map((h) => [h.subscriptionId, h.metricId, hourTime(h.hour), h.events, big(h.sum), big(h.max), time(h.latest.timestamp), h.latest.transactionId, big(h.latest.valueMicro)]),
    {
      pg: `insert into usage_hourly (${HOURLY_COLUMNS}) select * from unnest(?::uuid[], ?::uuid[], ?::timestamptz[], ?::bigint[], ?::numeric[], ?::bigint[], ?::timestamptz[], ?::text[], ?::bigint[]) ${UPSERT_HOURLY_SET}`,
      sqlite: (tuples) => `insert into usage_hourly (${HOURLY_COLUMNS}) values ${tuples} ${UPSERT_HOURLY_SET}`,
    },
  );
  await bulk(
    em,
    values.map(([s, m, hour, v]) => [s, m, hourTime(hour), v]),
    {
      pg: 'insert into usage_hourly_values (subscription_id, metric_id, hour, value) select * from unnest(?::uuid[], ?::uuid[], ?::timestamptz[], ?::text[]) on conflict do nothing',
      sqlite: (tuples) => `insert into usage_hourly_values (subscription_id, metric_id, hour, value) values ${tuples} on conflict do nothing`,
    },
  );
}

/** Per aggregation: the value read from a rollup row (h) and from a raw event (e), and how they combine. */
const PARTS: Record<Exclude<MetricAggregation, 'unique_count' | 'latest'>, { hourly: string; raw: string; combine: string }> = {
  count: { hourly: 'h.events', raw: '1', combine: 'sum' },
  sum: { hourly: 'h.sum_micro', raw: 'e.value_micro', combine: 'sum' },
  max: { hourly: 'h.max_micro', raw: 'e.value_micro', combine: 'max' },
};

/**
 * The query's windows relation `w (subscription_id, from_at, to_at, h_from, h_to)`: [h_from,
 * h_to) are the whole hours inside [from_at, to_at) (h_from = h_to = to_at when there is none).
 */
function windowsOf(em: EntityManager, windows: readonly UsageWindow[]): { cte: string; params: unknown[] } {
  const pg = isPostgres(em);
  const rows = windows.map((w) => {
    const from = w.from.getTime();
    const to = Math.max(from, w.to.getTime());
    let hFrom = ceilHour(from);
    let hTo = floorHour(to);
    if (hFrom >= hTo) hFrom = hTo = to;
    return [w.subscriptionId, from, to, hFrom, hTo];
  });
  if (pg) {
    const arrays = [0, 1, 2, 3, 4].map((i) => rows.map((r) => (i === 0 ? r[0] : new Date(r[i] as number).toISOString())));
    return {
      cte: 'with w as (select * from unnest(?::uuid[], ?::timestamptz[], ?::timestamptz[], ?::timestamptz[], ?::timestamptz[]) as w (subscription_id, from_at, to_at, h_from, h_to))',
      params: arrays,
    };
  }
  return {
    cte: `with w (subscription_id, from_at, to_at, h_from, h_to) as (values ${rows.map(() => '(?, ?, ?, ?, ?)').join(', ')})`,
    params: rows.flat(),
  };
}

/** The raw events of a window's partial hours: head [from_at, h_from) and tail [h_to, to_at), each an index range. */
function rawParts(select: string): string {
  const base = `from w join usage_events e on e.subscription_id = w.subscription_id and e.metric_id = ? and e.counted = true`;
  return `select e.subscription_id as sid, ${select} ${base} and e.occurred_at >= w.from_at and e.occurred_at < w.h_from
    union all select e.subscription_id as sid, ${select} ${base} and e.occurred_at >= w.h_to and e.occurred_at < w.to_at`;
}

function aggregateSql(aggregation: MetricAggregation, cte: string): { sql: string; metricParams: number } {
  if (aggregation === 'unique_count') {
    return {
      sql: `${cte} select sid, cast(count(distinct v) as text) as units from (
        select h.subscription_id as sid, h.value as v from w join usage_hourly_values h on h.subscription_id = w.subscription_id and h.metric_id = ? and h.hour >= w.h_from and h.hour < w.h_to
        union all ${rawParts('e.unique_value as v')}
      ) x group by sid`,
      metricParams: 3,
    };
  }
  if (aggregation === 'latest') {
    return {
      sql: `${cte} select sid, cast(v as text) as units from (
        select sid, v, row_number() over (partition by sid order by at desc, tx desc) as n from (
          select h.subscription_id as sid, h.latest_at as at, h.latest_tx as tx, h.latest_micro as v from w join usage_hourly h on h.subscription_id = w.subscription_id and h.metric_id = ? and h.hour >= w.h_from and h.hour < w.h_to
          union all ${rawParts('e.occurred_at as at, e.transaction_id as tx, e.value_micro as v')}
        ) x
      ) y where n = 1`,
      metricParams: 3,
    };
  }
  const part = PARTS[aggregation];
  return {
    sql: `${cte} select sid, cast(${part.combine}(v) as text) as units from (
      select h.subscription_id as sid, ${part.hourly} as v from w join usage_hourly h on h.subscription_id = w.subscription_id and h.metric_id = ? and h.hour >= w.h_from and h.hour < w.h_to
      union all ${rawParts(`${part.raw} as v`)}
    ) x group by sid`,
    metricParams: 3,
  };
}

/** Windows a statement on SQLite (5 bound values each); PostgreSQL takes any number in its arrays. */
const SQLITE_WINDOWS_PER_STATEMENT = 2_000;

async function aggregateWindows(em: EntityManager, metric: UsageMetricRef, windows: readonly UsageWindow[]): Promise<Map<string, string>> {
  const counts = metric.aggregation === 'count' || metric.aggregation === 'unique_count';
  const out = new Map<string, string>();
  const step = isPostgres(em) ? Math.max(1, windows.length) : SQLITE_WINDOWS_PER_STATEMENT;
  for (let i = 0; i < windows.length; i += step) {
    const slice = windows.slice(i, i + step);
    const { cte, params } = windowsOf(em, slice);
    const { sql, metricParams } = aggregateSql(metric.aggregation, cte);
    const rows = await hotRows<{ sid: string; units: string | null }>(em, sql, [...params, ...Array(metricParams).fill(metric.id)]);
    for (const r of rows) {
      if (r.units === null) continue;
      const micro = counts ? BigInt(r.units) * MICRO : BigInt(r.units);
      out.set(String(r.sid), formatUnits(micro));
    }
  }
  for (const w of windows) if (!out.has(w.subscriptionId)) out.set(w.subscriptionId, '0');
  return out;
}

function monthStart(year: number, month: number): Date {
  return new Date(Date.UTC(year, month, 1));
}

/** The partition holding the month starting at `start`: usage_events_yYYYYmMM. */
export function partitionName(start: Date): string {
  return `usage_events_y${start.getUTCFullYear()}m${String(start.getUTCMonth() + 1).padStart(2, '0')}`;
}

async function ensurePgPartitions(em: EntityManager, around: Date, monthsAhead: number): Promise<void> {
  const wanted: { name: string; from: Date }[] = [];
  for (let k = -1; k <= monthsAhead; k++) {
    const from = monthStart(around.getUTCFullYear(), around.getUTCMonth() + k);
    wanted.push({ name: partitionName(from), from });
  }
  const existing = async (e: EntityManager) =>
    new Set(
      (await hotRows<{ name: string }>(e, "select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'usage_events'::regclass", [])).map(
        (r) => r.name,
      ),
    );
  const have = await existing(em);
  const missing = wanted.filter((p) => !have.has(p.name));
  if (missing.length === 0) return;
  // NOTE: made by usage_events_make_partition (a migration's function that runs as the schema's
  // owner), not by DDL here: the service may run as a role that owns nothing, which can neither
  // create a table nor attach one to usage_events. The function takes the same advisory lock,
  // makes nothing when the partition exists, and moves the month's rows out of the DEFAULT one.
  await em.fork().transactional(async (tx) => {
    for (const p of missing) await tx.execute('select usage_events_make_partition(?::date)', [p.from.toISOString().slice(0, 10)]);
  });
}

export const sqlEventStore: EventStore = {
  async insert(em, events) {
    requireTransaction(em);
    const outcomes: InsertOutcome[] = new Array(events.length);
    const firstOf = new Map<string, number>();
    events.forEach((e, i) => {
      const k = eventKey(e.customerId, e.transactionId);
      const first = firstOf.get(k);
      if (first === undefined) firstOf.set(k, i);
      else outcomes[i] = events[first].bodyHash === e.bodyHash ? 'duplicate' : 'conflict';
    });
    const firsts = [...firstOf.values()].map((i) => events[i]).sort(byKey);
    const { inserted, stored } = await claimKeys(em, firsts);
    for (const i of firstOf.values()) {
      const e = events[i];
      const k = eventKey(e.customerId, e.transactionId);
      outcomes[i] = inserted.has(k) ? 'inserted' : stored.get(k)?.bodyHash === e.bodyHash ? 'duplicate' : 'conflict';
    }
    if (outcomes.includes('conflict')) return outcomes;
    await insertEvents(
      em,
      events.filter((_, i) => outcomes[i] === 'inserted'),
    );
    return outcomes;
  },

  storedKeys: storedKeysOf,

  async aggregate(em, subscriptionId, metric, from, to) {
    return (await aggregateWindows(em, metric, [{ subscriptionId, from, to }])).get(subscriptionId) ?? '0';
  },

  aggregateMany(em, metric, windows) {
    return aggregateWindows(em, metric, windows);
  },

  async lastCountedAt(em, subscriptionId, since) {
    // The hourly rollups keep each hour's latest counted event: a handful of rows, not the events.
    const rows = await hotRows(em, 'select max(latest_at) as at from usage_hourly where subscription_id = ? and hour >= ?', [subscriptionId, new Date(floorHour(since.getTime()))]);
    const at = rows[0]?.at;
    return at === null || at === undefined ? null : toDate(at);
  },

  async ensurePartitions(em, around, monthsAhead = 3) {
    if (isPostgres(em)) await ensurePgPartitions(em, around, monthsAhead);
  },
};

/** The store the service uses. */
export const eventStore: EventStore = sqlEventStore;
