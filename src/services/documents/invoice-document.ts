import { CreditNote } from '../../db/entities/credit-note.js';
import type { Invoice, InvoiceLine } from '../../db/entities/invoice.js';
import { Payment, Refund } from '../../db/entities/payment.js';
import { add, compare, isZero, subtract, ZERO } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { CREDIT_REASONS, creditDestinationOf, customerOf, paymentMethodOf, sellerOf } from './document-parts.js';
import type { DocumentLine, DocumentSection, DocumentView } from './document-view.js';
import { documentFormat, type DocumentFormat } from './format.js';

/** A payment that brought money in (and may since have been refunded). */
const PAID_STATUSES = ['settled', 'refunded', 'partially_refunded'] as const;

function period(format: DocumentFormat, start: Date | null, end: Date | null): string {
  if (!start || !end) return '';
  return `${format.shortDate(start)} – ${format.shortDate(end)}`;
}

function lineDetail(format: DocumentFormat, line: InvoiceLine): string {
  const span = period(format, line.periodStart, line.periodEnd);
  if (line.kind === 'proration') return span ? `Proration for ${span}` : 'Proration';
  if (line.kind === 'credit') return span ? `Credit for ${span}` : 'Credit';
  return span;
}

function stampOf(invoice: Invoice): DocumentView['stamp'] {
  const refunded = !isZero(invoice.amountRefunded);
  if (invoice.status === 'paid' && refunded) {
    return compare(invoice.amountRefunded, invoice.totalAmount) >= 0 ? { text: 'REFUNDED', tone: 'neutral' } : { text: 'PARTIALLY REFUNDED', tone: 'neutral' };
  }
  if (invoice.status === 'paid') return { text: 'PAID', tone: 'good' };
  if (invoice.status === 'open') return { text: 'DUE', tone: 'warning' };
  if (invoice.status === 'void') return { text: 'VOID', tone: 'neutral' };
  return { text: 'UNCOLLECTIBLE', tone: 'warning' };
}

const STATUS_WORDS: Record<Invoice['status'], string> = { open: 'Open', paid: 'Paid', void: 'Void', uncollectible: 'Uncollectible' };

/**
 * Everything an invoice PDF shows, gathered from the database: seller, customer, dates and
 * period, every line, totals, the payment that paid it, and the refunds against it.
 */
export async function invoiceDocumentView(ctx: Pick<DataContext, 'em' | 'config'>, invoice: Invoice): Promise<DocumentView> {
  const settings = ctx.config.documents;
  const format = documentFormat(settings);
  const money = (amount: string) => format.money(amount, invoice.currency);
  const em = ctx.em;
  await em.populate(invoice, ['lines', 'subscription', 'user']);

  const payments = await em.find(Payment, { invoice, status: { $in: [...PAID_STATUSES] } }, { orderBy: [{ paidAt: 'asc' }, { createdAt: 'asc' }] });
  const payment = payments[0] ?? null;
  const notes = await em.find(CreditNote, { invoice }, { orderBy: [{ issuedAt: 'asc' }, { number: 'asc' }], populate: ['refund', 'payment'] });
  const refunds = await em.find(Refund, { payment: { invoice }, status: 'succeeded' }, { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], populate: ['payment'] });

  const facts: [string, string][] = [
    ['Issue date', format.day(invoice.issueDate)],
    ['Due date', format.day(invoice.dueDate)],
  ];
  if (invoice.paidAt) facts.push(['Paid on', format.date(invoice.paidAt)]);
  const lines = invoice.lines.getItems();
  const periodText =
    period(format, invoice.periodStart, invoice.periodEnd) ||
    period(format, lines.find((l) => l.periodStart)?.periodStart ?? null, [...lines].reverse().find((l) => l.periodEnd)?.periodEnd ?? null);
  if (periodText) facts.push(['Period', periodText]);

  const documentLines: DocumentLine[] = lines.map((line) => ({
    description: line.description,
    detail: lineDetail(format, line),
    quantity: String(line.quantity),
    unitAmount: money(line.unitAmount),
    amount: money(line.amount),
  }));

  const totals: DocumentView['totals'] = [
    { label: 'Subtotal', value: money(invoice.subtotal) },
    { label: 'Total', value: money(invoice.totalAmount), strong: true },
  ];
  if (invoice.status === 'paid') totals.push({ label: 'Amount paid', value: money(invoice.totalAmount) });
  // Refunds are on the invoice already; wallet credits (proration, unusable settlements) only in their credit notes.
  const walletCredits = add(ZERO, ...notes.filter((n) => n.reason !== 'refund').map((n) => n.amount));
  if (!isZero(invoice.amountRefunded)) totals.push({ label: 'Refunded', value: money(`-${invoice.amountRefunded}`) });
  if (!isZero(walletCredits)) totals.push({ label: 'Credited to wallet', value: money(`-${walletCredits}`) });
  if (!isZero(invoice.amountRefunded) || !isZero(walletCredits)) {
    totals.push({ label: 'Net paid', value: money(subtract(subtract(invoice.totalAmount, invoice.amountRefunded), walletCredits)) });
  }
  if (invoice.status === 'open') totals.push({ label: 'Amount due', value: money(invoice.totalAmount) });

  const paymentRows: string[][] = [['Status', STATUS_WORDS[invoice.status]]];
  if (payment) {
    paymentRows.push(['Method', paymentMethodOf(payment)]);
    if (payment.paidAt) paymentRows.push(['Paid at', format.dateTime(payment.paidAt)]);
    paymentRows.push(['Order', payment.orderId]);
    if (payment.transactionId) paymentRows.push(['Transaction', payment.transactionId]);
  } else if (invoice.status === 'open') {
    paymentRows.push(['Pay by', format.day(invoice.dueDate)]);
  }

  // Each credit note documents a refund or a wallet credit; a refund from before credit notes
  // existed has none and is listed by itself.
  const documented = new Set(notes.map((n) => n.refund?.id).filter(Boolean));
  const adjustmentRows = [
    ...notes.map((note) => ({
      at: note.issuedAt,
      row: [format.shortDate(note.issuedAt), `Credit note ${note.number}`, `${CREDIT_REASONS[note.reason]} ${creditDestinationOf(note)}`, money(`-${note.amount}`)],
    })),
    ...refunds
      .filter((refund) => !documented.has(refund.id))
      .map((refund) => ({
        at: refund.createdAt,
        row: [format.shortDate(refund.createdAt), 'Refund', `Refund ${creditDestinationOf({ reason: 'refund', refund, payment: refund.payment })}`, money(`-${refund.amount}`)],
      })),
  ]
    .sort((a, b) => a.at.getTime() - b.at.getTime())
    .map((a) => a.row);
  const sections: DocumentSection[] = [
    { heading: 'Payment', rows: paymentRows },
    { heading: 'Refunds and credit notes', columns: ['Date', 'Document', 'Details', 'Amount'], rows: adjustmentRows },
  ];

  return {
    title: 'Invoice',
    number: invoice.number,
    issuedAt: invoice.createdAt,
    seller: sellerOf(settings),
    customer: customerOf(invoice.user, invoice.subscription?.customerDetails, 'Bill to'),
    facts,
    stamp: stampOf(invoice),
    lines: documentLines,
    totals,
    sections,
    footer: [settings.companyName, `Invoice ${invoice.number}`, `Amounts in ${invoice.currency}`],
  };
}
