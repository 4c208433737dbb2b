import { Invoice } from '../../db/entities/invoice.js';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';
import { getInvoice } from '../invoices/get-invoice.js';
import { invoiceDocumentView } from './invoice-document.js';
import { renderDocumentPdf } from './template.js';

export interface PdfFile {
  filename: string;
  pdf: Buffer;
}

/** An invoice's PDF, named for its number. */
export async function renderInvoicePdf(ctx: Pick<DataContext, 'em' | 'config'>, invoice: Invoice): Promise<PdfFile> {
  return { filename: `${invoice.number}.pdf`, pdf: await renderDocumentPdf(await invoiceDocumentView(ctx, invoice)) };
}

/** One of the user's invoices as a PDF; another user's invoice is not found. */
export async function invoicePdf(ctx: Pick<DataContext, 'em' | 'config'>, user: User, id: string): Promise<PdfFile> {
  return renderInvoicePdf(ctx, await getInvoice(ctx, user, id));
}

/** Any invoice as a PDF, by its number (INV-2026-000042): for support staff (billing-admin). */
export async function invoicePdfByNumber(ctx: Pick<DataContext, 'em' | 'config'>, number: string): Promise<PdfFile> {
  const invoice = await ctx.em.findOne(Invoice, { number: number.trim().toUpperCase() });
  if (!invoice) throw new NotFoundError('Invoice');
  return renderInvoicePdf(ctx, invoice);
}
