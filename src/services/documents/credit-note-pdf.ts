import type { CreditNote } from '../../db/entities/credit-note.js';
import type { User } from '../../db/entities/user.js';
import type { DataContext } from '../context.js';
import { getCreditNote } from '../credit-notes/get-credit-note.js';
import { creditNoteDocumentView } from './credit-note-document.js';
import { renderInProcess, type RenderPdf } from './document-renderer.js';
import type { PdfFile } from './invoice-pdf.js';

/** One of the user's credit notes as a PDF; another user's credit note is not found. */
export async function creditNotePdf(ctx: Pick<DataContext, 'em' | 'config'>, user: User, id: string, render?: RenderPdf): Promise<PdfFile> {
  return renderCreditNotePdf(ctx, await getCreditNote(ctx, user, id), render);
}

/** A credit note's PDF, named for its number; `render` is the server's worker pool, else this thread. */
export async function renderCreditNotePdf(ctx: Pick<DataContext, 'em' | 'config'>, note: CreditNote, render: RenderPdf = renderInProcess): Promise<PdfFile> {
  return { filename: `${note.number}.pdf`, pdf: await render(await creditNoteDocumentView(ctx, note)) };
}
