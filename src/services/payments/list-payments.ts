import type { FilterQuery } from '@mikro-orm/core';
import { Payment, type PaymentStatus } from '../../db/entities/payment.js';
import type { PaymentType } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import type { DataContext } from '../context.js';
import { findPage, orderingToOrderBy, type Page, type PageRequest } from '../shared/pagination.js';

export interface PaymentFilters {
  status?: PaymentStatus;
  paymentType?: PaymentType;
  ordering?: string;
}

const ORDERING = { created_at: 'createdAt', gross_amount: 'grossAmount' };

/** The user's subscription payments, newest first unless `ordering` says otherwise. */
export async function listPayments(ctx: Pick<DataContext, 'em'>, user: User, filters: PaymentFilters, page: PageRequest): Promise<Page<Payment>> {
  const where: FilterQuery<Payment> = { user: user.id };
  if (filters.status) where.status = filters.status;
  if (filters.paymentType) where.paymentType = filters.paymentType;
  const orderBy = orderingToOrderBy(filters.ordering, ORDERING, [{ createdAt: 'desc' }, { id: 'asc' }]);
  // NOTE: no populate: a listed payment shows only the ids of its subscription and invoice.
  return findPage(ctx.em, Payment, where, page, { orderBy });
}
