import type { EntityName, FilterQuery } from '@mikro-orm/core';
import { CreditNote } from '../../db/entities/credit-note.js';
import { Invoice } from '../../db/entities/invoice.js';
import { Notification } from '../../db/entities/notification.js';
import { Payment, Refund } from '../../db/entities/payment.js';
import { Subscription } from '../../db/entities/subscription.js';
import { Topup } from '../../db/entities/topup.js';
import type { User } from '../../db/entities/user.js';
import { WebhookLog, type WebhookLogStatus } from '../../db/entities/webhook-log.js';
import type { DataContext } from '../context.js';
import { CREDIT_NOTE_POPULATE } from '../credit-notes/list-credit-notes.js';
import { webhookLogWhere } from '../gateway-events/list-webhook-logs.js';
import type { Page, PageRequest } from '../common/pagination.js';
import { SUBSCRIPTION_POPULATE } from '../subscriptions/find-subscription.js';
import { createdWithin, documentNumber, filterUser, staffPage, type StaffListFilters } from './filters.js';

/*
 * Every user's resources for support staff (the staff API and `billing-admin … list`), newest
 * first. Each list populates what its wire shape needs, plus the user for support's username.
 */

type Ctx = Pick<DataContext, 'em'>;

const EMPTY: Page<never> = { count: 0, items: [] };

/** The filters a resource takes besides user, status and the created window. */
type KeyFilter = 'orderId' | 'number';

/**
 * A page of a resource with a `user` relation and a `status` column, by those, the created
 * window and the named key filters; empty when the user filter names nobody.
 */
async function ownedPage<T extends object>(
  ctx: Ctx,
  entity: EntityName<T>,
  filters: StaffListFilters,
  page: PageRequest,
  options: { populate: readonly string[]; keys?: readonly KeyFilter[] },
): Promise<Page<T>> {
  const user = await filterUser(ctx, filters);
  if (user === null) return EMPTY;
  const where: Record<string, unknown> = { ...createdWithin(filters) };
  if (user) where.user = user.id;
  if (filters.status !== undefined) where.status = filters.status;
  if (filters.orderId !== undefined && options.keys?.includes('orderId')) where.orderId = filters.orderId;
  if (filters.number !== undefined && options.keys?.includes('number')) where.number = documentNumber(filters.number);
  return staffPage(ctx, entity, where as FilterQuery<T>, page, options.populate);
}

/** Every user's subscriptions (filters: user, status, created). */
export async function listStaffSubscriptions(ctx: Ctx, filters: StaffListFilters, page: PageRequest): Promise<Page<Subscription>> {
  return ownedPage(ctx, Subscription, filters, page, { populate: SUBSCRIPTION_POPULATE });
}

/** Every user's invoices (filters: user, status, number, created). */
export async function listStaffInvoices(ctx: Ctx, filters: StaffListFilters, page: PageRequest): Promise<Page<Invoice>> {
  return ownedPage(ctx, Invoice, filters, page, { populate: ['user'], keys: ['number'] });
}

/**
 * Every user's subscription payments (filters: user, status, order id, created). NOTE: no
 * populate beyond the user: a listed payment shows only the ids of its subscription and invoice.
 */
export async function listStaffPayments(ctx: Ctx, filters: StaffListFilters, page: PageRequest): Promise<Page<Payment>> {
  return ownedPage(ctx, Payment, filters, page, { populate: ['user'], keys: ['orderId'] });
}

/** Every user's refunds (filters: user and order id of their payment, status, created), with their payment. */
export async function listStaffRefunds(ctx: Ctx, filters: StaffListFilters, page: PageRequest): Promise<Page<Refund>> {
  const user = await filterUser(ctx, filters);
  if (user === null) return EMPTY;
  const payment = { ...(user ? { user: user.id } : {}), ...(filters.orderId !== undefined ? { orderId: filters.orderId } : {}) };
  const where = {
    ...(Object.keys(payment).length ? { payment } : {}),
    ...(filters.status !== undefined ? { status: filters.status } : {}),
    ...createdWithin(filters),
  };
  return staffPage(ctx, Refund, where as FilterQuery<Refund>, page, ['payment', 'payment.user']);
}

/** Every user's credit notes (filters: user, number, created; they have no status). */
export async function listStaffCreditNotes(ctx: Ctx, filters: StaffListFilters, page: PageRequest): Promise<Page<CreditNote>> {
  return ownedPage(ctx, CreditNote, { ...filters, status: undefined }, page, { populate: CREDIT_NOTE_POPULATE, keys: ['number'] });
}

/** Every user's top-ups (filters: user, status, order id, created). */
export async function listStaffTopups(ctx: Ctx, filters: StaffListFilters, page: PageRequest): Promise<Page<Topup>> {
  return ownedPage(ctx, Topup, filters, page, { populate: ['user'], keys: ['orderId'] });
}

/** Every user's notification entries, all channels (filters: user, status, created). */
export async function listStaffNotifications(ctx: Ctx, filters: StaffListFilters, page: PageRequest): Promise<Page<Notification>> {
  return ownedPage(ctx, Notification, filters, page, { populate: ['user'] });
}

/**
 * The webhook logs (filters: status, order id, created; `user`: the logs of that user's payment
 * and top-up orders, since a log names only its order).
 */
export async function listStaffWebhookLogs(ctx: Ctx, filters: StaffListFilters, page: PageRequest): Promise<Page<WebhookLog>> {
  const user = await filterUser(ctx, filters);
  if (user === null) return EMPTY;
  const where = webhookLogWhere({
    statuses: filters.status !== undefined ? [filters.status as WebhookLogStatus] : undefined,
    orderId: filters.orderId,
    since: filters.createdAfter,
    until: filters.createdBefore,
  });
  if (!user) return staffPage(ctx, WebhookLog, where, page);
  return staffPage(ctx, WebhookLog, { $and: [where, { orderId: { $in: await orderIdsOf(ctx, user) } }] }, page);
}

/** Every order id the user's payments and top-ups were sent to the gateway under. */
async function orderIdsOf(ctx: Ctx, user: User): Promise<string[]> {
  // Plain rows (no entities): partial entities would linger in the identity map.
  const read = (entity: typeof Payment | typeof Topup) =>
    ctx.em.createQueryBuilder(entity).select('orderId').where({ user: user.id }).execute<{ orderId: string }[]>('all', true);
  return (await Promise.all([read(Payment), read(Topup)])).flat().map((row) => row.orderId);
}
