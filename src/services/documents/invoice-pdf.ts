import { Invoice } from '../../db/entities/invoice.js';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';
import { getInvoice } from '../invoices/get-invoice.js';
import { renderInProcess, type RenderPdf } from './document-renderer.js';
import { invoiceDocumentView } from './invoice-document.js';

export interface PdfFile {
  filename: string;
  pdf: Buffer;
}

/** An invoice's PDF, named for its number; `render` is the server's worker pool, else this thread. */
export async function renderInvoicePdf(ctx: Pick<DataContext, 'em' | 'config'>, invoice: Invoice, render: RenderPdf = renderInProcess): Promise<PdfFile> {
  return { filename: `${invoice.number}.pdf`, pdf: await render(await invoiceDocumentView(ctx, invoice)) };
}

/** One of the user's invoices as a PDF; another user's invoice is not found. */
export async function invoicePdf(ctx: Pick<DataContext, 'em' | 'config'>, user: User, id: string, render?: RenderPdf): Promise<PdfFile> {
  return renderInvoicePdf(ctx, await getInvoice(ctx, user, id), render);
}

/** Any invoice as a PDF, by its number (INV-2026-000042): for support staff (billing-admin). */
export async function invoicePdfByNumber(ctx: Pick<DataContext, 'em' | 'config'>, number: string, render?: RenderPdf): Promise<PdfFile> {
  const invoice = await ctx.em.findOne(Invoice, { number: number.trim().toUpperCase() });
  if (!invoice) throw new NotFoundError('Invoice');
  return renderInvoicePdf(ctx, invoice, render);
}
