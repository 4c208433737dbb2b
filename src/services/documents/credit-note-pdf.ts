import type { CreditNote } from '../../db/entities/credit-note.js';
import type { User } from '../../db/entities/user.js';
import type { DataContext } from '../context.js';
import { getCreditNote } from '../credit-notes/get-credit-note.js';
import { creditNoteDocumentView } from './credit-note-document.js';
import type { PdfFile } from './invoice-pdf.js';
import { renderDocumentPdf } from './template.js';

/** One of the user's credit notes as a PDF; another user's credit note is not found. */
export async function creditNotePdf(ctx: Pick<DataContext, 'em' | 'config'>, user: User, id: string): Promise<PdfFile> {
  return renderCreditNotePdf(ctx, await getCreditNote(ctx, user, id));
}

/** A credit note's PDF, named for its number. */
export async function renderCreditNotePdf(ctx: Pick<DataContext, 'em' | 'config'>, note: CreditNote): Promise<PdfFile> {
  return { filename: `${note.number}.pdf`, pdf: await renderDocumentPdf(await creditNoteDocumentView(ctx, note)) };
}
