import type { TaxBehavior } from '../../domain/tax.js';
import type { TaxProfile } from '../../domain/tax-profile.js';
import { Collection, EntitySchema } from '@mikro-orm/core';
import { createdAtProperty, idProperty, moneyProperty, updatedAtProperty, zeroMoneyProperty } from './common.js';
import { Subscription } from './subscription.js';
import { User } from './user.js';

export type InvoiceStatus = 'open' | 'paid' | 'void' | 'uncollectible';
export type InvoiceLineKind = 'subscription' | 'proration' | 'credit' | 'usage';
/**
 * Why the invoice exists (as Stripe's billing_reason): paying a `subscription_create` invoice
 * starts the first period, a `subscription_cycle` invoice advances to its own period, and a
 * `subscription_update` (proration) invoice leaves the period alone.
 */
export type BillingReason = 'subscription_create' | 'subscription_cycle' | 'subscription_update';

/** The seller as it stood when the invoice was made: later changes of configuration never reprint it. */
export interface SellerTaxIdentity {
  npwp: string | null;
  nitku: string | null;
  name: string | null;
}

/**
 * What an invoice or credit-note line is, stored as data so that its words are rendered in the
 * document's language at rendering time (`description` keeps the English text for old readers).
 */
export interface LineSubject {
  type: string;
  [key: string]: string | number | boolean | null;
}

export class Invoice {
  id!: string;
  /** Sequential and gap-free per year, e.g. INV-2026-000042 (src/services/invoices/next-invoice-number.ts). */
  number!: string;
  user!: User;
  subscription: Subscription | null = null;
  status: InvoiceStatus = 'open';
  billingReason: BillingReason = 'subscription_create';
  currency!: string;
  /** YYYY-MM-DD */
  issueDate!: string;
  /** YYYY-MM-DD */
  dueDate!: string;
  paidAt: Date | null = null;
  /** When it was marked uncollectible (dunning gave up), by the service's clock: the write-off's date. */
  uncollectibleAt: Date | null = null;
  /** The lines' amounts before discounts. */
  subtotal!: string;
  /** What discounts took off the subtotal (the sum of the lines' discount_amount); PPN is on what is left. */
  discountAmount!: string;
  totalAmount!: string;
  amountRefunded!: string;
  /** PPN (src/domain/tax.ts): all "0.00" and behaviour `none` on an untaxed invoice. */
  taxBehavior: TaxBehavior = 'none';
  taxRate!: string;
  /** DPP */
  taxBase!: string;
  /** DPP Nilai Lain */
  otherTaxBase!: string;
  taxAmount!: string;
  /** Inclusive prices: the rupiah by which DPP + PPN misses the price. */
  taxRounding!: string;
  /** The buyer's tax profile when the invoice was issued. */
  buyerTaxProfile: TaxProfile | null = null;
  /** The seller's NPWP, NITKU and name when the invoice was made; null on invoices made before it was kept. */
  sellerTaxIdentity: SellerTaxIdentity | null = null;
  /** The Faktur Pajak number Coretax assigned (billing-admin tax record). */
  taxInvoiceNumber: string | null = null;
  /** When `billing-admin tax export` first wrote the invoice into an import file. */
  taxExportedAt: Date | null = null;
  periodStart: Date | null = null;
  periodEnd: Date | null = null;
  /** Dunning: how many collection attempts were made after the due date. */
  retryCount = 0;
  nextRetryAt: Date | null = null;
  lines = new Collection<InvoiceLine>(this);
  createdAt!: Date;
  updatedAt!: Date;
}

export class InvoiceLine {
  id!: string;
  invoice!: Invoice;
  position = 0;
  description!: string;
  subject: LineSubject | null = null;
  kind: InvoiceLineKind = 'subscription';
  quantity = 1;
  unitAmount!: string;
  /** unitAmount × quantity, before the discount. */
  amount!: string;
  /** What the subscription's discount took off this line (never more than its amount). */
  discountAmount!: string;
  periodStart: Date | null = null;
  periodEnd: Date | null = null;
}

export const InvoiceSchema = new EntitySchema<Invoice>({
  class: Invoice,
  tableName: 'invoices',
  indexes: [{ properties: ['user', 'issueDate'] }, { properties: ['status', 'paidAt'] }, { properties: ['status', 'dueDate'] }, { properties: ['status', 'nextRetryAt'] }],
  // NOTE: the database refuses a second invoice for the same period of a subscription (billing
  // runs in parallel, a run repeated after a crash). NULL periods (first and proration invoices
  // without a period) never collide.
  uniques: [{ name: 'invoices_subscription_period_unique', properties: ['subscription', 'billingReason', 'periodStart'] }],
  properties: {
    id: idProperty,
    number: { type: 'string', length: 30, unique: true },
    user: { kind: 'm:1', entity: () => User },
    subscription: { kind: 'm:1', entity: () => Subscription, nullable: true },
    status: { type: 'string', length: 20 },
    billingReason: { type: 'string', length: 30 },
    currency: { type: 'string', length: 3 },
    issueDate: { type: 'string', length: 10 },
    dueDate: { type: 'string', length: 10 },
    paidAt: { type: 'Date', nullable: true },
    uncollectibleAt: { type: 'Date', nullable: true },
    subtotal: moneyProperty,
    discountAmount: zeroMoneyProperty,
    totalAmount: moneyProperty,
    amountRefunded: zeroMoneyProperty,
    taxBehavior: { type: 'string', length: 10, default: 'none' },
    taxRate: zeroMoneyProperty,
    taxBase: zeroMoneyProperty,
    otherTaxBase: zeroMoneyProperty,
    taxAmount: zeroMoneyProperty,
    taxRounding: zeroMoneyProperty,
    buyerTaxProfile: { type: 'json', nullable: true },
    sellerTaxIdentity: { type: 'json', nullable: true },
    taxInvoiceNumber: { type: 'string', length: 17, nullable: true },
    taxExportedAt: { type: 'Date', nullable: true },
    periodStart: { type: 'Date', nullable: true },
    periodEnd: { type: 'Date', nullable: true },
    retryCount: { type: 'integer', default: 0 },
    nextRetryAt: { type: 'Date', nullable: true },
    lines: { kind: '1:m', entity: () => InvoiceLine, mappedBy: 'invoice', orderBy: { position: 'asc' } },
    createdAt: createdAtProperty,
    updatedAt: updatedAtProperty,
  },
});

export const InvoiceLineSchema = new EntitySchema<InvoiceLine>({
  class: InvoiceLine,
  tableName: 'invoice_lines',
  properties: {
    id: idProperty,
    invoice: { kind: 'm:1', entity: () => Invoice },
    position: { type: 'integer' },
    description: { type: 'string', length: 500 },
    subject: { type: 'json', nullable: true },
    kind: { type: 'string', length: 20 },
    quantity: { type: 'integer' },
    unitAmount: moneyProperty,
    amount: moneyProperty,
    discountAmount: zeroMoneyProperty,
    periodStart: { type: 'Date', nullable: true },
    periodEnd: { type: 'Date', nullable: true },
  },
});

/** Named counters incremented inside a transaction (gap-free invoice numbers). */
export class Counter {
  name!: string;
  value = 0;
}

export const CounterSchema = new EntitySchema<Counter>({
  class: Counter,
  tableName: 'counters',
  properties: {
    name: { type: 'string', length: 50, primary: true },
    value: { type: 'integer' },
  },
});
