import { CreditNote } from '../../db/entities/credit-note.js';
import { Invoice } from '../../db/entities/invoice.js';
import { Payment, Refund } from '../../db/entities/payment.js';
import { Subscription } from '../../db/entities/subscription.js';
import { Topup } from '../../db/entities/topup.js';
import type { WebhookLog } from '../../db/entities/webhook-log.js';
import type { DataContext } from '../context.js';
import { CREDIT_NOTE_DETAIL_POPULATE } from '../credit-notes/get-credit-note.js';
import { getWebhookLog } from '../gateway-events/list-webhook-logs.js';
import { INVOICE_DETAIL_POPULATE } from '../invoices/get-invoice.js';
import { PAYMENT_POPULATE } from '../payments/find-payment.js';
import { SUBSCRIPTION_POPULATE } from '../subscriptions/find-subscription.js';
import { documentNumber, staffRecord } from './filters.js';

/*
 * Any user's record for support staff, with what its detail view needs (and its user, for
 * support's username). An unknown id, or one that is no UUID, is not found. The find… forms
 * also take the reference a customer quotes: an invoice or credit note number, an order id.
 */

type Ctx = Pick<DataContext, 'em'>;

const INVOICE_POPULATE = [...INVOICE_DETAIL_POPULATE, 'user'];
const CREDIT_NOTE_POPULATE = [...CREDIT_NOTE_DETAIL_POPULATE, 'user'];
const PAYMENT_DETAIL_POPULATE = [...PAYMENT_POPULATE, 'user'];

export async function getStaffSubscription(ctx: Ctx, id: string): Promise<Subscription> {
  return staffRecord(ctx, Subscription, 'Subscription', id, SUBSCRIPTION_POPULATE);
}

/** The invoice with its lines (its credit notes are read by creditNotesOfInvoice). */
export async function getStaffInvoice(ctx: Ctx, id: string): Promise<Invoice> {
  return staffRecord(ctx, Invoice, 'Invoice', id, INVOICE_POPULATE);
}

export async function getStaffPayment(ctx: Ctx, id: string): Promise<Payment> {
  return staffRecord(ctx, Payment, 'Payment', id, PAYMENT_DETAIL_POPULATE);
}

export async function getStaffTopup(ctx: Ctx, id: string): Promise<Topup> {
  return staffRecord(ctx, Topup, 'Top-up', id, ['user']);
}

/** The refund with its payment. */
export async function getStaffRefund(ctx: Ctx, id: string): Promise<Refund> {
  return staffRecord(ctx, Refund, 'Refund', id, ['payment', 'payment.user']);
}

/** The credit note with its lines and invoice. */
export async function getStaffCreditNote(ctx: Ctx, id: string): Promise<CreditNote> {
  return staffRecord(ctx, CreditNote, 'Credit note', id, CREDIT_NOTE_POPULATE);
}

export async function getStaffWebhookLog(ctx: Ctx, id: string): Promise<WebhookLog> {
  return getWebhookLog(ctx, id);
}

/** The payment's refunds, oldest first (every attempt: pending, succeeded and failed). */
export async function refundsOfPayment(ctx: Ctx, payment: Payment): Promise<Refund[]> {
  return ctx.em.find(Refund, { payment }, { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
}

/** An invoice by its id or its number (INV-2026-000042). */
export async function findStaffInvoice(ctx: Ctx, ref: string): Promise<Invoice> {
  return staffRecord(ctx, Invoice, 'Invoice', ref, INVOICE_POPULATE, (n) => ({ number: documentNumber(n) }));
}

/** A credit note by its id or its number (CN-2026-000042). */
export async function findStaffCreditNote(ctx: Ctx, ref: string): Promise<CreditNote> {
  return staffRecord(ctx, CreditNote, 'Credit note', ref, CREDIT_NOTE_POPULATE, (n) => ({ number: documentNumber(n) }));
}

/** A payment by its id or its order id (SUB-…). */
export async function findStaffPayment(ctx: Ctx, ref: string): Promise<Payment> {
  return staffRecord(ctx, Payment, 'Payment', ref, PAYMENT_DETAIL_POPULATE, (orderId) => ({ orderId }));
}
