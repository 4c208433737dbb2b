import { Payment } from '../../db/entities/payment.js';
import type { ServiceContext } from '../context.js';
import { confirmSavedCard, needsCardConfirmation, savedCardOf } from './saved-card.js';
import { receiveNotification, type NotificationOutcome } from './process-notification.js';

/**
 * The webhook's use case: the notification pipeline (record, judge, deduplicate, apply), then
 * what a pushed notification cannot do on its own word: a card it says was saved (the capture
 * after 3-D Secure) is confirmed by a status call before renewals rely on it.
 */
export async function receiveGatewayNotification(ctx: ServiceContext, input: { rawPayload: string; ip: string | null }): Promise<NotificationOutcome> {
  const outcome = await receiveNotification(ctx, { ...input, source: 'gateway' });
  // A duplicate was applied first from a verified source (the charge answer, a sync), which
  // stored the card itself: only an event this notification applied needs confirming.
  // The event the pipeline applied (read once, there): not parsed again from the stored payload.
  const event = outcome.event;
  if (outcome.result !== 'processed' || !event || !needsCardConfirmation(event)) return outcome;
  const announced = savedCardOf(event.raw)!;
  const payment = await ctx.em.fork().findOne(Payment, { orderId: event.orderId }, { populate: ['subscription'] });
  // Already the subscription's card (the charge answer or a sync stored it): nothing to confirm.
  if (!payment?.subscription || payment.subscription.cardToken === announced.token) return outcome;
  return { ...outcome, changes: [...outcome.changes, ...(await confirmSavedCard(ctx, event.orderId, announced))] };
}
