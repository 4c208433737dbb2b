import type { FilterQuery } from '@mikro-orm/core';
import { Subscription, type PaymentType, type SubscriptionStatus } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import type { DataContext } from '../context.js';
import { findPage, orderingToOrderBy, type Page, type PageRequest } from '../common/pagination.js';
import { SUBSCRIPTION_POPULATE } from './find-subscription.js';

export interface SubscriptionFilters {
  status?: SubscriptionStatus;
  paymentType?: PaymentType;
  ordering?: string;
}

const ORDERING = { created_at: 'createdAt', next_billing_date: 'nextBillingDate' };

/** The user's subscriptions, newest first unless `ordering` says otherwise. */
export async function listSubscriptions(
  ctx: Pick<DataContext, 'em'>,
  user: User,
  filters: SubscriptionFilters,
  page: PageRequest,
): Promise<Page<Subscription>> {
  const where: FilterQuery<Subscription> = { user: user.id };
  if (filters.status) where.status = filters.status;
  if (filters.paymentType) where.paymentType = filters.paymentType;
  // Subscriptions without a next billing date (pending, canceled…) come last in either direction,
  // the same on both databases (they disagree on where NULLs sort by default).
  const orderBy = orderingToOrderBy(filters.ordering, ORDERING, [{ createdAt: 'desc' }, { id: 'asc' }]).map((o) =>
    o.nextBillingDate ? { nextBillingDate: `${o.nextBillingDate} nulls last` } : o,
  );
  return findPage(ctx.em, Subscription, where, page, { orderBy, populate: SUBSCRIPTION_POPULATE });
}
