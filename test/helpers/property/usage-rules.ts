import type { EntityManager } from '@mikro-orm/knex';
import { BillableMetric } from '../../../src/db/entities/billable-metric.js';
import { InvoiceLine } from '../../../src/db/entities/invoice.js';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { LIVE_SUBSCRIPTION_STATUSES } from '../../../src/domain/states/subscription-states.js';
import { formatUnits } from '../../../src/domain/usage/aggregation.js';
import { usageOpenFrom } from '../../../src/services/usage/usage-charges.js';
import type { PlanSeed } from '../../../src/services/plans/seed-plans.js';

/*
 * Usage in the customer-sequence model (issue 42): two metrics, a metered plan charging both
 * and a weekly plan charging one, and rule 12, which holds every usage invoice line to the raw
 * events the customer's requests were acknowledged for.
 */

/** The metrics of this world, made before the plans that charge them. */
export const PROPERTY_METRICS = [
  { code: 'p_calls', name: 'Calls', aggregation: 'count' as const, field: null },
  { code: 'p_gb', name: 'Gigabytes', aggregation: 'sum' as const, field: 'gb' },
];

/** The charges of the metered plans (graduated calls with a free tier, storage in packages; a standard rate weekly). */
export const METERED_PLAN: PlanSeed = {
  slug: 'p-metered',
  name: 'Metered',
  description: 'A base price, calls and storage billed in arrears, PPN on top',
  price: 30000,
  currency: 'IDR',
  interval: 1,
  interval_unit: 'month',
  sort_order: 7,
  tax_behavior: 'exclusive',
  charges: [
    { metric: 'p_calls', model: 'graduated', properties: { tiers: [{ up_to: '5', unit_amount: '0', flat_amount: '0' }, { up_to: null, unit_amount: '150', flat_amount: '1000' }] } },
    { metric: 'p_gb', model: 'package', properties: { amount: '5000', package_size: 2, free_units: 1 } },
  ],
} as PlanSeed;
export const WEEKLY_CALLS_CHARGE = [{ metric: 'p_calls', model: 'standard', properties: { unit_amount: '25.5' } }];

export async function makePropertyMetrics(em: EntityManager, now: Date): Promise<void> {
  for (const m of PROPERTY_METRICS) em.create(BillableMetric, { ...m, description: '', filters: null, status: 'active', createdAt: now, updatedAt: now } as BillableMetric);
  await em.flush();
}

/** An event the service acknowledged (202), as the customer sent it. */
export interface SentEvent {
  transactionId: string;
  code: string;
  timestamp: Date;
  properties?: Record<string, unknown>;
}

interface StoredEvent {
  transactionId: string;
  subscriptionId: string;
  metricId: string;
  at: Date;
  valueMicro: bigint | null;
  counted: boolean;
}

const asDate = (v: unknown): Date => (v instanceof Date ? v : new Date(typeof v === 'number' || /^\d+$/.test(String(v)) ? Number(v) : String(v)));

async function storedEvents(em: EntityManager, userId: string): Promise<StoredEvent[]> {
  const rows = (await em.execute(
    'select transaction_id, subscription_id, metric_id, occurred_at, cast(value_micro as text) as value_micro, counted from usage_events where customer_id = ?',
    [userId],
    'all',
  )) as Record<string, unknown>[];
  return rows.map((r) => ({
    transactionId: String(r.transaction_id),
    subscriptionId: String(r.subscription_id),
    metricId: String(r.metric_id),
    at: asDate(r.occurred_at),
    valueMicro: r.value_micro === null || r.value_micro === undefined ? null : BigInt(String(r.value_micro)),
    counted: r.counted === true || r.counted === 1 || r.counted === '1',
  }));
}

/**
 * Rule 12: every event acknowledged is stored exactly once (nothing acknowledged is lost, no
 * duplicate counts twice); every counted event falls in exactly one usage line of its
 * subscription on an invoice that is not void, or else in the open window of a live
 * subscription; and every usage line bills exactly the units of the counted events of its
 * window (count: how many; sum: their values).
 */
export async function usageProblems(em: EntityManager, userId: string, sent: readonly SentEvent[]): Promise<string[]> {
  const problems: string[] = [];
  const stored = await storedEvents(em, userId);
  const times = new Map<string, number>();
  for (const e of stored) times.set(e.transactionId, (times.get(e.transactionId) ?? 0) + 1);
  for (const s of sent) {
    const n = times.get(s.transactionId) ?? 0;
    if (n !== 1) problems.push(`event ${s.transactionId} (${s.code} at ${s.timestamp.toISOString()}) was acknowledged and is stored ${n} times`);
  }
  if (stored.length === 0) return problems;

  const metrics = new Map((await em.find(BillableMetric, {})).map((m) => [m.id, m]));
  const subs = new Map((await em.find(Subscription, { user: userId })).map((s) => [s.id, s]));
  const lines = (await em.find(InvoiceLine, { kind: 'usage', invoice: { user: userId, status: { $ne: 'void' } } }, { populate: ['invoice'] })).filter((l) => l.invoice.subscription);
  const linesOf = (subscriptionId: string, code: string) => lines.filter((l) => l.invoice.subscription!.id === subscriptionId && l.subject?.metric === code);

  for (const e of stored.filter((x) => x.counted)) {
    const code = metrics.get(e.metricId)?.code ?? e.metricId;
    const covering = linesOf(e.subscriptionId, code).filter((l) => l.periodStart && l.periodEnd && l.periodStart.getTime() <= e.at.getTime() && e.at.getTime() < l.periodEnd.getTime());
    const sub = subs.get(e.subscriptionId);
    const open = sub && (LIVE_SUBSCRIPTION_STATUSES as readonly string[]).includes(sub.status) && usageOpenFrom(sub) !== null && e.at.getTime() >= usageOpenFrom(sub)!.getTime();
    if (covering.length > 1) problems.push(`event ${e.transactionId} (${code} at ${e.at.toISOString()}) is billed ${covering.length} times: ${covering.map((l) => l.invoice.number).join(', ')}`);
    if (covering.length === 0 && !open) {
      problems.push(`event ${e.transactionId} (${code} at ${e.at.toISOString()}) of subscription ${e.subscriptionId} (${sub?.status}) is billed nowhere and its window is closed (usage billed until ${sub?.usageBilledUntil?.toISOString() ?? 'none'})`);
    }
    if (covering.length === 1 && open) problems.push(`event ${e.transactionId} (${code} at ${e.at.toISOString()}) is billed by ${covering[0].invoice.number} yet still in the open window`);
  }

  for (const l of lines) {
    if (!l.periodStart || !l.periodEnd) {
      problems.push(`usage line ${l.invoice.number}/${l.position} has no window`);
      continue;
    }
    const metric = [...metrics.values()].find((m) => m.code === l.subject?.metric);
    if (!metric) continue;
    const inWindow = stored.filter((e) => e.counted && e.subscriptionId === l.invoice.subscription!.id && e.metricId === metric.id && e.at.getTime() >= l.periodStart!.getTime() && e.at.getTime() < l.periodEnd!.getTime());
    const expected = metric.aggregation === 'count' ? BigInt(inWindow.length) * 1_000_000n : inWindow.reduce((a, e) => a + (e.valueMicro ?? 0n), 0n);
    if (String(l.subject?.units) !== formatUnits(expected)) {
      problems.push(`usage line ${l.invoice.number}/${l.position} (${metric.code}, ${l.periodStart.toISOString()} to ${l.periodEnd.toISOString()}) bills ${String(l.subject?.units)} units; its window's events come to ${formatUnits(expected)}`);
    }
  }
  return problems;
}
