import { listAuditEvents } from '../../services/audit/list-audit-events.js';
import { creditNotesOfInvoice } from '../../services/credit-notes/list-credit-notes.js';
import { churnReport } from '../../services/reports/churn-report.js';
import { mrrReport } from '../../services/reports/mrr-report.js';
import { revenueReport } from '../../services/reports/revenue-report.js';
import {
  findUserByRef,
  getStaffInvoice,
  getStaffPayment,
  getStaffSubscription,
  listStaffCreditNotes,
  listStaffInvoices,
  listStaffNotifications,
  listStaffPayments,
  listStaffRefunds,
  listStaffSubscriptions,
  listStaffTopups,
  listStaffWebhookLogs,
  paymentStatusCheck,
  refundsOfPayment,
  type StaffListFilters,
} from '../../services/staff-queries/index.js';
import { listWalletTransactions } from '../../services/wallet/list-wallet-transactions.js';
import { readWallet } from '../../services/wallet/wallet-ledger.js';
import { serializeCreditNote } from '../credit-note-serializers.js';
import { ownedRecord, ownersOf, serializeAdminNotification, serializeAdminRefund, serializeAuditEvent, withOwners } from '../admin-serializers.js';
import type { ServiceContext } from '../../services/context.js';
import type { Page, PageRequest } from '../../services/common/pagination.js';
import type { OperationHandlers, OperationId, OperationRequest } from '../operations.js';
import { envelope, pageRequest } from '../pagination.js';
import {
  serializeInvoice,
  serializeInvoiceDetail,
  serializePayment,
  serializeRefund,
  serializeSubscription,
  serializeTopup,
  serializeWallet,
  serializeWalletTransaction,
  serializeWebhookLog,
} from '../serializers.js';

interface ListQuery {
  user?: string;
  status?: string;
  order_id?: string;
  number?: string;
  created_after?: string;
  created_before?: string;
}

/** The staff lists' query (validated by the contract) as the services' filters. */
function staffFilters(q: ListQuery): StaffListFilters {
  return {
    user: q.user,
    status: q.status,
    orderId: q.order_id,
    number: q.number,
    createdAfter: q.created_after ? new Date(q.created_after) : undefined,
    createdBefore: q.created_before ? new Date(q.created_before) : undefined,
  };
}

/** A page of a staff list, each record with its owner, in the list envelope. */
async function ownedPage<T extends { user: { id: string } }, R>(
  req: OperationRequest<OperationId> & { query: ListQuery & { page?: number; page_size?: number } },
  list: (ctx: ServiceContext, filters: StaffListFilters, page: PageRequest) => Promise<Page<T>>,
  serialize: (item: T) => R,
) {
  const page = pageRequest(req.query);
  const found = await list(req.services, staffFilters(req.query), page);
  return { status: 200 as const, body: envelope(req.koa, found, page, await withOwners(req.services.em, found.items, serialize)) };
}

/** Staff reads of every user's records; the gate let only staff in. */
export const adminReadHandlers: OperationHandlers = {
  async adminListSubscriptions(req) {
    return ownedPage(req, listStaffSubscriptions, serializeSubscription);
  },

  async adminGetSubscription(req) {
    const subscription = await getStaffSubscription(req.services, req.path.id);
    return { status: 200, body: await ownedRecord(req.services.em, subscription, serializeSubscription) };
  },

  async adminListInvoices(req) {
    return ownedPage(req, listStaffInvoices, (i) => serializeInvoice(i, req.services.config));
  },

  async adminGetInvoice(req) {
    const invoice = await getStaffInvoice(req.services, req.path.id);
    const notes = await creditNotesOfInvoice(req.services, invoice);
    return { status: 200, body: await ownedRecord(req.services.em, invoice, (i) => serializeInvoiceDetail(i, notes, req.services.config)) };
  },

  async adminListPayments(req) {
    return ownedPage(req, listStaffPayments, serializePayment);
  },

  async adminGetPayment(req) {
    const payment = await getStaffPayment(req.services, req.path.id);
    const refunds = await refundsOfPayment(req.services, payment);
    const gateway = req.query.gateway ? await paymentStatusCheck(req.services, payment) : undefined;
    const body = await ownedRecord(req.services.em, payment, serializePayment);
    return { status: 200, body: { ...body, refunds: refunds.map(serializeRefund), ...(gateway ? { gateway } : {}) } };
  },

  async adminListRefunds(req) {
    const page = pageRequest(req.query);
    const found = await listStaffRefunds(req.services, staffFilters(req.query), page);
    const owner = await ownersOf(req.services.em, found.items.map((r) => r.payment));
    return { status: 200, body: envelope(req.koa, found, page, (r) => serializeAdminRefund(r, r.payment, owner(r.payment))) };
  },

  async adminListCreditNotes(req) {
    return ownedPage(req, listStaffCreditNotes, serializeCreditNote);
  },

  async adminGetWallet(req) {
    const user = await findUserByRef(req.services, req.path.user);
    const page = pageRequest(req.query);
    const wallet = await readWallet(req.services, user);
    const entries = await listWalletTransactions(req.services, user, page);
    return {
      status: 200,
      body: {
        user: { id: user.id, username: user.username },
        wallet: serializeWallet(wallet),
        transactions: envelope(req.koa, entries, page, serializeWalletTransaction),
      },
    };
  },

  async adminListTopups(req) {
    return ownedPage(req, listStaffTopups, serializeTopup);
  },

  async adminListNotifications(req) {
    return ownedPage(req, listStaffNotifications, serializeAdminNotification);
  },

  async adminListWebhookLogs(req) {
    const page = pageRequest(req.query);
    const found = await listStaffWebhookLogs(req.services, staffFilters(req.query), page);
    return { status: 200, body: envelope(req.koa, found, page, serializeWebhookLog) };
  },

  async adminListAuditEvents(req) {
    const page = pageRequest(req.query);
    const { target, actor, since } = req.query;
    const found = await listAuditEvents(req.services, { target, actor, since: since ? new Date(since) : undefined }, page);
    return { status: 200, body: envelope(req.koa, found, page, serializeAuditEvent) };
  },

  async adminRevenueReport(req) {
    return { status: 200, body: await revenueReport(req.services, { from: req.query.from, to: req.query.to }) };
  },

  async adminMrrReport(req) {
    return { status: 200, body: await mrrReport(req.services, { from: req.query.from, to: req.query.to }) };
  },

  async adminChurnReport(req) {
    return { status: 200, body: await churnReport(req.services, { from: req.query.from, to: req.query.to }) };
  },
};
