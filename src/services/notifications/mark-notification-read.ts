import type { User } from '../../db/entities/user.js';
import type { Notification } from '../../db/entities/notification.js';
import { InvalidStateError } from '../../domain/errors.js';
import { notificationStates } from '../../domain/states/notification-states.js';
import type { DataContext } from '../context.js';
import { getNotification } from './get-notification.js';

/**
 * Marks one of the user's notifications read; marking it again changes nothing.
 * NOTE: an email or webhook entry still queued for delivery (or whose delivery failed) cannot be
 * marked read: its status is the delivery's, and `read` would stop the delivery pass sending it.
 */
export async function markNotificationRead(ctx: DataContext, user: User, id: string): Promise<Notification> {
  const notification = await getNotification(ctx, user, id);
  if (notification.channel !== 'in_app' && notification.status === 'queued') {
    throw new InvalidStateError(`This ${notification.channel} notification has not been delivered yet; it can be marked read once it is sent.`);
  }
  if (notification.status !== 'read') {
    notificationStates.apply(notification, 'mark_read', ctx.clock.now());
    await ctx.em.flush();
  }
  return notification;
}
