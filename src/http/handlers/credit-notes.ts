import { getCreditNote } from '../../services/credit-notes/get-credit-note.js';
import { listCreditNotes } from '../../services/credit-notes/list-credit-notes.js';
import { serializeCreditNote, serializeCreditNoteDetail } from '../credit-note-serializers.js';
import { requireUser, type OperationHandlers } from '../operations.js';
import { envelope, pageRequest } from '../pagination.js';

export const creditNoteHandlers: OperationHandlers = {
  async listCreditNotes(req) {
    const page = pageRequest(req.query);
    const result = await listCreditNotes(req.services, { user: requireUser(req), invoiceId: req.query.invoice_id }, page);
    return { status: 200, body: envelope(req.koa, result, page, serializeCreditNote) };
  },

  async getCreditNote(req) {
    return { status: 200, body: serializeCreditNoteDetail(await getCreditNote(req.services, requireUser(req), req.path.id)) };
  },
};
