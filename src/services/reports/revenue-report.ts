import type { EntityManager } from '@mikro-orm/knex';
import { isPostgres } from '../../db/dialect.js';
import { Notification } from '../../db/entities/notification.js';
import { Payment } from '../../db/entities/payment.js';
import { Topup } from '../../db/entities/topup.js';
import { WalletTransaction } from '../../db/entities/wallet.js';
import { fromColumn } from '../../db/bulk-sql.js';
import { add, isPositive, isZero, money, subtract, ZERO, type Money } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { monthIndexOf, reportMonths, type ReportHeader, type ReportMonth, type ReportRange } from './report-months.js';

/*
 * NOTE: revenue here is cash the gateway moved (docs/reports.md): what it collected from
 * customers (subscription payments and wallet top-ups), less what it paid back to them (refunds
 * to the card or account) and what card issuers took back (chargebacks). Money that only moved
 * inside the wallet is not cash: a renewal paid from the wallet, a refund to the wallet. A
 * payment or top-up the gateway reversed (deny or cancel after settlement) never counts, nor do
 * its refunds. Each figure falls in the month, in BILLING_TIMEZONE, of its own moment.
 */

export interface RevenueFigures {
  collected: Money;
  refunded: Money;
  charged_back: Money;
  /** collected − refunded − charged_back */
  net: Money;
}

export interface RevenueByMethod extends RevenueFigures {
  /** The payment's method (bank_transfer, echannel, qris, gopay, shopeepay, credit_card…). */
  payment_type: string;
}

export interface RevenueRow extends RevenueFigures {
  /** YYYY-MM */
  month: string;
  /** Methods with any money in the month, by name; [] when none. */
  by_method: RevenueByMethod[];
}

export interface RevenueReport extends ReportHeader {
  rows: RevenueRow[];
}

type Figure = 'collected' | 'refunded' | 'charged_back';

/** Payment statuses whose settlement stood: collected (their refunds and chargebacks count separately). */
const COLLECTED_PAYMENT_STATUSES = ['settled', 'partially_refunded', 'refunded', 'charged_back'];
const COLLECTED_TOPUP_STATUSES = ['success', 'charged_back'];
/** The references of the wallet debits of a top-up refunded at the gateway (refund-topup-at-gateway.ts). */
const TOPUP_REFUND_REFERENCE = 'gateway-refund:';

class Totals {
  private readonly cells = new Map<string, Money>();
  add(month: number, method: string, figure: Figure, amount: Money): void {
    if (month < 0 || isZero(amount)) return;
    const key = `${month}|${method}|${figure}`;
    this.cells.set(key, add(this.cells.get(key) ?? ZERO, amount));
  }
  get(month: number, method: string, figure: Figure): Money {
    return this.cells.get(`${month}|${method}|${figure}`) ?? ZERO;
  }
  methods(month: number): string[] {
    const names = new Set<string>();
    for (const key of this.cells.keys()) {
      const [m, method] = key.split('|');
      if (Number(m) === month) names.add(method);
    }
    return [...names].sort();
  }
}

/**
 * `case when col < ? then 0 when col < ? then 1 … end`: the month index of a date column, so
 * that the database sums per month in BILLING_TIMEZONE without knowing time zones (SQLite does not).
 */
function monthBucket(em: EntityManager, column: string, months: ReportMonth[]): { sql: string; params: unknown[] } {
  const param = (d: Date) => (isPostgres(em) ? d : d.getTime());
  return {
    sql: `case ${months.map((_, i) => `when ${column} < ? then ${i}`).join(' ')} end`,
    params: months.map((m) => param(m.end)),
  };
}

function rangeParams(em: EntityManager, months: ReportMonth[]): unknown[] {
  const first = months[0].start;
  const last = months[months.length - 1].end;
  return isPostgres(em) ? [first, last] : [first.getTime(), last.getTime()];
}

interface SumRow {
  bucket: number | string;
  method: string;
  amount: unknown;
}

async function sumByMonth(em: EntityManager, sql: (bucket: string) => string, column: string, params: unknown[], months: ReportMonth[]): Promise<SumRow[]> {
  const bucket = monthBucket(em, column, months);
  return (await em.execute(sql(bucket.sql), [...bucket.params, ...params], 'all')) as SumRow[];
}

/**
 * Collected, refunded, charged back and net per month in BILLING_TIMEZONE and per payment
 * method, over the gateway's money (docs/reports.md, "Revenue"). Sums are taken by the database
 * per month and method; refunds and chargebacks of top-ups, and chargebacks, which are rare,
 * are read row by row.
 */
export async function revenueReport(ctx: DataContext, range: ReportRange): Promise<RevenueReport> {
  const timezone = ctx.config.documents.timeZone;
  const currency = ctx.config.walletCurrency;
  const months = reportMonths(range, timezone);
  const em = ctx.em.fork();
  const totals = new Totals();
  const within = rangeParams(em, months);
  const list = (values: readonly string[]) => values.map((v) => `'${v}'`).join(', ');

  // Payments and top-ups alike: what the gateway settled, by the month of its settlement.
  const collectedFrom = [
    { table: 'payments', amount: 'gross_amount', statuses: COLLECTED_PAYMENT_STATUSES, only: " and x.payment_type <> 'wallet'", entity: Payment, property: 'grossAmount' },
    { table: 'topups', amount: 'amount', statuses: COLLECTED_TOPUP_STATUSES, only: '', entity: Topup, property: 'amount' },
  ] as const;
  for (const source of collectedFrom) {
    const rows = await sumByMonth(
      em,
      (bucket) =>
        `select ${bucket} as bucket, x.payment_type as method, sum(x.${source.amount}) as amount from ${source.table} x` +
        ` where x.paid_at >= ? and x.paid_at < ? and x.currency = ? and x.status in (${list(source.statuses)})${source.only}` +
        ` group by 1, 2`,
      'x.paid_at',
      [...within, currency],
      months,
    );
    for (const r of rows) totals.add(Number(r.bucket), r.method, 'collected', fromColumn(em, source.entity, source.property, r.amount) as Money);
  }

  // NOTE: a refund has no time of acceptance of its own; it falls in the month it was recorded
  // (ours: when staff or the customer asked and the gateway answered, in the same request).
  const refunds = await sumByMonth(
    em,
    (bucket) =>
      `select ${bucket} as bucket, p.payment_type as method, sum(r.amount) as amount from refunds r join payments p on p.id = r.payment_id` +
      ` where r.created_at >= ? and r.created_at < ? and p.currency = ? and r.status = 'succeeded' and r.destination = 'gateway'` +
      ` and p.payment_type <> 'wallet' and p.status <> 'reversed'` +
      ` group by 1, 2`,
    'r.created_at',
    [...within, currency],
    months,
  );
  for (const r of refunds) totals.add(Number(r.bucket), r.method, 'refunded', fromColumn(em, Payment, 'grossAmount', r.amount) as Money);

  await addTopupRefunds(em, months, currency, totals);
  await addChargebacks(em, months, currency, totals);

  return {
    from: months[0].label,
    to: months[months.length - 1].label,
    timezone,
    currency,
    rows: months.map((m, i) => {
      const by_method = totals.methods(i).map((payment_type) => ({ payment_type, ...figures(totals, i, payment_type) }));
      const sum = (f: Figure) => add(ZERO, ...by_method.map((b) => b[f]));
      const collected = sum('collected');
      const refunded = sum('refunded');
      const charged_back = sum('charged_back');
      return { month: m.label, collected, refunded, charged_back, net: subtract(subtract(collected, refunded), charged_back), by_method };
    }),
  };
}

function figures(totals: Totals, month: number, method: string): RevenueFigures {
  const collected = totals.get(month, method, 'collected');
  const refunded = totals.get(month, method, 'refunded');
  const charged_back = totals.get(month, method, 'charged_back');
  return { collected, refunded, charged_back, net: subtract(subtract(collected, refunded), charged_back) };
}

/** A top-up has no refund rows: each refund at the gateway debits the wallet once, dated then (refund-topup-at-gateway.ts). */
async function addTopupRefunds(em: EntityManager, months: ReportMonth[], currency: string, totals: Totals): Promise<void> {
  const debits = await em.find(
    WalletTransaction,
    { source: 'topup', kind: 'debit', referenceId: { $like: `${TOPUP_REFUND_REFERENCE}%` }, createdAt: { $gte: months[0].start, $lt: months[months.length - 1].end } },
    { fields: ['amount', 'referenceId', 'createdAt'] },
  );
  if (debits.length === 0) return;
  const topupIdOf = (d: Pick<WalletTransaction, 'referenceId'>) => (d.referenceId ?? '').slice(TOPUP_REFUND_REFERENCE.length).split(':')[0];
  const topups = new Map(
    (await em.find(Topup, { id: { $in: [...new Set(debits.map(topupIdOf))] } }, { fields: ['paymentType', 'status', 'currency'] })).map((t) => [t.id, t]),
  );
  for (const d of debits) {
    const topup = topups.get(topupIdOf(d));
    if (!topup || topup.currency !== currency || topup.status === 'reversed') continue;
    totals.add(monthIndexOf(months, d.createdAt), topup.paymentType, 'refunded', d.amount);
  }
}

/**
 * NOTE: neither a payment nor a top-up keeps the time of its chargeback; the dated record
 * written in the same transaction as every chargeback, partial or full, is the customer's
 * in-app `payment_charged_back` notification (apply-chargeback.ts, reverse-payment.ts), which
 * carries the total charged back so far. Each one counts what its total adds to the totals
 * before it, in the month it was written.
 */
async function addChargebacks(em: EntityManager, months: ReportMonth[], currency: string, totals: Totals): Promise<void> {
  const notes = await em.find(
    Notification,
    { notificationType: 'payment_charged_back', channel: 'in_app', createdAt: { $lt: months[months.length - 1].end } },
    { fields: ['data', 'createdAt'], orderBy: { createdAt: 'asc', id: 'asc' } },
  );
  if (notes.length === 0) return;
  const idOf = (n: Pick<Notification, 'data'>) => ({ payment: text(n.data.payment_id), topup: text(n.data.topup_id) });
  const paymentIds = [...new Set(notes.map((n) => idOf(n).payment).filter((id): id is string => id !== null))];
  const topupIds = [...new Set(notes.map((n) => idOf(n).topup).filter((id): id is string => id !== null))];
  const payments = new Map((await em.find(Payment, { id: { $in: paymentIds } }, { fields: ['paymentType', 'status', 'currency'] })).map((p) => [p.id, p]));
  const topups = new Map((await em.find(Topup, { id: { $in: topupIds } }, { fields: ['paymentType', 'status', 'currency'] })).map((t) => [t.id, t]));
  const before = new Map<string, Money>();
  for (const n of notes) {
    const { payment: paymentId, topup: topupId } = idOf(n);
    const source = paymentId ? payments.get(paymentId) : topupId ? topups.get(topupId) : undefined;
    const total = text(n.data.chargeback_amount);
    if (!source || total === null || !/^\d+(\.\d+)?$/.test(total) || source.currency !== currency || source.status === 'reversed') continue;
    const key = paymentId ?? `topup:${topupId}`;
    const earlier = before.get(key) ?? ZERO;
    const more = subtract(money(total), earlier);
    if (!isPositive(more)) continue;
    before.set(key, money(total));
    totals.add(monthIndexOf(months, n.createdAt), source.paymentType, 'charged_back', more);
  }
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}
