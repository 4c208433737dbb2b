import { randomUUID } from 'node:crypto';
import type { RequiredEntityData } from '@mikro-orm/core';
import { Notification, type NotificationChannel, type NotificationType } from '../../db/entities/notification.js';
import type { User } from '../../db/entities/user.js';
import type { DataContext } from '../context.js';
import { notificationContent } from './notification-content.js';

/** The rows `notify` creates, as plain data: for writers that insert many at once (the batched billing run). */
export function notificationRows(
  ctx: Pick<DataContext, 'config' | 'clock'>,
  user: User,
  type: NotificationType,
  data: Record<string, unknown>,
): Pick<Notification, 'user' | 'notificationType' | 'channel' | 'status' | 'title' | 'message' | 'data' | 'createdAt' | 'nextAttemptAt'>[] {
  const channels: NotificationChannel[] = ['in_app'];
  if (ctx.config.smtpUrl && user.email) channels.push('email');
  if (ctx.config.outboundWebhookUrl) channels.push('webhook');
  const { title, message } = notificationContent(type, data, ctx.config.documents);
  const now = ctx.clock.now();
  return channels.map((channel) => ({
    user,
    notificationType: type,
    channel,
    status: 'queued' as const,
    title,
    message,
    data,
    createdAt: now,
    nextAttemptAt: channel === 'in_app' ? null : now,
  }));
}

/** The same rows complete for insertRows (db/bulk-sql.ts): an id each, the user by id. */
export function notificationInserts(
  ctx: Pick<DataContext, 'config' | 'clock'>,
  user: Pick<User, 'id' | 'email'>,
  type: NotificationType,
  data: Record<string, unknown>,
): RequiredEntityData<Notification>[] {
  return notificationRows(ctx, user as User, type, data).map((row) => ({
    ...row,
    id: randomUUID(),
    user: user.id,
    readAt: null,
    sentAt: null,
    attempts: 0,
    lastError: null,
  }));
}

/**
 * Records an event for a user: an `in_app` entry always, an `email` entry when SMTP is set up
 * and the user has an address, a `webhook` entry when an outbound webhook is configured
 * (docs/delivery.md). Entries are persisted with the caller's transaction and delivered after
 * it commits, so delivery never blocks or fails the event.
 */
export function notify(ctx: DataContext, user: User, type: NotificationType, data: Record<string, unknown>): Notification[] {
  return notificationRows(ctx, user, type, data).map((row) => ctx.em.create(Notification, row as Notification));
}
