import type { FilterQuery } from '@mikro-orm/core';
import { Topup, type TopupStatus } from '../../db/entities/topup.js';
import type { User } from '../../db/entities/user.js';
import type { DataContext } from '../context.js';
import { findPage, type Page, type PageRequest } from '../common/pagination.js';

export interface TopupFilters {
  status?: TopupStatus;
  paymentType?: Topup['paymentType'];
}

/** A page of the user's top-ups, newest first. */
export async function listTopups(ctx: Pick<DataContext, 'em'>, user: User, filters: TopupFilters, page: PageRequest): Promise<Page<Topup>> {
  const where: FilterQuery<Topup> = { user };
  if (filters.status) where.status = filters.status;
  if (filters.paymentType) where.paymentType = filters.paymentType;
  return findPage(ctx.em, Topup, where, page, { orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
}
