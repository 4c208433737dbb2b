import { Invoice, InvoiceLine, type BillingReason, type InvoiceLineKind } from '../../db/entities/invoice.js';
import type { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { isoDate } from '../../domain/billing-calendar.js';
import { add, money, multiplyAndRound } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { nextInvoiceNumber } from './next-invoice-number.js';

export interface InvoiceLineInput {
  description: string;
  kind: InvoiceLineKind;
  quantity?: number;
  unitAmount: string;
  periodStart?: Date | null;
  periodEnd?: Date | null;
}

export interface CreateInvoiceInput {
  user: User;
  subscription: Subscription | null;
  currency: string;
  billingReason: BillingReason;
  lines: InvoiceLineInput[];
  issuedAt: Date;
  dueAt: Date;
  /** The service period the invoice pays for (renewals advance the subscription to it). */
  periodStart?: Date | null;
  periodEnd?: Date | null;
}

/** Issues an open invoice with its lines and the next gap-free number, inside the caller's transaction. */
export async function createInvoice(ctx: DataContext, input: CreateInvoiceInput): Promise<Invoice> {
  const number = await nextInvoiceNumber(ctx, input.issuedAt);
  const amounts = input.lines.map((l) => multiplyAndRound(l.unitAmount, l.quantity ?? 1, 1, input.currency));
  const total = add(...amounts);
  const invoice = ctx.em.create(Invoice, {
    number,
    user: input.user,
    subscription: input.subscription,
    status: 'open',
    billingReason: input.billingReason,
    currency: input.currency,
    issueDate: isoDate(input.issuedAt),
    dueDate: isoDate(input.dueAt),
    subtotal: total,
    totalAmount: total,
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
        kind: line.kind,
        quantity: line.quantity ?? 1,
        unitAmount: money(line.unitAmount),
        amount: amounts[position],
        periodStart: line.periodStart ?? null,
        periodEnd: line.periodEnd ?? null,
      } as InvoiceLine),
    );
  });
  return invoice;
}

