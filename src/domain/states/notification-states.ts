import type { Notification, NotificationStatus } from '../../db/entities/notification.js';
import { StateMachine } from './state-machine.js';

export type NotificationEvent = 'mark_read' | 'mark_sent' | 'mark_failed';

export const notificationStates = new StateMachine<NotificationStatus, NotificationEvent, Notification>('notification', {
  mark_read: { from: ['queued', 'sent', 'read'], to: 'read', stamp: (n, at) => (n.readAt ??= at) },
  mark_sent: { from: ['queued'], to: 'sent', stamp: (n, at) => (n.sentAt = at) },
  mark_failed: { from: ['queued'], to: 'failed' },
});
