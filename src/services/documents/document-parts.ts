import type { Config } from '../../config.js';
import type { CreditNote } from '../../db/entities/credit-note.js';
import type { Invoice } from '../../db/entities/invoice.js';
import type { Payment } from '../../db/entities/payment.js';
import type { User } from '../../db/entities/user.js';
import { isPositive } from '../../domain/money.js';
import type { TaxProfile } from '../../domain/tax-profile.js';
import { currentSellerIdentity, sellerIdentityOf } from '../invoices/seller-tax-identity.js';
import type { DocumentView } from './document-view.js';
import type { Labels } from './labels/labels.js';

/* The blocks every document shares: who sells, who buys, how they paid. */

/**
 * NOTE: a document shows PPN, both parties' tax numbers and the tax lines when its invoice
 * carries PPN, or is taxable (`exclusive`, `inclusive`) and the seller is a PKP: an invoice
 * whose PPN rounds to nothing is still a taxed supply (docs/tax.md).
 */
export function isTaxed(invoice: Pick<Invoice, 'taxAmount' | 'taxBehavior'>, config: Pick<Config, 'tax'>): boolean {
  return isPositive(invoice.taxAmount) || (invoice.taxBehavior !== 'none' && config.tax.pkp);
}

/**
 * The seller's block, from the BILLING_COMPANY_* settings: on a taxed document headed "Penjual"
 * with the PKP's NPWP and NITKU as they stood when the invoice was made (seller-tax-identity.ts),
 * else with the tax number as typed, if any.
 */
export function sellerOf(
  config: Pick<Config, 'documents' | 'tax'>,
  labels: Labels,
  taxed: boolean,
  invoice: Pick<Invoice, 'sellerTaxIdentity'> | null = null,
): DocumentView['seller'] {
  const settings = config.documents;
  const identity = invoice ? sellerIdentityOf(invoice, config) : currentSellerIdentity(config);
  const taxId = taxed ? (identity.npwp ?? settings.taxId) : settings.taxId;
  const lines = [...settings.companyAddress];
  if (taxId) lines.push(`${labels.document.taxId}: ${taxId}`);
  if (taxed && identity.nitku) lines.push(`${labels.document.nitku}: ${identity.nitku}`);
  return { heading: taxed ? labels.document.seller : labels.document.from, name: (taxed && identity.name) || settings.companyName, lines, logoPath: settings.logoPath };
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

/**
 * The buyer of a taxed document, as the tax profile the invoice was issued with names them: a
 * business with its NPWP and NITKU, a person with the NIK. Without a profile, the customer.
 */
export function buyerOf(user: User, details: Record<string, string> | null | undefined, profile: TaxProfile | null, labels: Labels): DocumentView['customer'] {
  const heading = labels.document.buyer;
  if (!profile) return customerOf(user, details, heading);
  const numbers: [string, string | null][] = {
    individual: [[labels.document.nik, profile.nik]] as [string, string | null][],
    business: [
      [labels.document.taxId, profile.npwp],
      [labels.document.nitku, profile.nitku],
    ] as [string, string | null][],
    // Passports and other documents are named in the document's language, with the country.
    foreign: [[`${labels.document.passport}${profile.country ? ` (${profile.country})` : ''}`, profile.passport ?? null]] as [string, string | null][],
    other: [[`${labels.document.otherId}${profile.country ? ` (${profile.country})` : ''}`, profile.document_number ?? null]] as [string, string | null][],
  }[profile.buyer_type];
  const lines = [
    ...profile.address.split(/\r?\n/),
    ...numbers.filter(([, value]) => value).map(([label, value]) => `${label}: ${value}`),
    profile.email ?? details?.email ?? user.email ?? '',
  ].filter((l) => l.trim() !== '');
  return { heading, name: profile.name, lines };
}

/** How a payment was made, with the card's masked number or the virtual account's bank. */
export function paymentMethodOf(payment: Pick<Payment, 'paymentType' | 'paymentDetails'>, labels: Labels): string {
  const details = payment.paymentDetails as Record<string, unknown>;
  const method = labels.paymentMethods[payment.paymentType] ?? payment.paymentType;
  if (payment.paymentType === 'credit_card' && typeof details.masked_card === 'string') return `${method} ${details.masked_card}`;
  if (payment.paymentType === 'bank_transfer' && typeof details.bank === 'string') return `${method}, ${details.bank.toUpperCase()}`;
  return method;
}

/** Where a credit note's money went ("back to GoPay", "ke dompet"), to follow its reason ("Refund"). */
export function creditDestinationOf(note: Pick<CreditNote, 'reason' | 'refund' | 'payment'>, labels: Labels): string {
  // A chargeback's money went back to the card too, taken by its issuer.
  const toGateway = ((note.reason === 'refund' && note.refund?.destination !== 'wallet') || note.reason === 'chargeback') && note.payment;
  return toGateway ? labels.destinations.backTo(paymentMethodOf(note.payment!, labels)) : labels.destinations.toWallet;
}
