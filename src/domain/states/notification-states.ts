import type { Notification, NotificationStatus } from '../../db/entities/notification.js';
import { StateMachine } from './state-machine.js';

export type NotificationEvent = 'mark_read' | 'mark_sent' | 'mark_failed' | 'requeue';

export const notificationStates = new StateMachine<NotificationStatus, NotificationEvent, Notification>('notification', {
  mark_read: { from: ['queued', 'sent', 'read'], to: 'read', stamp: (n, at) => (n.readAt ??= at) },
  mark_sent: { from: ['queued'], to: 'sent', stamp: (n, at) => (n.sentAt = at) },
  mark_failed: { from: ['queued'], to: 'failed' },
  // Support staff redeliver an email or webhook entry (billing-admin notifications redeliver).
  requeue: { from: ['sent', 'failed'], to: 'queued', stamp: (n) => (n.sentAt = null) },
});
