import { creditNotesOfInvoice } from '../../services/credit-notes/list-credit-notes.js';
import { getInvoice } from '../../services/invoices/get-invoice.js';
import { listInvoices } from '../../services/invoices/list-invoices.js';
import { requireUser, type OperationHandlers } from '../operations.js';
import { envelope, pageRequest } from '../pagination.js';
import { serializeInvoice, serializeInvoiceDetail } from '../serializers.js';

export const invoiceHandlers: OperationHandlers = {
  async listInvoices(req) {
    const page = pageRequest(req.query);
    const { status, ordering } = req.query;
    const result = await listInvoices(req.services, requireUser(req), { status, ordering }, page);
    return { status: 200, body: envelope(req.koa, result, page, (i) => serializeInvoice(i, req.services.config)) };
  },

  async getInvoice(req) {
    const invoice = await getInvoice(req.services, requireUser(req), req.path.id);
    return { status: 200, body: serializeInvoiceDetail(invoice, await creditNotesOfInvoice(req.services, invoice), req.services.config) };
  },
};
