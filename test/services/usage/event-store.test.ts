import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateUp, openOrm, type Orm } from '../../../src/db/orm.js';
import { formatUnits, MICRO, type MetricAggregation } from '../../../src/domain/usage/aggregation.js';
import { eventStore, partitionName, type PreparedEvent, type UsageMetricRef } from '../../../src/services/usage/event-store.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../helpers/database.js';

/*
 * The event store against a brute-force computation over the raw events: every aggregation over
 * windows that start and end mid-hour, on an hour, inside one hour or span none; aggregateMany
 * equal to aggregate per subscription; on PostgreSQL, the monthly partitions and where rows land.
 */

const HOUR = 3_600_000;
const BASE = Date.UTC(2027, 0, 31, 20, 0); // crosses into February: two partitions on PostgreSQL
const AGGREGATIONS: MetricAggregation[] = ['count', 'sum', 'max', 'unique_count', 'latest'];

/** A small deterministic generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function bruteForce(events: PreparedEvent[], metric: UsageMetricRef, subscriptionId: string, from: Date, to: Date): string {
  const inWindow = events.filter((e) => e.subscriptionId === subscriptionId && e.metricId === metric.id && e.counted && e.timestamp >= from && e.timestamp < to);
  if (inWindow.length === 0) return '0';
  switch (metric.aggregation) {
    case 'count':
      return String(inWindow.length);
    case 'sum':
      return formatUnits(inWindow.reduce((s, e) => s + e.valueMicro!, 0n));
    case 'max':
      return formatUnits(inWindow.reduce((m, e) => (e.valueMicro! > m ? e.valueMicro! : m), inWindow[0].valueMicro!));
    case 'unique_count':
      return String(new Set(inWindow.map((e) => e.uniqueValue)).size);
    case 'latest': {
      const last = inWindow.reduce((a, e) => (e.timestamp.getTime() > a.timestamp.getTime() || (e.timestamp.getTime() === a.timestamp.getTime() && e.transactionId > a.transactionId) ? e : a));
      return formatUnits(last.valueMicro!);
    }
  }
}

describe.each(DATABASES)('event store (%s)', { timeout: 120_000 }, (kind) => {
  let db: TestDatabase;
  let orm: Orm;
  const em = () => orm.em.fork() as EntityManager;
  const subscriptions = [randomUUID(), randomUUID(), randomUUID()];
  const metrics: UsageMetricRef[] = AGGREGATIONS.map((aggregation) => ({ id: randomUUID(), aggregation }));
  const events: PreparedEvent[] = [];

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    orm = await openOrm(db.url, { create: true });
    await migrateUp(orm);
    await eventStore.ensurePartitions(em(), new Date(BASE));
    const next = random(42);
    const customers = new Map(subscriptions.map((s) => [s, randomUUID()]));
    for (let i = 0; i < 1200; i++) {
      const metric = metrics[i % metrics.length];
      const subscriptionId = subscriptions[Math.floor(next() * subscriptions.length)];
      // Whole seconds over eight hours, so that timestamps tie now and then (latest's tie-break).
      const timestamp = new Date(BASE + Math.floor(next() * 8 * 3600) * 1000);
      const numeric = ['sum', 'max', 'latest'].includes(metric.aggregation);
      events.push({
        customerId: customers.get(subscriptionId)!,
        transactionId: `t${String(i).padStart(5, '0')}-${Math.floor(next() * 1000)}`,
        bodyHash: `h${i}`,
        subscriptionId,
        metricId: metric.id,
        timestamp,
        valueMicro: numeric ? BigInt(Math.floor((next() - 0.3) * 5_000_000_000)) : null,
        uniqueValue: metric.aggregation === 'unique_count' ? `v${Math.floor(next() * 40)}` : null,
        counted: next() > 0.1,
        properties: '{}',
        receivedAt: new Date(BASE),
      });
    }
    // In batches, as ingestion stores them: the rollups are updated by later batches too.
    for (let i = 0; i < events.length; i += 300) {
      const outcomes = await em().transactional((tx) => eventStore.insert(tx as EntityManager, events.slice(i, i + 300)));
      expect(outcomes.every((o) => o === 'inserted')).toBe(true);
    }
  });
  afterAll(async () => {
    await orm?.close(true);
    await db?.drop();
  });

  const windows: [string, number, number][] = [
    ['everything', BASE - HOUR, BASE + 10 * HOUR],
    ['mid-hour to mid-hour', BASE + 0.25 * HOUR + 1234, BASE + 5.5 * HOUR - 7],
    ['on the hours', BASE + HOUR, BASE + 4 * HOUR],
    ['inside one hour', BASE + 2.1 * HOUR, BASE + 2.7 * HOUR],
    ['across one hour boundary', BASE + 2.9 * HOUR, BASE + 3.2 * HOUR],
    ['one millisecond', BASE + 3 * HOUR, BASE + 3 * HOUR + 1],
    ['empty', BASE + 20 * HOUR, BASE + 30 * HOUR],
  ];

  it.each(windows)('aggregates each kind over %s as a brute force over the raw events does', async (_name, from, to) => {
    for (const metric of metrics) {
      for (const sub of subscriptions) {
        const expected = bruteForce(events, metric, sub, new Date(from), new Date(to));
        expect(await eventStore.aggregate(em(), sub, metric, new Date(from), new Date(to)), `${metric.aggregation} ${sub}`).toBe(expected);
      }
    }
  });

  it('aggregateMany answers what aggregate answers for each subscription, each with its own window', async () => {
    const own = subscriptions.map((subscriptionId, i) => ({ subscriptionId, from: new Date(BASE + i * 0.7 * HOUR + 17), to: new Date(BASE + (6 - i) * HOUR - 3) }));
    const absent = { subscriptionId: randomUUID(), from: new Date(BASE), to: new Date(BASE + HOUR) };
    for (const metric of metrics) {
      const many = await eventStore.aggregateMany(em(), metric, [...own, absent]);
      for (const w of own) expect(many.get(w.subscriptionId), metric.aggregation).toBe(await eventStore.aggregate(em(), w.subscriptionId, metric, w.from, w.to));
      expect(many.get(absent.subscriptionId)).toBe('0');
    }
  });

  it('keeps values exact beyond a double (sums of micro-units past 2^53)', async () => {
    const metric: UsageMetricRef = { id: randomUUID(), aggregation: 'sum' };
    const sub = randomUUID();
    const big = 999_999_999_999n * MICRO + 999_999n;
    const rows = [1, 2, 3].map((n) => ({ ...events[0], subscriptionId: sub, metricId: metric.id, transactionId: `big${n}`, valueMicro: big, counted: true, timestamp: new Date(BASE + n * 1000) }));
    await em().transactional((tx) => eventStore.insert(tx as EntityManager, rows));
    expect(await eventStore.aggregate(em(), sub, metric, new Date(BASE - HOUR), new Date(BASE + HOUR))).toBe('2999999999999.999997');
    expect(await eventStore.aggregate(em(), sub, metric, new Date(BASE), new Date(BASE + 2500))).toBe('1999999999999.999998');
  });

  it.runIf(kind === 'postgresql')('makes the monthly partitions ahead and puts each event in its month; a late partition takes its rows out of DEFAULT', async () => {
    const partitions = async () =>
      (await em().execute<{ name: string }[]>("select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'usage_events'::regclass")).map((r) => r.name);
    const have = await partitions();
    for (const month of [0, 1, 2, 3]) expect(have).toContain(partitionName(new Date(Date.UTC(2027, month, 1))));
    const placed = await em().execute<{ part: string; n: string }[]>('select tableoid::regclass::text as part, count(*) as n from usage_events group by 1 order by 1');
    const expected = new Map<string, number>();
    for (const e of events) {
      const p = partitionName(new Date(Date.UTC(e.timestamp.getUTCFullYear(), e.timestamp.getUTCMonth(), 1)));
      expected.set(p, (expected.get(p) ?? 0) + 1);
    }
    for (const [part, n] of expected) expect(Number(placed.find((r) => r.part === part)?.n ?? 0) >= n, part).toBe(true);
    expect(expected.size).toBe(2);

    // An event of a month without its partition lands in DEFAULT; making the partition moves it.
    const far = new Date(Date.UTC(2031, 6, 15));
    await em().transactional((tx) => eventStore.insert(tx as EntityManager, [{ ...events[0], transactionId: 'far', timestamp: far }]));
    const where = async () => (await em().execute<{ part: string }[]>("select tableoid::regclass::text as part from usage_events where transaction_id = 'far'"))[0].part;
    expect(await where()).toBe('usage_events_default');
    await eventStore.ensurePartitions(em(), far, 0);
    expect(await where()).toBe(partitionName(new Date(Date.UTC(2031, 6, 1))));
    await eventStore.ensurePartitions(em(), far, 0);
  });
});
