import type { CreditNote } from '../../db/entities/credit-note.js';
import type { DataContext } from '../context.js';
import { CREDIT_REASONS, creditDestinationOf, customerOf, sellerOf } from './document-parts.js';
import type { DocumentView } from './document-view.js';
import { documentFormat } from './format.js';

/**
 * Everything a credit-note PDF shows: seller, customer, the invoice it credits, why, where the
 * money went, its lines and the total credited.
 */
export async function creditNoteDocumentView(ctx: Pick<DataContext, 'em' | 'config'>, note: CreditNote): Promise<DocumentView> {
  const settings = ctx.config.documents;
  const format = documentFormat(settings);
  const money = (amount: string) => format.money(amount, note.currency);
  await ctx.em.populate(note, ['lines', 'invoice.subscription', 'user', 'payment', 'refund']);
  const invoice = note.invoice;
  const destination = creditDestinationOf(note);

  const details: string[][] = [
    ['Reason', CREDIT_REASONS[note.reason]],
    ['Credited', destination.charAt(0).toUpperCase() + destination.slice(1)],
  ];
  if (note.memo) details.push(['Note', note.memo]);
  if (note.payment) details.push(['Original payment', note.payment.orderId]);
  if (note.refund) details.push(['Refund reference', note.refund.refundKey]);

  return {
    title: 'Credit note',
    number: note.number,
    issuedAt: note.issuedAt,
    seller: sellerOf(settings),
    customer: customerOf(note.user, invoice.subscription?.customerDetails, 'Credited to'),
    facts: [
      ['Issue date', format.date(note.issuedAt)],
      ['Invoice', invoice.number],
      ['Invoice date', format.day(invoice.issueDate)],
    ],
    stamp: { text: note.reason === 'refund' && note.refund?.destination !== 'wallet' ? 'REFUNDED' : 'CREDITED', tone: 'neutral' },
    lines: note.lines.getItems().map((line) => ({
      description: line.description,
      detail: '',
      quantity: '',
      unitAmount: '',
      amount: money(line.amount),
    })),
    totals: [
      { label: 'Invoice total', value: money(invoice.totalAmount) },
      { label: 'Total credited', value: money(note.amount), strong: true },
    ],
    sections: [{ heading: 'Details', rows: details }],
    footer: [settings.companyName, `Credit note ${note.number}`, `Amounts in ${note.currency}`],
  };
}
