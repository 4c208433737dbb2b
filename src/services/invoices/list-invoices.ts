import type { FilterQuery } from '@mikro-orm/core';
import { Invoice, type InvoiceStatus } from '../../db/entities/invoice.js';
import type { User } from '../../db/entities/user.js';
import type { DataContext } from '../context.js';
import { findPage, orderingToOrderBy, type Page, type PageRequest } from '../common/pagination.js';

export interface InvoiceFilters {
  status?: InvoiceStatus;
  ordering?: string;
}

const ORDERING = { issue_date: 'issueDate', due_date: 'dueDate', total_amount: 'totalAmount' };

/** The user's invoices, newest first unless `ordering` says otherwise. */
export async function listInvoices(ctx: Pick<DataContext, 'em'>, user: User, filters: InvoiceFilters, page: PageRequest): Promise<Page<Invoice>> {
  const where: FilterQuery<Invoice> = { user };
  if (filters.status) where.status = filters.status;
  const orderBy = orderingToOrderBy(filters.ordering, ORDERING, [{ issueDate: 'desc' }, { createdAt: 'desc' }, { number: 'desc' }]);
  return findPage(ctx.em, Invoice, where, page, { orderBy, populate: ['subscription'] });
}
