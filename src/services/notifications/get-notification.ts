import { Notification } from '../../db/entities/notification.js';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';

/** One of the user's notifications; someone else's is not found (never forbidden). */
export async function getNotification(ctx: Pick<DataContext, 'em'>, user: User, id: string): Promise<Notification> {
  const notification = await ctx.em.findOne(Notification, { id, user });
  if (!notification) throw new NotFoundError('Notification');
  return notification;
}
