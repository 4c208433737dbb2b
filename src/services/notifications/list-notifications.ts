import type { FilterQuery } from '@mikro-orm/core';
import { Notification, type NotificationChannel, type NotificationStatus, type NotificationType } from '../../db/entities/notification.js';
import type { User } from '../../db/entities/user.js';
import type { DataContext } from '../context.js';
import { findPage, type Page, type PageRequest } from '../common/pagination.js';

export interface NotificationFilters {
  notificationType?: NotificationType;
  channel?: NotificationChannel;
  status?: NotificationStatus;
}

/** A page of the user's notification log (every channel), newest first. */
export async function listNotifications(
  ctx: Pick<DataContext, 'em'>,
  user: User,
  filters: NotificationFilters,
  page: PageRequest,
): Promise<Page<Notification>> {
  const where: FilterQuery<Notification> = { user };
  if (filters.notificationType) where.notificationType = filters.notificationType;
  if (filters.channel) where.channel = filters.channel;
  if (filters.status) where.status = filters.status;
  return findPage(ctx.em, Notification, where, page, { orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
}
