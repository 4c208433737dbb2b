import type { Subscription } from '../../db/entities/subscription.js';
import { subscriptionActions } from '../../domain/states/subscription-actions.js';
import { cancelSubscription } from '../../services/subscriptions/cancel-subscription.js';
import { scheduledCancelTookEffect, undoCancelSubscription } from '../../services/subscriptions/undo-cancel-subscription.js';
import type { PageRequest } from './page-kit.js';

/*
 * Leaving from the portal is a decision in two steps, and can be taken back (docs/hosted.md,
 * 'Cancelling in the portal'). The cancel buttons only ask: their POST renders a confirmation,
 * and only that page's form (with `confirm=yes`) cancels. So a link preview, a double tap or a
 * form sent again never ends a subscription, and it works without JavaScript. A cancel at the
 * period end shows "continue my subscription" until that period ends.
 */

export type CancelWhen = 'now' | 'period_end';

/** The confirmation a cancel button asks for: what it will do, said before it is done. */
export function confirmCancelView(page: PageRequest, sub: Subscription, when: CancelWhen) {
  const { t, format } = page;
  const periodEnd = sub.currentPeriodEnd ? format.date(sub.currentPeriodEnd) : '';
  return when === 'now'
    ? { when, means: t('portal.confirm_cancel_now_means'), confirm: t('portal.confirm_cancel_now'), buttonId: 'confirm-cancel-now' }
    : { when, means: t('portal.confirm_cancel_end_means', { date: periodEnd }), confirm: t('portal.confirm_cancel_end'), buttonId: 'confirm-cancel-end' };
}

/** "Continue my subscription": shown while a cancel at the period end can still be taken back; null otherwise. */
export function undoCancelView(page: PageRequest, sub: Subscription) {
  if (!sub.cancelAtPeriodEnd || !subscriptionActions.can(sub, 'undo_cancel')) return null;
  if (scheduledCancelTookEffect(sub, page.services.clock.now())) return null;
  const date = sub.currentPeriodEnd ? page.format.date(sub.currentPeriodEnd) : '';
  return { means: page.t('portal.undo_cancel_means', { date }) };
}

/**
 * The portal's `cancel` and `undo-cancel` forms, as the link's user. A cancel without `confirm=yes`
 * changes nothing and answers `{ confirm }` for the page to ask; otherwise the `done` to show.
 */
export async function cancelFromPortal(
  page: PageRequest,
  action: 'cancel' | 'undo-cancel',
  form: Record<string, string>,
  subscriptionId: string,
): Promise<{ confirm: CancelWhen } | { done: string }> {
  const { services, session } = page;
  if (action === 'undo-cancel') {
    await undoCancelSubscription(services, session.user, subscriptionId);
    return { done: 'undo-cancel' };
  }
  const when: CancelWhen = form.when === 'now' ? 'now' : 'period_end';
  if (form.confirm !== 'yes') return { confirm: when };
  await cancelSubscription(services, session.user, subscriptionId, { immediate: when === 'now', reason: 'Canceled by the customer in the portal' });
  return { done: when === 'now' ? 'cancel-now' : 'cancel' };
}
