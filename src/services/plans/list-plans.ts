import type { FilterQuery } from '@mikro-orm/core';
import { Plan, type IntervalUnit, type PlanStatus } from '../../db/entities/plan.js';
import type { DataContext } from '../context.js';
import { containsText, findPage, orderingToOrderBy, type Page, type PageRequest } from '../common/pagination.js';

export interface PlanFilters {
  status?: PlanStatus;
  intervalUnit?: IntervalUnit;
  currency?: string;
  search?: string;
  ordering?: string;
}

export interface Viewer {
  isStaff: boolean;
}

const ORDERING = { price: 'price', sort_order: 'sortOrder', created_at: 'createdAt' };

/**
 * The plan catalogue. Anonymous users and non-staff see active plans only; staff see every
 * status, so the `status` filter matters for them.
 */
export async function listPlans(ctx: Pick<DataContext, 'em'>, viewer: Viewer | null, filters: PlanFilters, page: PageRequest): Promise<Page<Plan>> {
  const where: FilterQuery<Plan> = {};
  if (!viewer?.isStaff) where.status = 'active';
  if (filters.status) where.status = viewer?.isStaff ? filters.status : filters.status === 'active' ? 'active' : ('__none__' as PlanStatus);
  if (filters.intervalUnit) where.intervalUnit = filters.intervalUnit;
  if (filters.currency) where.currency = filters.currency.toUpperCase();
  if (filters.search) Object.assign(where, containsText<Plan>(ctx.em, ['name', 'description'], filters.search));
  const orderBy = orderingToOrderBy(filters.ordering, ORDERING, [{ sortOrder: 'asc' }, { price: 'asc' }, { id: 'asc' }]);
  return findPage(ctx.em, Plan, where, page, { orderBy: orderBy as never });
}
