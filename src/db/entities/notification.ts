import { EntitySchema } from '@mikro-orm/core';
import { createdAtProperty, idProperty } from './common.js';
import { User } from './user.js';

export type NotificationChannel = 'email' | 'webhook' | 'in_app';
export type NotificationStatus = 'queued' | 'sent' | 'read' | 'failed';
export type NotificationType =
  | 'payment_pending'
  | 'payment_succeeded'
  | 'payment_failed'
  | 'payment_refunded'
  | 'subscription_activated'
  | 'subscription_past_due'
  | 'subscription_canceled'
  | 'subscription_paused'
  | 'subscription_resumed'
  | 'subscription_plan_changed'
  | 'subscription_renewed'
  | 'subscription_expired'
  | 'trial_will_end'
  | 'topup_succeeded'
  | 'topup_failed'
  | 'topup_expired'
  | 'payment_credited_to_wallet'
  | 'payment_reversed'
  | 'payment_charged_back'
  | 'card_expiring'
  | 'payment_method_required';

export class Notification {
  id!: string;
  user!: User;
  notificationType!: NotificationType;
  channel!: NotificationChannel;
  status: NotificationStatus = 'queued';
  title!: string;
  message!: string;
  data: Record<string, unknown> = {};
  readAt: Date | null = null;
  sentAt: Date | null = null;
  /** Delivery bookkeeping for email and webhook entries. */
  attempts = 0;
  lastError: string | null = null;
  nextAttemptAt: Date | null = null;
  createdAt!: Date;
}

export const NotificationSchema = new EntitySchema<Notification>({
  class: Notification,
  tableName: 'notifications',
  indexes: [
    { properties: ['user', 'createdAt'] },
    { properties: ['user', 'channel', 'status'] },
    { properties: ['channel', 'status', 'nextAttemptAt'] },
  ],
  properties: {
    id: idProperty,
    user: { kind: 'm:1', entity: () => User },
    notificationType: { type: 'string', length: 40 },
    channel: { type: 'string', length: 10 },
    status: { type: 'string', length: 10 },
    title: { type: 'string', length: 200 },
    message: { type: 'text' },
    data: { type: 'json' },
    readAt: { type: 'Date', nullable: true },
    sentAt: { type: 'Date', nullable: true },
    attempts: { type: 'integer', default: 0 },
    lastError: { type: 'text', nullable: true },
    nextAttemptAt: { type: 'Date', nullable: true },
    createdAt: createdAtProperty,
  },
});
