import { getNotification } from '../../services/notifications/get-notification.js';
import { listNotifications } from '../../services/notifications/list-notifications.js';
import { listUnreadNotifications } from '../../services/notifications/list-unread-notifications.js';
import { markNotificationRead } from '../../services/notifications/mark-notification-read.js';
import { requireUser, type OperationHandlers } from '../operations.js';
import { envelope, pageRequest } from '../pagination.js';
import { serializeNotification } from '../serializers.js';

export const notificationHandlers: OperationHandlers = {
  async listNotifications(req) {
    const page = pageRequest(req.query);
    const { notification_type, channel, status } = req.query;
    const result = await listNotifications(req.services, requireUser(req), { notificationType: notification_type, channel, status }, page);
    return { status: 200, body: envelope(req.koa, result, page, serializeNotification) };
  },

  async listUnreadNotifications(req) {
    const { count, items } = await listUnreadNotifications(req.services, requireUser(req));
    return { status: 200, body: { count, results: items.map(serializeNotification) } };
  },

  async getNotification(req) {
    return { status: 200, body: serializeNotification(await getNotification(req.services, requireUser(req), req.path.id)) };
  },

  async markNotificationRead(req) {
    return { status: 200, body: serializeNotification(await markNotificationRead(req.services, requireUser(req), req.path.id)) };
  },
};
