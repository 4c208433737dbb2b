import { creditNotePdf } from '../../services/documents/credit-note-pdf.js';
import type { DocumentRenderer } from '../../services/documents/document-renderer.js';
import { invoicePdf, type PdfFile } from '../../services/documents/invoice-pdf.js';
import { requireUser, type OperationHandlers } from '../operations.js';

/** A document's file: shown in the browser, saved under its number, never kept by a shared cache. */
function pdfAnswer({ filename, pdf }: PdfFile) {
  return {
    status: 200 as const,
    body: pdf,
    contentType: 'application/pdf' as const,
    headers: { 'Content-Disposition': `inline; filename="${filename}"`, 'Cache-Control': 'private, no-store' },
  };
}

/** Rendered by the server's worker pool; a user's burst was refused before it got here (src/http/document-burst-limit.ts). */
export function documentHandlers(documents: DocumentRenderer): OperationHandlers {
  return {
    async getInvoicePdf(req) {
      return pdfAnswer(await invoicePdf(req.services, requireUser(req), req.path.id, documents.render));
    },

    async getCreditNotePdf(req) {
      return pdfAnswer(await creditNotePdf(req.services, requireUser(req), req.path.id, documents.render));
    },
  };
}
