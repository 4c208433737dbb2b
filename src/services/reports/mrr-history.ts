import type { EntityManager } from '@mikro-orm/knex';
import { Plan } from '../../db/entities/plan.js';
import type { SubscriptionDiscount } from '../../db/entities/subscription.js';
import { add, compare, isPositive, multiplyAndRound, subtract, ZERO, type Money } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { jsonOf, termsTimeline, type SubscriptionRow } from './mrr-prices.js';
import { firstPayingByCustomer, fundSpans, pastDueSpans, takenBackSpans } from './mrr-spans.js';
import { reportMonths, type ReportHeader, type ReportMonth, type ReportRange } from './report-months.js';

/*
 * NOTE: MRR is rebuilt from what each subscription paid for and what it was invoiced, because no
 * table keeps a subscription's past states (docs/reports.md, "MRR"): when it was paying
 * (mrr-spans.ts: funded or past due, never in a period whose money the gateway took back) and
 * what it earned then (mrr-prices.ts: its plan, units and discount at that instant, without PPN),
 * normalised to a month. The same snapshots give the MRR report, its movements and the churn
 * report, in the API and the CLI alike.
 */

/** One plan's share of the MRR at an instant. */
export interface PlanMrr {
  plan: Plan;
  mrr: Money;
  subscriptions: number;
}

/** The MRR at one instant: per customer (user id) and per plan. */
export interface MrrSnapshot {
  total: Money;
  customers: Map<string, Money>;
  plans: Map<string, PlanMrr>;
}

/** How the MRR moved between two month ends, summed over customers (as on the wire). */
export interface MrrMovements {
  new: Money;
  expansion: Money;
  contraction: Money;
  churned: Money;
  reactivated: Money;
  /** new + expansion + reactivated − contraction − churned = mrr − the previous month's mrr */
  net_new: Money;
}

export interface CustomerMovements extends MrrMovements {
  customersAtStart: number;
  customersChurned: number;
}

export interface MrrMonth {
  month: ReportMonth;
  /** The month has not ended yet by the service's clock: its figures are what stands now. */
  partial: boolean;
  /** MRR at the month's last instant. */
  end: MrrSnapshot;
  /** MRR at the previous month's last instant. */
  start: MrrSnapshot;
  movements: CustomerMovements;
}

/**
 * NOTE: a plan's price as a month's worth, in whole units for a whole-unit currency (rupiah):
 * a price per N months divided by N (a yearly plan by 12), per week × 52/12, per day × 365/12.
 */
export function monthlyPrice(plan: Pick<Plan, 'price' | 'interval' | 'intervalUnit' | 'currency'>): Money {
  const perYear = plan.intervalUnit === 'week' ? 52 : plan.intervalUnit === 'day' ? 365 : 12;
  return multiplyAndRound(plan.price, perYear, 12 * plan.interval, plan.currency);
}

/** The months of `range` with the MRR at each month's end and the movements between (docs/reports.md). */
export async function mrrMonths(ctx: DataContext, range: ReportRange): Promise<{ header: ReportHeader; months: MrrMonth[] }> {
  const timezone = ctx.config.documents.timeZone;
  const currency = ctx.config.walletCurrency;
  const months = reportMonths(range, timezone);
  // The last instant of the month before the first, then of each month.
  const instants = [months[0].start.getTime() - 1, ...months.map((m) => m.end.getTime() - 1)];
  const em = ctx.em.fork();
  const first = instants[0];
  const last = instants[instants.length - 1];

  const plans = await em.find(Plan, {}, { orderBy: { sortOrder: 'asc', slug: 'asc' } });
  const spans = [...(await fundSpans(em, first, last)), ...(await pastDueSpans(em, first, last))];
  const takenBack = new Map<string, { start: number; end: number }[]>();
  for (const span of await takenBackSpans(em, first, last)) takenBack.set(span.subscriptionId, [...(takenBack.get(span.subscriptionId) ?? []), span]);
  const subscriptions = await subscriptionsOf(em, [...new Set(spans.map((s) => s.subscriptionId))]);
  const termsAt = await termsTimeline(em, plans, subscriptions, ctx.config.tax.pkp);
  const firstPaying = await firstPayingByCustomer(em);

  // Which instants each subscription pays at (a set: spans of one subscription may overlap),
  // never one inside a period whose money was taken back.
  const covers = (span: { start: number; end: number }, at: number) => at >= span.start && at < span.end;
  const paying = new Map<string, Set<number>>();
  for (const span of spans) {
    for (let i = 0; i < instants.length; i += 1) {
      if (!covers(span, instants[i])) continue;
      if (takenBack.get(span.subscriptionId)?.some((t) => covers(t, instants[i]))) continue;
      let set = paying.get(span.subscriptionId);
      if (!set) paying.set(span.subscriptionId, (set = new Set()));
      set.add(i);
    }
  }

  const snapshots: MrrSnapshot[] = instants.map(() => ({ total: ZERO, customers: new Map(), plans: new Map() }));
  for (const [subscriptionId, at] of paying) {
    const sub = subscriptions.get(subscriptionId);
    if (!sub) continue;
    for (const i of at) {
      const terms = termsAt(subscriptionId, instants[i]);
      if (!terms || terms.plan.currency !== currency) continue;
      const plan = terms.plan;
      const amount = monthlyPrice({ ...plan, price: terms.price });
      if (!isPositive(amount)) continue;
      const snapshot = snapshots[i];
      snapshot.total = add(snapshot.total, amount);
      snapshot.customers.set(sub.userId, add(snapshot.customers.get(sub.userId) ?? ZERO, amount));
      const share = snapshot.plans.get(plan.id) ?? { plan, mrr: ZERO, subscriptions: 0 };
      snapshot.plans.set(plan.id, { plan, mrr: add(share.mrr, amount), subscriptions: share.subscriptions + 1 });
    }
  }

  return {
    header: { from: months[0].label, to: months[months.length - 1].label, timezone, currency },
    months: months.map((month, i) => {
      const start = snapshots[i];
      const end = snapshots[i + 1];
      const partial = month.end.getTime() > ctx.clock.now().getTime();
      return { month, partial, start, end, movements: movementsBetween(start, end, month.start.getTime(), firstPaying) };
    }),
  };
}

/**
 * NOTE: movements per customer between two month ends, as ChartMogul defines them: new (from
 * nothing, the first time ever), reactivated (from nothing, having paid before), expansion and
 * contraction (up or down, still paying), churned (to nothing, counted positive). A customer who
 * came and went inside one month moved nothing at the month ends.
 */
function movementsBetween(start: MrrSnapshot, end: MrrSnapshot, monthStart: number, firstPaying: Map<string, number>): CustomerMovements {
  const m = { new: ZERO, expansion: ZERO, contraction: ZERO, churned: ZERO, reactivated: ZERO };
  let customersAtStart = 0;
  let customersChurned = 0;
  for (const customer of new Set([...start.customers.keys(), ...end.customers.keys()])) {
    const before = start.customers.get(customer) ?? ZERO;
    const after = end.customers.get(customer) ?? ZERO;
    if (isPositive(before)) customersAtStart += 1;
    if (!isPositive(before) && isPositive(after)) {
      const paidBefore = (firstPaying.get(customer) ?? Infinity) < monthStart;
      if (paidBefore) m.reactivated = add(m.reactivated, after);
      else m.new = add(m.new, after);
    } else if (isPositive(before) && !isPositive(after)) {
      m.churned = add(m.churned, before);
      customersChurned += 1;
    } else if (compare(after, before) > 0) {
      m.expansion = add(m.expansion, subtract(after, before));
    } else if (compare(after, before) < 0) {
      m.contraction = add(m.contraction, subtract(before, after));
    }
  }
  const net_new = subtract(add(m.new, m.expansion, m.reactivated), add(m.contraction, m.churned));
  return { ...m, net_new, customersAtStart, customersChurned };
}

async function subscriptionsOf(em: EntityManager, ids: string[]): Promise<Map<string, SubscriptionRow>> {
  const out = new Map<string, SubscriptionRow>();
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const rows = (await em.execute(
      `select s.id as id, s.user_id as uid, s.plan_id as pid, s.quantity as qty, s.discount as dis from subscriptions s where s.id in (${chunk.map(() => '?').join(', ')})`,
      chunk,
      'all',
    )) as { id: string; uid: string; pid: string; qty: unknown; dis: unknown }[];
    for (const r of rows) {
      out.set(String(r.id), { userId: String(r.uid), planId: String(r.pid), quantity: Number(r.qty ?? 1), discount: jsonOf(r.dis) as SubscriptionDiscount | null });
    }
  }
  return out;
}
