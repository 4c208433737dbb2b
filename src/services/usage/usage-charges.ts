import type { EntityManager } from '@mikro-orm/knex';
import { BillableMetric } from '../../db/entities/billable-metric.js';
import type { Plan } from '../../db/entities/plan.js';
import type { Subscription } from '../../db/entities/subscription.js';
import { isoDate } from '../../domain/billing-calendar.js';
import type { Money } from '../../domain/money.js';
import type { MetricAggregation } from '../../domain/usage/aggregation.js';
import { chargeAmount, type PlanCharge } from '../../domain/usage/charge-models.js';
import type { DataContext } from '../context.js';
import type { InvoiceLineInput } from '../invoices/create-invoice.js';
import { eventStore } from './event-store.js';

/*
 * What a window of usage costs (docs/usage.md): per charge of a plan, the units its metric
 * counted in [from, to) for one subscription (the event store's aggregate) priced by the charge's
 * model (src/domain/usage/charge-models.ts). The one pricing of usage, for the usage endpoint,
 * the portal and the invoices (renewals, the batched run, plan changes, cancellations).
 */

/** Where a subscription's open usage window starts: the end of the last window invoiced, else its period's start (a trial's too); null before it starts. */
export function usageOpenFrom(sub: Pick<Subscription, 'usageBilledUntil' | 'currentPeriodStart'>): Date | null {
  return sub.usageBilledUntil ?? sub.currentPeriodStart;
}

/** One charge of a window: what its metric counted and what that costs (before PPN; usage is never discounted). */
export interface UsageChargeAmount {
  charge: PlanCharge;
  metric: { code: string; name: string; aggregation: MetricAggregation };
  /** Exact decimal text ("12500", "3.25"). */
  units: string;
  amount: Money;
}

/** The plan fields pricing reads. */
export type PricedPlan = Pick<Plan, 'charges' | 'currency'>;

/** One subscription's window to price with usageLinesMany: [from, to) under `plan`. */
export interface PricedWindow {
  subscriptionId: string;
  plan: PricedPlan;
  from: Date;
  to: Date;
}

type MetricTerms = Pick<BillableMetric, 'id' | 'code' | 'name' | 'aggregation'>;

/**
 * The metrics these plans charge, by code, in one query. Archived ones too: a window is billed
 * by the terms it was counted under. A charge naming no metric at all is a broken catalogue.
 */
async function chargedMetrics(em: EntityManager, plans: PricedPlan[]): Promise<Map<string, MetricTerms>> {
  const codes = [...new Set(plans.flatMap((p) => p.charges.map((c) => c.metric)))];
  if (codes.length === 0) return new Map();
  const found = await em.find(BillableMetric, { code: { $in: codes } }, { fields: ['id', 'code', 'name', 'aggregation'] });
  const byCode = new Map<string, MetricTerms>(found.map((m) => [m.code, m]));
  const missing = codes.filter((c) => !byCode.has(c));
  if (missing.length > 0) throw new Error(`plan charges name billable metrics that do not exist: ${missing.join(', ')}`);
  return byCode;
}

function priced(charge: PlanCharge, metric: MetricTerms, units: string, currency: string): UsageChargeAmount {
  return {
    charge,
    metric: { code: metric.code, name: charge.metric_name ?? metric.name, aggregation: metric.aggregation },
    units,
    amount: chargeAmount(charge, units, currency),
  };
}

/**
 * Per charge of `plan`, in its order, the units `sub` counted in [from, to) and their price.
 * An empty list for a plan without charges (no query). `to` at or before `from` counts nothing.
 */
export async function usageOf(ctx: Pick<DataContext, 'em'>, sub: Pick<Subscription, 'id'>, plan: PricedPlan, from: Date, to: Date): Promise<UsageChargeAmount[]> {
  if (plan.charges.length === 0) return [];
  const metrics = await chargedMetrics(ctx.em, [plan]);
  const result: UsageChargeAmount[] = [];
  for (const charge of plan.charges) {
    const metric = metrics.get(charge.metric)!;
    const units = to > from ? await eventStore.aggregate(ctx.em, sub.id, metric, from, to) : '0';
    result.push(priced(charge, metric, units, plan.currency));
  }
  return result;
}

/**
 * A priced charge as an invoice line: kind `usage`, one unit of its amount, never discounted,
 * for the window [from, to), its subject naming what was counted (documents word it).
 */
export function usageLine(usage: UsageChargeAmount, from: Date, to: Date): InvoiceLineInput {
  const { charge, metric, units } = usage;
  return {
    description: `${metric.name}: ${units} (${isoDate(from)} to ${isoDate(to)})`,
    subject: { type: 'usage', metric: metric.code, metric_name: metric.name, aggregation: metric.aggregation, model: charge.model, units },
    kind: 'usage',
    quantity: 1,
    unitAmount: usage.amount,
    periodStart: from,
    periodEnd: to,
    discounted: false,
  };
}

/**
 * The invoice lines of `sub`'s usage in [from, to) under `plan`: one per charge, also at 0
 * units (the caller decides whether an all-zero window is worth an invoice); [] without charges.
 */
export async function usageLines(ctx: Pick<DataContext, 'em'>, sub: Pick<Subscription, 'id'>, plan: PricedPlan, from: Date, to: Date): Promise<InvoiceLineInput[]> {
  return (await usageOf(ctx, sub, plan, from, to)).map((u) => usageLine(u, from, to));
}

/**
 * usageLines for many subscriptions at once (the batched billing run): one query for the
 * metrics and one aggregateMany per metric charged, whatever the number of subscriptions.
 * Answers, by subscription id, the lines of each window given (a window whose plan has no
 * charges gets []). Each subscription id may appear once.
 */
export async function usageLinesMany(ctx: Pick<DataContext, 'em'>, windows: readonly PricedWindow[]): Promise<Map<string, InvoiceLineInput[]>> {
  const result = new Map<string, InvoiceLineInput[]>(windows.map((w) => [w.subscriptionId, []]));
  const charged = windows.filter((w) => w.plan.charges.length > 0);
  if (charged.length === 0) return result;
  const metrics = await chargedMetrics(ctx.em, charged.map((w) => w.plan));
  const unitsByMetric = new Map<string, Map<string, string>>();
  for (const [code, metric] of metrics) {
    const counted = charged.filter((w) => w.to > w.from && w.plan.charges.some((c) => c.metric === code));
    if (counted.length > 0) unitsByMetric.set(code, await eventStore.aggregateMany(ctx.em, metric, counted));
  }
  for (const w of charged) {
    result.set(
      w.subscriptionId,
      w.plan.charges.map((charge) => {
        const units = unitsByMetric.get(charge.metric)?.get(w.subscriptionId) ?? '0';
        return usageLine(priced(charge, metrics.get(charge.metric)!, units, w.plan.currency), w.from, w.to);
      }),
    );
  }
  return result;
}
