import type { FilterQuery } from '@mikro-orm/core';
import { Payment, type PaymentStatus } from '../../db/entities/payment.js';
import type { PaymentType } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { hotRows } from '../../db/hot-sql.js';
import { rowReader } from '../../db/row-fields.js';
import { PAYMENT_FIELDS, type PaymentFields } from '../../http/serializers.js';
import type { DataContext } from '../context.js';
import { findPage, orderingToOrderBy, type Page, type PageRequest } from '../common/pagination.js';

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

const ORDER_COLUMNS: Record<string, string> = { created_at: 'created_at', gross_amount: 'gross_amount' };

/**
 * The same page as listPayments, read by one statement into plain fields (no entities): the
 * list every client polls. The total rides on the page's rows (a scalar subquery); only a page
 * past the last, which has no rows, asks for it separately.
 */
export async function listPaymentFields(
  ctx: Pick<DataContext, 'em'>,
  userId: string,
  filters: PaymentFilters,
  page: PageRequest,
): Promise<Page<PaymentFields>> {
  const em = ctx.em;
  const reader = rowReader<PaymentFields>(em, Payment, PAYMENT_FIELDS, 'p');
  const conditions = ['p.user_id = ?'];
  const params: unknown[] = [userId];
  if (filters.status) {
    conditions.push('p.status = ?');
    params.push(filters.status);
  }
  if (filters.paymentType) {
    conditions.push('p.payment_type = ?');
    params.push(filters.paymentType);
  }
  const where = conditions.join(' and ');
  const desc = filters.ordering?.startsWith('-') ?? false;
  const column = filters.ordering ? ORDER_COLUMNS[desc ? filters.ordering.slice(1) : filters.ordering] : undefined;
  // The same order as orderingToOrderBy: the id breaks ties so that pages never overlap.
  const orderBy = column ? `p.${column} ${desc ? 'desc' : 'asc'}, p.id asc` : 'p.created_at desc, p.id asc';
  const offset = (page.page - 1) * page.pageSize;
  const countAll = async () => {
    const [row] = await hotRows<{ n: number | string }>(em, `select count(*) as n from payments p where ${where}`, params);
    return Number(row.n);
  };
  if (!Number.isSafeInteger(offset)) return { count: await countAll(), items: [] };
  // NOTE: the total as a scalar subquery, not `count(*) over ()`: SQLite runs a window function
  // over a subquery it scans whole (every user's payments, then a sort), where this way both the
  // page and the count use the index on (user_id, created_at). One statement: one snapshot.
  const rows = await hotRows(
    em,
    `select ${reader.columns}, (select count(*) from payments p where ${where}) as total_count from payments p where ${where} order by ${orderBy} limit ? offset ?`,
    [...params, ...params, page.pageSize, offset],
  );
  if (rows.length === 0) return { count: offset === 0 ? 0 : await countAll(), items: [] };
  return { count: Number(rows[0].total_count), items: rows.map((row) => reader.read(row)) };
}
