import { Invoice } from '../../db/entities/invoice.js';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';

/** One of the user's invoices with its lines; another user's invoice is not found. */
export async function getInvoice(ctx: Pick<DataContext, 'em'>, user: User, id: string): Promise<Invoice> {
  const invoice = await ctx.em.findOne(Invoice, { id, user }, { populate: ['lines', 'subscription'] });
  if (!invoice) throw new NotFoundError('Invoice');
  return invoice;
}
