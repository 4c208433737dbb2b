import { creditNotePdf } from '../../services/documents/credit-note-pdf.js';
import { invoicePdf } from '../../services/documents/invoice-pdf.js';
import { requireUser, type OperationHandlers } from '../operations.js';

/** A document's file: shown in the browser, saved under its number, never kept by a shared cache. */
function pdfHeaders(filename: string): Record<string, string> {
  return { 'Content-Disposition': `inline; filename="${filename}"`, 'Cache-Control': 'private, no-store' };
}

export const documentHandlers: OperationHandlers = {
  async getInvoicePdf(req) {
    const { filename, pdf } = await invoicePdf(req.services, requireUser(req), req.path.id);
    return { status: 200, body: pdf, contentType: 'application/pdf', headers: pdfHeaders(filename) };
  },

  async getCreditNotePdf(req) {
    const { filename, pdf } = await creditNotePdf(req.services, requireUser(req), req.path.id);
    return { status: 200, body: pdf, contentType: 'application/pdf', headers: pdfHeaders(filename) };
  },
};
