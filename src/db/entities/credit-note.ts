import { Collection, EntitySchema, type Opt } from '@mikro-orm/core';
import { createdAtProperty, idProperty, moneyProperty, zeroMoneyProperty } from './common.js';
import type { TaxAction } from '../../domain/tax.js';
import { Invoice, type LineSubject } from './invoice.js';
import { Payment, Refund } from './payment.js';
import { User } from './user.js';
import { WalletTransaction } from './wallet.js';

/**
 * Why money went back against an invoice: a refund (to the card, the bank or the wallet), the
 * unused time a plan change credited to the wallet, a settlement nobody could use credited
 * to the wallet, or a partial chargeback the card's issuer took back.
 */
export type CreditNoteReason = 'refund' | 'proration_credit' | 'unusable_settlement' | 'period_passed' | 'chargeback';

/**
 * The document of money given back against an invoice (issue 20). Issued only by
 * src/services/credit-notes/issue-credit-note.ts, never changed afterwards; the sum of an
 * invoice's credit notes never exceeds what was paid on it.
 */
export class CreditNote {
  id!: string;
  /** Sequential and gap-free per year, e.g. CN-2026-000042 (src/services/invoices/next-invoice-number.ts). */
  number!: string;
  user!: User;
  invoice!: Invoice;
  /** The payment whose money goes back. */
  payment: Payment | null = null;
  /** The refund it documents (a refund made in the gateway's dashboard without a key has none). */
  refund: Refund | null = null;
  /** The wallet credit it documents (proration credits, unusable settlements). */
  walletTransaction: WalletTransaction | null = null;
  reason!: CreditNoteReason;
  /** Free text: the refund's reason, or why a settlement could not be used. */
  memo: string | null = null;
  currency!: string;
  amount!: string;
  /** The PPN this note takes off its invoice's faktur (src/domain/tax.ts, creditNoteTax; docs/tax.md). */
  taxAmount!: string;
  /** The DPP this credit note takes off its invoice. */
  taxBase!: Opt<string>;
  /** At most one rupiah: amount = taxBase + taxAmount + taxRounding. */
  taxRounding!: Opt<string>;
  /** What the finance team must do in Coretax (docs/tax.md). */
  taxAction: TaxAction = 'none';
  issuedAt!: Date;
  lines = new Collection<CreditNoteLine>(this);
  createdAt!: Date;
}

export class CreditNoteLine {
  id!: string;
  creditNote!: CreditNote;
  position = 0;
  description!: string;
  subject: LineSubject | null = null;
  amount!: string;
}

export const CreditNoteSchema = new EntitySchema<CreditNote>({
  class: CreditNote,
  tableName: 'credit_notes',
  indexes: [{ properties: ['user', 'issuedAt'] }, { properties: ['invoice'] }, { properties: ['payment'] }, { properties: ['refund'] }],
  // NOTE: a wallet credit is documented once per payment it gave back (a proration credit may
  // draw on several payments); refunds are guarded by their running total instead.
  uniques: [{ name: 'credit_notes_wallet_transaction_payment_unique', properties: ['walletTransaction', 'payment'] }],
  properties: {
    id: idProperty,
    number: { type: 'string', length: 30, unique: true },
    user: { kind: 'm:1', entity: () => User },
    invoice: { kind: 'm:1', entity: () => Invoice },
    payment: { kind: 'm:1', entity: () => Payment, nullable: true },
    refund: { kind: 'm:1', entity: () => Refund, nullable: true, deleteRule: 'set null' },
    walletTransaction: { kind: 'm:1', entity: () => WalletTransaction, nullable: true },
    reason: { type: 'string', length: 30 },
    memo: { type: 'string', length: 500, nullable: true },
    currency: { type: 'string', length: 3 },
    amount: moneyProperty,
    taxAmount: zeroMoneyProperty,
    taxBase: zeroMoneyProperty,
    taxRounding: zeroMoneyProperty,
    taxAction: { type: 'string', length: 30, default: 'none' },
    issuedAt: { type: 'Date' },
    lines: { kind: '1:m', entity: () => CreditNoteLine, mappedBy: 'creditNote', orderBy: { position: 'asc' } },
    createdAt: createdAtProperty,
  },
});

export const CreditNoteLineSchema = new EntitySchema<CreditNoteLine>({
  class: CreditNoteLine,
  tableName: 'credit_note_lines',
  properties: {
    id: idProperty,
    creditNote: { kind: 'm:1', entity: () => CreditNote },
    position: { type: 'integer' },
    description: { type: 'string', length: 500 },
    subject: { type: 'json', nullable: true },
    amount: moneyProperty,
  },
});
