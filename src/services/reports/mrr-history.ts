import type { EntityManager } from '@mikro-orm/knex';
import { isPostgres } from '../../db/dialect.js';
import { fromColumn } from '../../db/bulk-sql.js';
import { InvoiceLine } from '../../db/entities/invoice.js';
import { Notification } from '../../db/entities/notification.js';
import { Plan } from '../../db/entities/plan.js';
import { toDate } from '../../db/row-fields.js';
import { add, compare, isPositive, multiplyAndRound, subtract, ZERO, type Money } from '../../domain/money.js';
import { taxInvoice } from '../../domain/tax.js';
import type { DataContext } from '../context.js';
import { reportMonths, type ReportHeader, type ReportMonth, type ReportRange } from './report-months.js';

/*
 * NOTE: MRR is rebuilt from what each subscription paid for, because no table keeps a
 * subscription's past states (docs/reports.md, "MRR"). A subscription is paying at instant t
 * when a period fund of positive amount covers t (period-funds.ts: each settled payment funds
 * the span it bought; a plan change, a pause, a refund and a chargeback close the rows at their
 * moment, so the rows say when service was paid for), or when it is past due: its renewal
 * invoice for a period covering t is open or uncollectible and it had not ended by t. A trial
 * (no payment), a paused span (its funds moved past the pause) and time after the end are not
 * paying. Its amount is the price it was invoiced at for the plan it was on at t (× its
 * quantity, less its discount, without PPN),
 * normalised to a month; the plan at t comes from the in-app `subscription_plan_changed`
 * notifications, the one dated record of a plan change (a scheduled change applied at renewal
 * takes effect at the period it starts). The catalogue's price today is used only where no
 * invoice of the subscription ever priced that plan (invoicedPrices).
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

interface Span {
  subscriptionId: string;
  start: number;
  end: number;
}

interface SubscriptionRow {
  userId: string;
  planId: string;
}

interface PlanChange {
  at: number;
  planSlug: string;
  oldPlanName: string | null;
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
  const subscriptions = await subscriptionsOf(em, [...new Set(spans.map((s) => s.subscriptionId))]);
  const planAt = await planTimeline(em, plans, subscriptions);
  const invoicedAt = await invoicedPrices(em, [...subscriptions.keys()]);
  const firstPaying = await firstPayingByCustomer(em);

  // Which instants each subscription pays at (a set: spans of one subscription may overlap).
  const paying = new Map<string, Set<number>>();
  for (const span of spans) {
    for (let i = 0; i < instants.length; i += 1) {
      if (instants[i] < span.start || instants[i] >= span.end) continue;
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
      const plan = planAt(subscriptionId, sub.planId, instants[i]);
      if (!plan || plan.currency !== currency) continue;
      const amount = monthlyPrice({ ...plan, price: invoicedAt(subscriptionId, plan, instants[i]) ?? plan.price });
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

function bound(em: EntityManager, at: number): unknown {
  return isPostgres(em) ? new Date(at) : at;
}

/** Fund rows of positive amount overlapping [first, last] (period-funds.ts). */
async function fundSpans(em: EntityManager, first: number, last: number): Promise<Span[]> {
  const rows = (await em.execute(
    'select f.subscription_id as sid, f.period_start as ps, f.period_end as pe from period_funds f where f.amount > 0 and f.period_end > ? and f.period_start <= ?',
    [bound(em, first), bound(em, last)],
    'all',
  )) as { sid: string; ps: unknown; pe: unknown }[];
  return rows.map((r) => ({ subscriptionId: String(r.sid), start: toDate(r.ps)!.getTime(), end: toDate(r.pe)!.getTime() }));
}

/**
 * Past due: a renewal (or first) invoice still open, or left uncollectible when dunning gave up,
 * covers its period until the subscription ended (canceled_at). A plan change's invoice
 * (subscription_update) buys no period of its own.
 */
async function pastDueSpans(em: EntityManager, first: number, last: number): Promise<Span[]> {
  const rows = (await em.execute(
    'select i.subscription_id as sid, i.period_start as ps, i.period_end as pe, s.canceled_at as ca from invoices i join subscriptions s on s.id = i.subscription_id' +
      " where i.status in ('open', 'uncollectible') and i.billing_reason <> 'subscription_update' and i.period_start is not null and i.period_end is not null" +
      ' and i.period_end > ? and i.period_start <= ?',
    [bound(em, first), bound(em, last)],
    'all',
  )) as { sid: string; ps: unknown; pe: unknown; ca: unknown }[];
  return rows.map((r) => {
    const end = toDate(r.pe)!.getTime();
    const canceled = toDate(r.ca)?.getTime() ?? Infinity;
    return { subscriptionId: String(r.sid), start: toDate(r.ps)!.getTime(), end: Math.min(end, canceled) };
  });
}

async function subscriptionsOf(em: EntityManager, ids: string[]): Promise<Map<string, SubscriptionRow>> {
  const out = new Map<string, SubscriptionRow>();
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const rows = (await em.execute(
      `select s.id as id, s.user_id as uid, s.plan_id as pid from subscriptions s where s.id in (${chunk.map(() => '?').join(', ')})`,
      chunk,
      'all',
    )) as { id: string; uid: string; pid: string }[];
    for (const r of rows) out.set(String(r.id), { userId: String(r.uid), planId: String(r.pid) });
  }
  return out;
}

/** When each customer first paid for anything (the earliest fund row or past-due period), for new versus reactivated. */
async function firstPayingByCustomer(em: EntityManager): Promise<Map<string, number>> {
  const rows = (await em.execute(
    'select s.user_id as uid, min(f.period_start) as first from period_funds f join subscriptions s on s.id = f.subscription_id where f.amount > 0 group by s.user_id' +
      ' union all ' +
      "select s.user_id as uid, min(i.period_start) as first from invoices i join subscriptions s on s.id = i.subscription_id where i.status in ('open', 'uncollectible')" +
      " and i.billing_reason <> 'subscription_update' and i.period_start is not null group by s.user_id",
    [],
    'all',
  )) as { uid: string; first: unknown }[];
  const out = new Map<string, number>();
  for (const r of rows) {
    const at = toDate(r.first)?.getTime();
    if (at === undefined) continue;
    out.set(String(r.uid), Math.min(at, out.get(String(r.uid)) ?? Infinity));
  }
  return out;
}

interface PricePoint {
  /** When the price took effect: the start of the period the line billed. */
  at: number;
  /** The plan's name as the line states it; null on lines that do not say. */
  planName: string | null;
  /** The line's amount without PPN. */
  price: Money;
}

function subjectOf(raw: unknown): Record<string, unknown> | null {
  if (typeof raw === 'string') {
    try {
      return JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return null;
    }
  }
  return raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>) : null;
}

/**
 * NOTE: what each subscription was priced at (docs/reports.md, "MRR"): every plan-price line
 * (`kind` subscription: a first, renewal or new-period invoice) of its invoices not voided, at
 * the start of the period it billed, net of its discount (docs/pricing.md: the line's amount is
 * price × quantity before the discount, so a discount that has ended stops reducing the MRR at
 * the first period billed without it), without PPN (an inclusive price's DPP as the invoice
 * computes it; an exclusive price is already without it). At an instant, the subscription's
 * price for the plan it is on is that of the last such line for that plan by then; before the
 * first (a plan changed mid-period and invoiced in full only at its renewal), the first one
 * after; with none at all, null (the caller falls back to the catalogue's price).
 */
async function invoicedPrices(em: EntityManager, ids: string[]): Promise<(subscriptionId: string, plan: Plan, at: number) => Money | null> {
  const points = new Map<string, PricePoint[]>();
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    if (chunk.length === 0) continue;
    const rows = (await em.execute(
      'select i.subscription_id as sid, i.tax_behavior as tb, i.currency as cur, i.period_start as ips, i.created_at as ica, l.amount as amt, l.discount_amount as dis, l.period_start as lps, l.subject as subj' +
        " from invoice_lines l join invoices i on i.id = l.invoice_id where l.kind = 'subscription' and i.status <> 'void'" +
        ` and i.subscription_id in (${chunk.map(() => '?').join(', ')})`,
      chunk,
      'all',
    )) as { sid: string; tb: string; cur: string; ips: unknown; ica: unknown; amt: unknown; dis: unknown; lps: unknown; subj: unknown }[];
    for (const r of rows) {
      // Net of the line's discount: a discounted subscription brings in what it is invoiced, not its list price.
      const amount = subtract(fromColumn(em, InvoiceLine, 'amount', r.amt) as Money, (fromColumn(em, InvoiceLine, 'discountAmount', r.dis) as Money | null) ?? ZERO);
      const price = r.tb === 'inclusive' ? taxInvoice(amount, 'inclusive', String(r.cur), true).taxBase : amount;
      const at = (toDate(r.lps) ?? toDate(r.ips) ?? toDate(r.ica))!.getTime();
      const plan = subjectOf(r.subj)?.['plan'];
      const list = points.get(String(r.sid)) ?? [];
      list.push({ at, planName: typeof plan === 'string' ? plan : null, price });
      points.set(String(r.sid), list);
    }
  }
  for (const list of points.values()) list.sort((a, b) => a.at - b.at);
  return (subscriptionId, plan, at) => {
    const list = (points.get(subscriptionId) ?? []).filter((p) => p.planName === null || p.planName === plan.name);
    let found: PricePoint | null = null;
    for (const p of list) if (p.at <= at) found = p;
    return (found ?? list[0])?.price ?? null;
  };
}

/**
 * The plan a subscription was on at an instant: the plan of the last change applied by then;
 * before its first change, the plan that change left (by name); with no change, its plan now.
 */
async function planTimeline(
  em: EntityManager,
  plans: Plan[],
  subscriptions: Map<string, SubscriptionRow>,
): Promise<(subscriptionId: string, currentPlanId: string, at: number) => Plan | undefined> {
  const byId = new Map(plans.map((p) => [p.id, p]));
  const bySlug = new Map(plans.map((p) => [p.slug, p]));
  const byName = new Map<string, Plan>();
  for (const p of plans) if (!byName.has(p.name)) byName.set(p.name, p);

  const notes = await em.find(Notification, { notificationType: 'subscription_plan_changed', channel: 'in_app' }, { fields: ['data', 'createdAt'], orderBy: { createdAt: 'asc', id: 'asc' } });
  const changes = new Map<string, PlanChange[]>();
  for (const n of notes) {
    const d = n.data;
    // A change scheduled for the renewal names the plan it leaves; the renewal notes it again when it applies.
    if (d.scheduled === true || typeof d.subscription_id !== 'string' || typeof d.plan_slug !== 'string') continue;
    if (!subscriptions.has(d.subscription_id)) continue;
    const effective = d.applied_at_renewal === true && typeof d.current_period_end === 'string' ? new Date(d.current_period_end).getTime() : n.createdAt.getTime();
    const list = changes.get(d.subscription_id) ?? [];
    list.push({ at: effective, planSlug: d.plan_slug, oldPlanName: typeof d.old_plan_name === 'string' ? d.old_plan_name : null });
    changes.set(d.subscription_id, list);
  }
  for (const list of changes.values()) list.sort((a, b) => a.at - b.at);

  return (subscriptionId, currentPlanId, at) => {
    const list = changes.get(subscriptionId);
    if (!list || list.length === 0) return byId.get(currentPlanId);
    let applied: PlanChange | null = null;
    for (const change of list) if (change.at <= at) applied = change;
    if (applied) return bySlug.get(applied.planSlug) ?? byId.get(currentPlanId);
    return (list[0].oldPlanName !== null ? byName.get(list[0].oldPlanName) : undefined) ?? byId.get(currentPlanId);
  };
}
