import { Invoice } from '../../db/entities/invoice.js';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';

/** Relations the invoice's detail view needs (its credit notes are read apart). */
export const INVOICE_DETAIL_POPULATE = ['lines', 'subscription'] as const;

/** One of the user's invoices with its lines; another user's invoice is not found. */
export async function getInvoice(ctx: Pick<DataContext, 'em'>, user: User, id: string): Promise<Invoice> {
  const invoice = await ctx.em.findOne(Invoice, { id, user }, { populate: INVOICE_DETAIL_POPULATE });
  if (!invoice) throw new NotFoundError('Invoice');
  return invoice;
}
