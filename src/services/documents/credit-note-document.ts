import type { CreditNote } from '../../db/entities/credit-note.js';
import type { DataContext } from '../context.js';
import { buyerOf, creditDestinationOf, customerOf, isTaxed, sellerOf } from './document-parts.js';
import type { DocumentView } from './document-view.js';
import { localisation } from './labels/localisation.js';
import { lineWordsFor } from './line-words.js';
import { isZero } from '../../domain/money.js';

/**
 * Everything a credit-note PDF shows, in BILLING_LOCALE and BILLING_TIMEZONE: seller, customer,
 * the invoice it credits, why, where the money went, its lines and the total credited; on a
 * taxed invoice the parties' tax numbers, the invoice's Faktur Pajak number once recorded and
 * the PPN part of the credit.
 */
export async function creditNoteDocumentView(ctx: Pick<DataContext, 'em' | 'config'>, note: CreditNote): Promise<DocumentView> {
  const settings = ctx.config.documents;
  const { labels, format } = localisation(settings);
  const t = labels.creditNote;
  const money = (amount: string) => format.money(amount, note.currency);
  await ctx.em.populate(note, ['lines', 'invoice.subscription', 'user', 'payment', 'refund']);
  const invoice = note.invoice;
  const taxed = isTaxed(invoice, ctx.config);
  const destination = creditDestinationOf(note, labels);
  const words = lineWordsFor(settings);

  const details: string[][] = [
    [t.details.reason, labels.creditReasons[note.reason]],
    [t.details.credited, destination.charAt(0).toUpperCase() + destination.slice(1)],
  ];
  if (note.memo) details.push([t.details.note, note.memo]);
  if (note.payment) details.push([t.details.originalPayment, note.payment.orderId]);
  if (note.refund) details.push([t.details.refundReference, note.refund.refundKey]);

  const facts: [string, string][] = [
    [t.facts.issueDate, format.date(note.issuedAt)],
    [t.facts.invoice, invoice.number],
    [t.facts.invoiceDate, format.day(invoice.issueDate)],
  ];
  if (taxed && invoice.taxInvoiceNumber) facts.push([t.facts.taxInvoiceNumber, invoice.taxInvoiceNumber]);

  const totals: DocumentView['totals'] = [
    { label: t.totals.invoiceTotal, value: money(invoice.totalAmount) },
    { label: t.totals.totalCredited, value: money(note.amount), strong: true },
  ];
  // A note that takes DPP off the faktur shows how much, and any rupiah its split misses (docs/tax.md).
  if (taxed && !isZero(note.taxBase)) totals.push({ label: labels.invoice.totals.taxBase, value: money(note.taxBase) });
  if (taxed) totals.push({ label: t.totals.taxIncluded, value: money(note.taxAmount) });
  if (taxed && !isZero(note.taxRounding)) totals.push({ label: labels.invoice.totals.rounding, value: money(note.taxRounding) });

  const customerDetails = invoice.subscription?.customerDetails;
  return {
    title: t.title,
    number: note.number,
    issuedAt: note.issuedAt,
    seller: sellerOf(ctx.config, labels, taxed, invoice),
    customer: taxed ? buyerOf(note.user, customerDetails, invoice.buyerTaxProfile, labels) : customerOf(note.user, customerDetails, t.creditedTo),
    facts,
    stamp: { text: note.reason === 'refund' && note.refund?.destination !== 'wallet' ? t.stamps.refunded : t.stamps.credited, tone: 'neutral' },
    lines: note.lines.getItems().map((line) => ({
      description: words.line(line, note.currency),
      detail: '',
      quantity: '',
      unitAmount: '',
      amount: money(line.amount),
    })),
    totals,
    sections: [{ heading: t.details.heading, rows: details }],
    footer: [settings.companyName, `${t.title} ${note.number}`, labels.document.amountsIn(note.currency)],
    layout: { columns: labels.document.columns, page: labels.document.page },
  };
}
