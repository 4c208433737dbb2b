import { Payment } from '../../db/entities/payment.js';
import type { ServiceContext } from '../context.js';
import { confirmSavedCard, needsCardConfirmation, savedCardOf } from './saved-card.js';
import type { InvalidLogQuota } from './invalid-notification-quota.js';
import { receiveNotification, type DroppedNotification, type NotificationOutcome } from './process-notification.js';

/**
 * The webhook's use case: the notification pipeline (record, judge, deduplicate, apply), then
 * what a pushed notification cannot do on its own word: a card it says was saved (the capture
 * after 3-D Secure) is confirmed by a status call before renewals rely on it. Invalid
 * notifications beyond their source's quota are answered without a log (DroppedNotification).
 */
export async function receiveGatewayNotification(
  ctx: ServiceContext,
  input: { rawPayload: string; rawBytes?: Buffer; ip: string | null },
  invalidQuota: InvalidLogQuota,
): Promise<NotificationOutcome | DroppedNotification> {
  const outcome = await receiveNotification(ctx, { ...input, source: 'gateway' }, invalidQuota);
  // A duplicate was applied first from a verified source (the charge answer, a sync), which
  // stored the card itself: only an event this notification applied needs confirming.
  // The event the pipeline applied (read once, there): not parsed again from the stored payload.
  if (outcome.result !== 'processed') return outcome;
  const event = outcome.event;
  if (!event || !needsCardConfirmation(event)) return outcome;
  const announced = savedCardOf(event.raw)!;
  const payment = await ctx.em.fork().findOne(Payment, { orderId: event.orderId }, { populate: ['subscription'] });
  // Already the subscription's card (the charge answer or a sync stored it): nothing to confirm.
  if (!payment?.subscription || payment.subscription.cardToken === announced.token) return outcome;
  return { ...outcome, changes: [...outcome.changes, ...(await confirmSavedCard(ctx, event.orderId, announced))] };
}
