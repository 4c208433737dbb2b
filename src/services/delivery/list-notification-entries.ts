import type { FilterQuery } from '@mikro-orm/core';
import { DeliveryAttempt } from '../../db/entities/delivery-attempt.js';
import { Notification, type NotificationChannel, type NotificationStatus } from '../../db/entities/notification.js';
import { User } from '../../db/entities/user.js';
import { NotFoundError, ValidationError, type FieldError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';
import { parseUuid } from '../../domain/ids.js';

const CHANNELS: NotificationChannel[] = ['email', 'webhook', 'in_app'];
const STATUSES: NotificationStatus[] = ['queued', 'sent', 'read', 'failed'];

export interface NotificationEntryFilter {
  channel?: string;
  status?: string;
  /** A username or a user id. */
  user?: string;
  limit?: number;
}

/** Notification entries of every user, newest first, for support staff (`billing-admin notifications list`). */
export async function listNotificationEntries(ctx: DataContext, filter: NotificationEntryFilter): Promise<Notification[]> {
  const errors: FieldError[] = [];
  if (filter.channel && !CHANNELS.includes(filter.channel as NotificationChannel)) errors.push({ field: 'channel', message: `must be one of ${CHANNELS.join(', ')}` });
  if (filter.status && !STATUSES.includes(filter.status as NotificationStatus)) errors.push({ field: 'status', message: `must be one of ${STATUSES.join(', ')}` });
  const limit = filter.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) errors.push({ field: 'limit', message: 'must be a whole number from 1 to 1000' });
  if (errors.length) throw new ValidationError(errors);

  const where: FilterQuery<Notification> = {};
  if (filter.channel) where.channel = filter.channel as NotificationChannel;
  if (filter.status) where.status = filter.status as NotificationStatus;
  if (filter.user) {
    const id = parseUuid(filter.user);
    const user = await ctx.em.findOne(User, id ? { $or: [{ id }, { username: filter.user }] } : { username: filter.user });
    if (!user) throw new NotFoundError(`User ${filter.user}`);
    where.user = user;
  }
  return ctx.em.find(Notification, where, { orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], limit, populate: ['user'] });
}

/** One entry with its delivery attempts, oldest first (`billing-admin notifications show`). */
export async function getNotificationEntry(ctx: DataContext, id: string): Promise<{ entry: Notification; attempts: DeliveryAttempt[] }> {
  const canonical = parseUuid(id);
  const entry = canonical ? await ctx.em.findOne(Notification, canonical, { populate: ['user'] }) : null;
  if (!entry) throw new NotFoundError(`Notification ${id}`);
  const attempts = await ctx.em.find(DeliveryAttempt, { notification: entry }, { orderBy: [{ attemptedAt: 'asc' }, { id: 'asc' }] });
  return { entry, attempts };
}
