import type { CreditNote, CreditNoteLine } from '../db/entities/credit-note.js';
import type { Schemas } from './operations.js';

/*
 * The wire shape of credit notes (the API and `billing-admin credit-notes list --json`), kept
 * apart from serializers.ts so the documents of issue 20 change in one place.
 */

/** A credit note; its invoice must be loaded (for the invoice number). */
export function serializeCreditNote(n: CreditNote): Schemas['CreditNote'] {
  return {
    id: n.id,
    number: n.number,
    invoice_id: n.invoice.id,
    invoice_number: n.invoice.number,
    payment_id: n.payment?.id ?? null,
    refund_id: n.refund?.id ?? null,
    wallet_transaction_id: n.walletTransaction?.id ?? null,
    reason: n.reason,
    memo: n.memo,
    currency: n.currency,
    amount: n.amount,
    tax_base: n.taxBase,
    tax_amount: n.taxAmount,
    tax_rounding: n.taxRounding,
    tax_action: n.taxAction,
    issued_at: n.issuedAt.toISOString(),
  };
}

export function serializeCreditNoteLine(l: CreditNoteLine): Schemas['CreditNoteLine'] {
  return { description: l.description, amount: l.amount };
}

/** The detail view: the credit note and its lines (lines and invoice must be loaded). */
export function serializeCreditNoteDetail(n: CreditNote): Schemas['CreditNoteDetail'] {
  return { ...serializeCreditNote(n), lines: n.lines.getItems().map(serializeCreditNoteLine) };
}

/** A credit note as its invoice lists it. */
export function serializeInvoiceCreditNote(n: CreditNote): Schemas['InvoiceCreditNote'] {
  return { id: n.id, number: n.number, amount: n.amount, reason: n.reason, issued_at: n.issuedAt.toISOString() };
}
