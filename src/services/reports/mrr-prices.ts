import type { EntityManager } from '@mikro-orm/knex';
import { fromColumn } from '../../db/bulk-sql.js';
import { InvoiceLine } from '../../db/entities/invoice.js';
import { Notification } from '../../db/entities/notification.js';
import type { Plan } from '../../db/entities/plan.js';
import type { SubscriptionDiscount } from '../../db/entities/subscription.js';
import { toDate } from '../../db/row-fields.js';
import { discountedPrice } from '../../domain/discount.js';
import { multiplyAndRound, subtract, ZERO, type Money } from '../../domain/money.js';
import { taxInvoice } from '../../domain/tax.js';

/*
 * NOTE: what a subscription earned at an instant (docs/reports.md, "MRR"): the plan it was on,
 * its units, its discount, without PPN. No table keeps a subscription's past states, so they are
 * read from two dated records:
 *
 * - the plan-price line of each first, renewal or new-period invoice not voided: the price × units
 *   less the discount as invoiced for the period it bills (never the catalogue's price today);
 * - the in-app `subscription_plan_changed` notifications, one per change applied (plan or units;
 *   a change scheduled for the renewal counts when the renewal applies it), each dated when the
 *   change took effect and naming the plan and the units it left the subscription with.
 *
 * At instant t: the last period invoiced for the plan by t, unless a change took effect after it
 * (an upgrade, seats added or given up in the middle of a period). Then the subscription earns,
 * from that change on, the plan's invoiced unit price × the units the change left, less the
 * discount that covers the plan at t (a running discount goes on counting after an upgrade),
 * without PPN: what its next renewal will bill, counted from the day the change took effect.
 */

export interface SubscriptionRow {
  userId: string;
  planId: string;
  quantity: number;
  discount: SubscriptionDiscount | null;
}

interface PricePoint {
  /** When the price took effect: the start of the period the line billed. */
  at: number;
  /** The plan's name as the line states it; null on lines that do not say. */
  planName: string | null;
  /** The line's amount less its discount, without PPN. */
  price: Money;
  unit: Money;
  quantity: number;
  taxBehavior: string;
  /** Billed by a plan change's invoice (a new period started by the change). */
  ofChange: boolean;
}

interface TermsChange {
  at: number;
  planSlug: string;
  oldPlanName: string | null;
  /** The units the change left; null on notifications written before they said. */
  quantity: number | null;
}

export function jsonOf(raw: unknown): Record<string, unknown> | null {
  if (typeof raw === 'string') {
    try {
      return JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return null;
    }
  }
  return raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>) : null;
}

const lastBy = <T extends { at: number }>(list: T[], at: number): T | undefined => list.filter((x) => x.at <= at).at(-1);

/** Each subscription's plan-price lines, oldest first (see the note above). */
async function pricePoints(em: EntityManager, ids: string[]): Promise<Map<string, PricePoint[]>> {
  const points = new Map<string, PricePoint[]>();
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    if (chunk.length === 0) continue;
    const rows = (await em.execute(
      'select i.subscription_id as sid, i.tax_behavior as tb, i.currency as cur, i.billing_reason as br, i.period_start as ips, i.created_at as ica,' +
        ' l.amount as amt, l.discount_amount as dis, l.unit_amount as unit, l.quantity as qty, l.period_start as lps, l.subject as subj' +
        " from invoice_lines l join invoices i on i.id = l.invoice_id where l.kind = 'subscription' and i.status <> 'void'" +
        ` and i.subscription_id in (${chunk.map(() => '?').join(', ')})`,
      chunk,
      'all',
    )) as Record<string, unknown>[];
    for (const r of rows) {
      // Net of the line's discount: a discounted subscription brings in what it is invoiced, not its list price.
      const amount = subtract(fromColumn(em, InvoiceLine, 'amount', r.amt) as Money, (fromColumn(em, InvoiceLine, 'discountAmount', r.dis) as Money | null) ?? ZERO);
      const taxBehavior = String(r.tb);
      const plan = jsonOf(r.subj)?.['plan'];
      const list = points.get(String(r.sid)) ?? [];
      list.push({
        at: (toDate(r.lps) ?? toDate(r.ips) ?? toDate(r.ica))!.getTime(),
        planName: typeof plan === 'string' ? plan : null,
        price: withoutPpn(amount, taxBehavior, String(r.cur)),
        unit: fromColumn(em, InvoiceLine, 'unitAmount', r.unit) as Money,
        quantity: Number(r.qty),
        taxBehavior,
        ofChange: r.br === 'subscription_update',
      });
      points.set(String(r.sid), list);
    }
  }
  for (const list of points.values()) list.sort((a, b) => a.at - b.at);
  return points;
}

/** An amount as the business earns it: an inclusive price's DPP (as the invoice computes it); any other is already without PPN. */
function withoutPpn(amount: Money, taxBehavior: string, currency: string): Money {
  return taxBehavior === 'inclusive' ? taxInvoice(amount, 'inclusive', currency, true).taxBase : amount;
}

/** Each subscription's applied changes of plan or units, oldest first. */
async function termsChanges(em: EntityManager, subscriptions: Map<string, SubscriptionRow>): Promise<Map<string, TermsChange[]>> {
  const notes = await em.find(Notification, { notificationType: 'subscription_plan_changed', channel: 'in_app' }, { fields: ['data', 'createdAt'], orderBy: { createdAt: 'asc', id: 'asc' } });
  const changes = new Map<string, TermsChange[]>();
  for (const n of notes) {
    const d = n.data;
    // A change scheduled for the renewal names the plan it leaves; the renewal notes it again when it applies.
    if (d.scheduled === true || typeof d.subscription_id !== 'string' || typeof d.plan_slug !== 'string') continue;
    if (!subscriptions.has(d.subscription_id)) continue;
    const effective = d.applied_at_renewal === true && typeof d.current_period_end === 'string' ? new Date(d.current_period_end).getTime() : n.createdAt.getTime();
    const list = changes.get(d.subscription_id) ?? [];
    list.push({
      at: effective,
      planSlug: d.plan_slug,
      oldPlanName: typeof d.old_plan_name === 'string' ? d.old_plan_name : null,
      quantity: typeof d.quantity === 'number' ? d.quantity : null,
    });
    changes.set(d.subscription_id, list);
  }
  for (const list of changes.values()) list.sort((a, b) => a.at - b.at);
  return changes;
}

export interface Terms {
  plan: Plan;
  /** What the subscription earns per billing interval of the plan, without PPN. */
  price: Money;
}

/** The terms of each subscription at an instant (see the note above); undefined when its plan is unknown. */
export async function termsTimeline(
  em: EntityManager,
  plans: Plan[],
  subscriptions: Map<string, SubscriptionRow>,
  pkp: boolean,
): Promise<(subscriptionId: string, at: number) => Terms | undefined> {
  const byId = new Map(plans.map((p) => [p.id, p]));
  const bySlug = new Map(plans.map((p) => [p.slug, p]));
  const byName = new Map<string, Plan>();
  for (const p of plans) if (!byName.has(p.name)) byName.set(p.name, p);
  const ids = [...subscriptions.keys()];
  const [points, changes] = [await pricePoints(em, ids), await termsChanges(em, subscriptions)];

  /** The plan of the last change applied by `at`; before the first, the plan it left (by name); with none, the plan now. */
  const planAt = (list: TermsChange[], current: string, at: number): Plan | undefined => {
    if (list.length === 0) return byId.get(current);
    const applied = lastBy(list, at);
    if (applied) return bySlug.get(applied.planSlug) ?? byId.get(current);
    return (list[0].oldPlanName !== null ? byName.get(list[0].oldPlanName) : undefined) ?? byId.get(current);
  };

  return (subscriptionId, at) => {
    const sub = subscriptions.get(subscriptionId);
    if (!sub) return undefined;
    const list = changes.get(subscriptionId) ?? [];
    const plan = planAt(list, sub.planId, at);
    if (!plan) return undefined;
    const all = points.get(subscriptionId) ?? [];
    const ofPlan = all.filter((p) => p.planName === null || p.planName === plan.name);
    const change = lastBy(list, at);
    const invoiced = lastBy(ofPlan.filter((p) => !p.ofChange), at);
    // The period invoiced last stands unless a change took effect after it.
    if (invoiced && (!change || invoiced.at >= change.at)) return { plan, price: invoiced.price };
    if (!change && !invoiced && ofPlan.length > 0) return { plan, price: ofPlan[0].price };
    // From a change on: the plan's invoiced unit price (else its catalogue price) × the units it left, less the discount covering it.
    const priced = lastBy(ofPlan, at) ?? ofPlan[0];
    const units = !plan.perUnit ? 1 : (change?.quantity ?? lastBy(all, at)?.quantity ?? sub.quantity);
    const amount = multiplyAndRound(priced?.unit ?? plan.price, units, 1, plan.currency);
    const net = discountedPrice(sub.discount, plan, amount, new Date(at));
    return { plan, price: withoutPpn(net, priced?.taxBehavior ?? (pkp ? plan.taxBehavior : 'none'), plan.currency) };
  };
}
