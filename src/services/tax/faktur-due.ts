import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { isPostgres } from '../../db/dialect.js';
import { Invoice } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import { ZERO } from '../../domain/money.js';
import { isInMonth, searchWindow, type TaxMonth } from './tax-month.js';

/*
 * NOTE: a faktur is due when the money is received (docs/tax.md, "Which invoices a month
 * holds"): the instant its first payment settled, whatever happened to that payment since. A
 * chargeback or a refund takes money back that was received, so the faktur stays due on that
 * payment's date; a payment the gateway reversed (a deny or cancel after settlement) brought no
 * money, unless the invoice's faktur had already been written on it (then the faktur stands, and
 * the export of its month writes it again with --again). This one rule decides the month of
 * every faktur for `tax export` and whether `tax record` may hold a number.
 */

type DuePayment = Pick<Payment, 'paidAt' | 'reversedAt'>;

/**
 * When `invoice`'s faktur is due: the earliest settlement among `payments` that brought money
 * (or on which the faktur was already exported), else the invoice's own payment date if it is
 * paid without a payment row (nothing to collect). Null: no money has been received for it.
 */
export function fakturDueAt(invoice: Pick<Invoice, 'status' | 'paidAt' | 'taxExportedAt'>, payments: DuePayment[]): Date | null {
  const exportedAt = invoice.taxExportedAt;
  const received = payments
    .filter((p) => p.paidAt !== null)
    // A reversal after the faktur was exported leaves it standing on that payment.
    .filter((p) => p.reversedAt === null || (exportedAt !== null && p.reversedAt > exportedAt))
    .map((p) => p.paidAt!);
  if (invoice.status === 'paid' && invoice.paidAt) received.push(invoice.paidAt);
  if (received.length === 0) return null;
  return received.reduce((a, b) => (b < a ? b : a));
}

/** Each invoice's settled payments (paid_at set), by invoice id. */
export async function settledPaymentsOf(em: EntityManager, invoiceIds: string[]): Promise<Map<string, DuePayment[]>> {
  const byInvoice = new Map<string, DuePayment[]>();
  for (let start = 0; start < invoiceIds.length; start += 1000) {
    const rows = await em.find(Payment, { invoice: { $in: invoiceIds.slice(start, start + 1000) }, paidAt: { $ne: null } }, { fields: ['invoice', 'paidAt', 'reversedAt'] });
    for (const p of rows) byInvoice.set(p.invoice!.id, [...(byInvoice.get(p.invoice!.id) ?? []), p]);
  }
  return byInvoice;
}

/** Whether a faktur is due for `invoice` now (money was received for it). */
export async function isFakturDue(em: EntityManager, invoice: Invoice): Promise<boolean> {
  return fakturDueAt(invoice, (await settledPaymentsOf(em, [invoice.id])).get(invoice.id) ?? []) !== null;
}

export interface DueInvoice {
  invoice: Invoice;
  dueAt: Date;
}

/**
 * The taxable invoices (a DPP above zero) whose faktur falls due in `month` (BILLING_TIMEZONE),
 * by when it fell due, then number; only those not yet exported unless `again`. Locked on
 * PostgreSQL against a second export at once.
 */
export async function invoicesDueIn(em: EntityManager, month: TaxMonth, timeZone: string, again: boolean): Promise<DueInvoice[]> {
  const { from, to } = searchWindow(month);
  const near = { $gte: from, $lt: to };
  // Any payment that settled near the month, whatever its status now: the database narrows, fakturDueAt decides.
  const settledNear = em.createQueryBuilder(Payment, 'p').select('p.invoice_id').where({ paidAt: near, invoice: { $ne: null } });
  const qb = em.createQueryBuilder(Invoice, 'i').select('*').where({
    taxBehavior: { $ne: 'none' },
    taxBase: { $gt: ZERO },
    ...(again ? {} : { taxExportedAt: null }),
    $or: [{ status: 'paid', paidAt: near }, { id: { $in: settledNear.getKnexQuery() } }],
  });
  if (isPostgres(em)) qb.setLockMode(LockMode.PESSIMISTIC_WRITE);
  const invoices = await qb.getResult();
  const payments = await settledPaymentsOf(em, invoices.map((i) => i.id));
  return invoices
    .map((invoice) => ({ invoice, dueAt: fakturDueAt(invoice, payments.get(invoice.id) ?? []) }))
    .filter((d): d is DueInvoice => d.dueAt !== null && isInMonth(d.dueAt, month, timeZone))
    .sort((a, b) => a.dueAt.getTime() - b.dueAt.getTime() || a.invoice.number.localeCompare(b.invoice.number));
}
