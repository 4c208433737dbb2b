import { CreditNote } from '../../db/entities/credit-note.js';
import type { Notification } from '../../db/entities/notification.js';
import { Payment } from '../../db/entities/payment.js';
import type { DataContext } from '../context.js';
import { renderCreditNotePdf } from './credit-note-pdf.js';
import type { RenderPdf } from './document-renderer.js';
import { renderInvoicePdf, type PdfFile } from './invoice-pdf.js';

/**
 * The document a receipt carries: the paid invoice with `payment_succeeded`, the refund's
 * credit note (else the invoice) with `payment_refunded`. Emails attach `render()`; webhook
 * events carry `links`, paths relative to the API root (GET them as the customer).
 */
export interface ReceiptDocument {
  links: { invoice_pdf: string; credit_note_pdf?: string };
  render(): Promise<PdfFile>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const invoicePdfPath = (id: string): string => `/invoices/${id}/pdf/`;
export const creditNotePdfPath = (id: string): string => `/credit-notes/${id}/pdf/`;

/**
 * Looked up when the entry is delivered, not stored with the event, so that the event data the
 * payload builders write stays as it is. Null for every other event, and for payments of nothing
 * invoiced (top-ups).
 */
export async function receiptDocumentFor(
  ctx: Pick<DataContext, 'em' | 'config'>,
  entry: Pick<Notification, 'notificationType' | 'data'>,
  render?: RenderPdf,
): Promise<ReceiptDocument | null> {
  if (entry.notificationType !== 'payment_succeeded' && entry.notificationType !== 'payment_refunded') return null;
  const paymentId = entry.data?.payment_id;
  // Hand-written or old event data may hold anything; PostgreSQL refuses a malformed uuid.
  if (typeof paymentId !== 'string' || !UUID.test(paymentId)) return null;
  const em = ctx.em.fork();
  const payment = await em.findOne(Payment, paymentId, { populate: ['invoice'] });
  const invoice = payment?.invoice;
  if (!payment || !invoice) return null;
  const view = { em, config: ctx.config };
  const renderInvoice = () => renderInvoicePdf(view, invoice, render);
  if (entry.notificationType === 'payment_succeeded') return { links: { invoice_pdf: invoicePdfPath(invoice.id) }, render: renderInvoice };

  const note = await em.findOne(CreditNote, { payment, reason: 'refund' }, { orderBy: [{ issuedAt: 'desc' }, { number: 'desc' }] });
  if (!note) return { links: { invoice_pdf: invoicePdfPath(invoice.id) }, render: renderInvoice };
  return {
    links: { invoice_pdf: invoicePdfPath(invoice.id), credit_note_pdf: creditNotePdfPath(note.id) },
    render: () => renderCreditNotePdf(view, note, render),
  };
}
