import { Invoice, InvoiceLine, type BillingReason, type InvoiceLineKind, type LineSubject, type SellerTaxIdentity } from '../../db/entities/invoice.js';
import type { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { localDate } from '../../domain/billing-calendar.js';
import type { SubscriptionDiscount } from '../../db/entities/subscription.js';
import { lineDiscounts } from '../../domain/discount.js';
import { add, money, multiplyAndRound, subtract } from '../../domain/money.js';
import { taxInvoice, type InvoiceTax, type TaxBehavior } from '../../domain/tax.js';
import type { Config } from '../../config.js';
import type { DataContext } from '../context.js';
import { nextInvoiceNumber } from './next-invoice-number.js';
import { currentSellerIdentity } from './seller-tax-identity.js';

export interface InvoiceLineInput {
  /** The English words of the line, kept for readers that do not render `subject`. */
  description: string;
  /** What the line is ({type: 'remaining_time', plan: 'Pro'}), rendered in the document's language (documents/line-words.ts). */
  subject?: LineSubject | null;
  kind: InvoiceLineKind;
  quantity?: number;
  unitAmount: string;
  periodStart?: Date | null;
  periodEnd?: Date | null;
  /** The invoice's `discount` applies to this line (a subscription's own price, never a credit). */
  discounted?: boolean;
}

export interface CreateInvoiceInput {
  user: User;
  subscription: Subscription | null;
  currency: string;
  billingReason: BillingReason;
  lines: InvoiceLineInput[];
  issuedAt: Date;
  dueAt: Date;
  /** How PPN applies: the plan's (charged only when the seller is a PKP). */
  taxBehavior: TaxBehavior;
  /** The service period the invoice pays for (renewals advance the subscription to it). */
  periodStart?: Date | null;
  periodEnd?: Date | null;
  /** The subscription's discount when it covers this invoice (src/domain/discount.ts, discountCovers). */
  discount?: SubscriptionDiscount | null;
}

/** The amounts of an invoice: each line's, their sum, and the PPN on it (src/domain/tax.ts). */
export interface InvoicePricing {
  /** Each line's unit amount × quantity, before its discount. */
  amounts: string[];
  discounts: string[];
  subtotal: string;
  discountAmount: string;
  tax: InvoiceTax;
  /** The seller as it stands now, frozen on the invoice. */
  seller: SellerTaxIdentity;
}

/** The one pricing of an invoice's lines, for the invoices made one by one and the billing run's batch. */
export function priceInvoice(config: Pick<Config, 'tax' | 'documents'>, input: Pick<CreateInvoiceInput, 'lines' | 'currency' | 'taxBehavior' | 'discount'>): InvoicePricing {
  const amounts = input.lines.map((l) => multiplyAndRound(l.unitAmount, l.quantity ?? 1, 1, input.currency));
  const discounts = lineDiscounts(input.discount, amounts, input.lines.map((l) => l.discounted === true), input.currency);
  const subtotal = add(...amounts);
  const discountAmount = add(...discounts);
  // DPP is the price after the discount: PPN is computed on what is left.
  const tax = taxInvoice(subtract(subtotal, discountAmount), input.taxBehavior, input.currency, config.tax.pkp);
  return { amounts, discounts, subtotal, discountAmount, tax, seller: currentSellerIdentity(config) };
}

/** The invoice columns of a pricing, with the buyer's tax profile and the seller's identity as they stand now. */
export function invoiceTaxFields(pricing: InvoicePricing, buyer: Pick<User, 'taxProfile'>) {
  const { tax } = pricing;
  return {
    subtotal: pricing.subtotal,
    discountAmount: pricing.discountAmount,
    totalAmount: tax.total,
    taxBehavior: tax.taxBehavior,
    taxRate: tax.taxRate,
    taxBase: tax.taxBase,
    otherTaxBase: tax.otherTaxBase,
    taxAmount: tax.taxAmount,
    taxRounding: tax.taxRounding,
    buyerTaxProfile: buyer.taxProfile ?? null,
    sellerTaxIdentity: pricing.seller,
  };
}

/**
 * The period a change's invoice (billing reason `subscription_update`: a plan change's, or a
 * usage window's) states. NOTE: the database allows one invoice per (subscription, billing
 * reason, period start), so that no period is ever renewed twice; changes may follow one another
 * in the same millisecond (down, up and down again, each starting a new period there), and an
 * invoice whose start another change's invoice already holds states its period on its lines only.
 */
export async function changeInvoicePeriod(ctx: DataContext, subscription: Subscription, start: Date, end: Date | null): Promise<{ periodStart: Date | null; periodEnd: Date | null }> {
  const taken = (await ctx.em.count(Invoice, { subscription, billingReason: 'subscription_update', periodStart: start })) > 0;
  return taken ? { periodStart: null, periodEnd: null } : { periodStart: start, periodEnd: end };
}

/** Issues an open invoice with its lines and the next gap-free number, inside the caller's transaction. */
export async function createInvoice(ctx: DataContext, input: CreateInvoiceInput): Promise<Invoice> {
  const number = await nextInvoiceNumber(ctx, input.issuedAt);
  const pricing = priceInvoice(ctx.config, input);
  const amounts = pricing.amounts;
  const invoice = ctx.em.create(Invoice, {
    number,
    user: input.user,
    subscription: input.subscription,
    status: 'open',
    billingReason: input.billingReason,
    currency: input.currency,
    issueDate: localDate(input.issuedAt, ctx.config.documents.timeZone),
    dueDate: localDate(input.dueAt, ctx.config.documents.timeZone),
    ...invoiceTaxFields(pricing, input.user),
    periodStart: input.periodStart ?? null,
    periodEnd: input.periodEnd ?? null,
    createdAt: input.issuedAt,
  } as Invoice);
  input.lines.forEach((line, position) => {
    invoice.lines.add(
      ctx.em.create(InvoiceLine, {
        invoice,
        position,
        description: line.description,
        subject: line.subject ?? null,
        kind: line.kind,
        quantity: line.quantity ?? 1,
        unitAmount: money(line.unitAmount),
        amount: amounts[position],
        discountAmount: pricing.discounts[position],
        periodStart: line.periodStart ?? null,
        periodEnd: line.periodEnd ?? null,
      } as InvoiceLine),
    );
  });
  return invoice;
}

