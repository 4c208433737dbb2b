import type { DocumentSettings } from '../../config.js';
import type { CreditNote, CreditNoteReason } from '../../db/entities/credit-note.js';
import type { Payment } from '../../db/entities/payment.js';
import type { User } from '../../db/entities/user.js';
import { PAYMENT_METHOD_NAMES } from '../../domain/payment-method-names.js';
import type { DocumentView } from './document-view.js';

/* The blocks every document shares: who sells, who buys, how they paid. */

/** The seller's block, from the BILLING_COMPANY_* settings. */
export function sellerOf(settings: DocumentSettings): DocumentView['seller'] {
  return {
    name: settings.companyName,
    lines: [...settings.companyAddress, ...(settings.taxId ? [`Tax ID: ${settings.taxId}`] : [])],
    logoPath: settings.logoPath,
  };
}

/** The customer as the subscription's customer_details name them, else as the user's profile does. */
export function customerOf(user: User, details: Record<string, string> | null | undefined, heading: string): DocumentView['customer'] {
  const given = details ?? {};
  const first = given.first_name ?? user.firstName ?? '';
  const last = given.last_name ?? user.lastName ?? '';
  const name = `${first} ${last}`.trim() || user.username;
  const lines = [given.email ?? user.email ?? '', given.phone ?? user.phone ?? ''].filter((l) => l.trim() !== '');
  return { heading, name, lines };
}

/** How a payment was made, with the card's masked number or the virtual account's bank. */
export function paymentMethodOf(payment: Pick<Payment, 'paymentType' | 'paymentDetails'>): string {
  const details = payment.paymentDetails as Record<string, unknown>;
  const method = PAYMENT_METHOD_NAMES[payment.paymentType] ?? payment.paymentType;
  if (payment.paymentType === 'credit_card' && typeof details.masked_card === 'string') return `${method} ${details.masked_card}`;
  if (payment.paymentType === 'bank_transfer' && typeof details.bank === 'string') return `${method}, ${details.bank.toUpperCase()}`;
  return method;
}

export const CREDIT_REASONS: Record<CreditNoteReason, string> = {
  refund: 'Refund',
  proration_credit: 'Proration credit',
  unusable_settlement: 'Payment that could not be used',
  period_passed: 'Paid after its period had ended',
  chargeback: 'Chargeback',
};

/** Where a credit note's money went ("back to GoPay", "to the wallet"), to follow a word like "Refund". */
export function creditDestinationOf(note: Pick<CreditNote, 'reason' | 'refund' | 'payment'>): string {
  // A chargeback's money went back to the card too, taken by its issuer.
  const toGateway = ((note.reason === 'refund' && note.refund?.destination !== 'wallet') || note.reason === 'chargeback') && note.payment;
  return toGateway ? `back to ${paymentMethodOf(note.payment!)}` : 'to the wallet';
}
