import { Notification } from '../../db/entities/notification.js';
import type { User } from '../../db/entities/user.js';
import type { DataContext } from '../context.js';

/** At most this many results on `GET /notifications/unread/`. */
export const UNREAD_LIMIT = 50;

/**
 * The user's unread notifications: `in_app` entries still `queued`, newest first, at most 50.
 * NOTE: `count` is the total number unread, which may exceed the 50 returned, so a badge can
 * show the real number. Email and webhook entries are deliveries, not something one reads here.
 */
export async function listUnreadNotifications(ctx: Pick<DataContext, 'em'>, user: User): Promise<{ count: number; items: Notification[] }> {
  const [items, count] = await ctx.em.findAndCount(
    Notification,
    { user, channel: 'in_app', status: 'queued' },
    { orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], limit: UNREAD_LIMIT },
  );
  return { count, items };
}
