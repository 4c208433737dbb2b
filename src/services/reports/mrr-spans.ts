import type { EntityManager } from '@mikro-orm/knex';
import { isPostgres } from '../../db/dialect.js';
import { toDate } from '../../db/row-fields.js';

/*
 * NOTE: when each subscription was paying (docs/reports.md, "MRR"), read from what it paid for.
 * A subscription pays at instant t when a period fund of positive amount covers t (each settled
 * payment funds the span it bought; a plan change, a pause, a refund and a chargeback close the
 * rows at their moment), or when it is past due: its renewal invoice for a period covering t is
 * open or uncollectible and it had not ended by t.
 *
 * Money the gateway took back is not earned: a payment charged back in full or reversed funds
 * nothing, and the period it paid for (the span of its invoice's plan lines) counts nothing at
 * all, whatever else funded or was owed in it, unless the invoice was paid again since. Its
 * invoice, open again, does not make the subscription past due for that period either. The
 * business never had that money; counting its subscription as paying (even as past due) would
 * show revenue that is not there.
 */

export interface Span {
  subscriptionId: string;
  start: number;
  end: number;
}

/** Statuses of a payment whose money the gateway took back in full. */
const TAKEN_BACK = "('reversed', 'charged_back')";

/** An invoice one of whose payments was taken back (`i` is the invoice's alias). */
const WAS_TAKEN_BACK = `exists (select 1 from payments tb where tb.invoice_id = i.id and tb.status in ${TAKEN_BACK})`;
const NOT_TAKEN_BACK = `not ${WAS_TAKEN_BACK}`;

function bound(em: EntityManager, at: number): unknown {
  return isPostgres(em) ? new Date(at) : at;
}

type Row = { sid: string; ps: unknown; pe: unknown };
const toSpan = (r: Row): Span => ({ subscriptionId: String(r.sid), start: toDate(r.ps)!.getTime(), end: toDate(r.pe)!.getTime() });

/** Fund rows of positive amount overlapping [first, last], of payments whose money stands (period-funds.ts). */
export async function fundSpans(em: EntityManager, first: number, last: number): Promise<Span[]> {
  const rows = (await em.execute(
    'select f.subscription_id as sid, f.period_start as ps, f.period_end as pe from period_funds f join payments p on p.id = f.payment_id' +
      ` where f.amount > 0 and p.status not in ${TAKEN_BACK} and f.period_end > ? and f.period_start <= ?`,
    [bound(em, first), bound(em, last)],
    'all',
  )) as Row[];
  return rows.map(toSpan);
}

/**
 * Past due: a renewal (or first) invoice still open, or left uncollectible when dunning gave up,
 * covers its period until the subscription ended (canceled_at). A plan change's invoice
 * (subscription_update) buys no period of its own; an invoice open again because its money was
 * taken back is no debt the business counts on (takenBackSpans).
 */
export async function pastDueSpans(em: EntityManager, first: number, last: number): Promise<Span[]> {
  const rows = (await em.execute(
    'select i.subscription_id as sid, i.period_start as ps, i.period_end as pe, s.canceled_at as ca from invoices i join subscriptions s on s.id = i.subscription_id' +
      " where i.status in ('open', 'uncollectible') and i.billing_reason <> 'subscription_update' and i.period_start is not null and i.period_end is not null" +
      ` and i.period_end > ? and i.period_start <= ? and ${NOT_TAKEN_BACK}`,
    [bound(em, first), bound(em, last)],
    'all',
  )) as (Row & { ca: unknown })[];
  return rows.map((r) => {
    const span = toSpan(r);
    return { ...span, end: Math.min(span.end, toDate(r.ca)?.getTime() ?? Infinity) };
  });
}

/**
 * The periods whose money the gateway took back: for each first or renewal invoice not paid
 * (again) whose payment was charged back in full or reversed, the span its plan lines billed
 * (a first invoice states its period on its line only), overlapping [first, last].
 */
export async function takenBackSpans(em: EntityManager, first: number, last: number): Promise<Span[]> {
  const rows = (await em.execute(
    'select i.subscription_id as sid, min(coalesce(l.period_start, i.period_start)) as ps, max(coalesce(l.period_end, i.period_end)) as pe' +
      " from invoices i join invoice_lines l on l.invoice_id = i.id and l.kind = 'subscription'" +
      ` where i.subscription_id is not null and i.status <> 'paid' and i.billing_reason <> 'subscription_update' and ${WAS_TAKEN_BACK}` +
      ' group by i.id, i.subscription_id',
    [],
    'all',
  )) as Row[];
  return rows
    .filter((r) => toDate(r.ps) && toDate(r.pe))
    .map(toSpan)
    .filter((s) => s.end > first && s.start <= last);
}

/**
 * When each customer first paid for anything (the earliest fund row or past-due period, counted
 * as the spans above count them), for new versus reactivated.
 */
export async function firstPayingByCustomer(em: EntityManager): Promise<Map<string, number>> {
  const rows = (await em.execute(
    'select s.user_id as uid, min(f.period_start) as first from period_funds f join subscriptions s on s.id = f.subscription_id join payments p on p.id = f.payment_id' +
      ` where f.amount > 0 and p.status not in ${TAKEN_BACK} group by s.user_id` +
      ' union all ' +
      "select s.user_id as uid, min(i.period_start) as first from invoices i join subscriptions s on s.id = i.subscription_id where i.status in ('open', 'uncollectible')" +
      ` and i.billing_reason <> 'subscription_update' and i.period_start is not null and ${NOT_TAKEN_BACK} group by s.user_id`,
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
