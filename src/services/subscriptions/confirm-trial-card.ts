import { LockMode } from '@mikro-orm/core';
import { Invoice } from '../../db/entities/invoice.js';
import { Subscription } from '../../db/entities/subscription.js';
import { WebhookLog } from '../../db/entities/webhook-log.js';
import { DomainError } from '../../domain/errors.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import { GatewayError } from '../../gateway/errors.js';
import type { DataContext, ServiceContext } from '../context.js';
import { rememberSavedCard, type SavedCard } from '../gateway-events/saved-card.js';
import { notify } from '../notifications/notify.js';
import { subscriptionData } from '../notifications/payloads.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import { releaseUnheldRedemption } from '../coupons/redemption-hold.js';
import { cardCheckOrderId, readCardCheck, releaseCardAuthorization, subscriptionOfCardCheck, type CardCheck } from './authorize-trial-card.js';
import { beginTrial } from './begin-trial.js';
import { trialAllowed } from './create-subscription.js';

export type TrialCardOutcome =
  /** The card is saved and the trial started now. */
  | 'trial_started'
  /** The card was declined, 3-D Secure failed or expired: the subscription was canceled. */
  | 'card_declined'
  /** Still waiting for the customer's 3-D Secure step. */
  | 'waiting'
  /** A first period that cost nothing started without waiting: its card, now through 3-D Secure, is saved for the renewals. */
  | 'card_saved'
  /** Nothing to do: the subscription does not wait for a card (already started, canceled, replaced). */
  | 'unchanged';

/** What confirmTrialCard found at the gateway and did. */
export interface TrialCardConfirmation {
  outcome: TrialCardOutcome;
  /** The pre-authorisation's transaction_status at the gateway; null when the gateway does not know it. */
  gatewayStatus: string | null;
  /** The hold was found approved and canceled now; false when its cancel failed (asked again next time). */
  released: boolean;
}

/**
 * A subscription waits for its trial card while it is `pending` with no invoice: only a trial
 * subscribed with a card that went to 3-D Secure is in that state.
 */
async function awaitsTrialCard(ctx: DataContext, sub: Subscription): Promise<boolean> {
  return sub.status === 'pending' && (await ctx.em.count(Invoice, { subscription: sub.id })) === 0;
}

/**
 * Finishes a trial subscribed with a card after 3-D Secure, from the gateway's own word: the
 * status of the card's pre-authorisation, asked now (a pushed notification only says when to
 * ask; its saved token is not signed). Saved: the trial starts with the card kept for its end,
 * and the authorisation is canceled. Declined, failed or expired: the waiting subscription is
 * canceled (`card_declined`), nothing else was made. Safe to call any number of times.
 */
export async function confirmTrialCard(ctx: ServiceContext, subscriptionId: string): Promise<TrialCardConfirmation> {
  const orderId = cardCheckOrderId(subscriptionId);
  let answer;
  try {
    answer = await ctx.gateway.status(orderId);
  } catch (err) {
    if (err instanceof GatewayError && err.kind === 'not_found') return { outcome: 'unchanged', gatewayStatus: null, released: false };
    throw err;
  }
  let check: CardCheck | null = null;
  try {
    check = readCardCheck(answer);
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
  }
  if (check?.status === 'pending') return { outcome: 'waiting', gatewayStatus: answer.transactionStatus, released: false };
  // Most news of a pre-authorisation comes after its trial started (the gateway's echo of our
  // own cancel): looked at without a lock, so a billing run never finds the subscription held.
  const peek = await ctx.em.fork().findOne(Subscription, { id: subscriptionId }, { fields: ['id', 'status', 'paymentType', 'cardToken'] });
  if (peek && check?.status === 'saved' && awaitsFreePeriodCard(peek)) {
    const saved = await retryingTransaction(ctx.em, async (em) => {
      const sub = await em.findOne(Subscription, { id: subscriptionId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      return sub !== null && awaitsFreePeriodCard(sub) && rememberSavedCard(sub, check.card).length > 0;
    });
    const released = await releaseCardAuthorization(ctx, orderId);
    return { outcome: saved ? 'card_saved' : 'unchanged', gatewayStatus: answer.transactionStatus, released };
  }
  const outcome = peek?.status !== 'pending' ? ('unchanged' as const) : await retryingTransaction(ctx.em, async (em) => {
    const tctx = { ...ctx, em };
    const sub = await em.findOne(Subscription, { id: subscriptionId }, { lockMode: LockMode.PESSIMISTIC_WRITE, populate: ['plan', 'user'] });
    if (!sub || !(await awaitsTrialCard(tctx, sub))) return 'unchanged' as const;
    if (check?.status === 'saved' && (await trialAllowed(tctx, sub.user, sub.plan))) {
      startTrialWithCard(tctx, sub, check.card);
      return 'trial_started' as const;
    }
    // Declined, or the user's trial of this plan was spent meanwhile: nothing was ever due.
    subscriptionStates.apply(sub, 'cancel', ctx.clock.now());
    sub.cancelReason = check ? 'trial_unavailable' : 'card_declined';
    sub.nextBillingDate = null;
    await releaseUnheldRedemption(tctx, sub);
    return 'card_declined' as const;
  });
  // Approved at the gateway (now, or long ago for a trial already running): release the hold.
  const held = answer.transactionStatus === 'authorize' || answer.transactionStatus === 'capture';
  const released = held && (await releaseCardAuthorization(ctx, orderId));
  return { outcome, gatewayStatus: answer.transactionStatus, released };
}

/**
 * A live card subscription that started without its card (a free first period, which does not
 * wait for 3-D Secure: free-first-period.ts) takes the card its pre-authorisation saved.
 */
export function awaitsFreePeriodCard(sub: Pick<Subscription, 'status' | 'paymentType' | 'cardToken'>): boolean {
  return (sub.status === 'active' || sub.status === 'past_due') && sub.paymentType === 'credit_card' && !sub.cardToken;
}

function startTrialWithCard(ctx: DataContext, sub: Subscription, card: SavedCard): void {
  const at = ctx.clock.now();
  subscriptionStates.apply(sub, 'start_trial', at);
  beginTrial(ctx, sub, at);
  rememberSavedCard(sub, card);
  notify(ctx, sub.user, 'subscription_activated', subscriptionData(sub));
}

/**
 * A gateway notification about a card pre-authorisation (the webhook pipeline logs it `ignored`,
 * as an order that is none of the payments'): confirms the subscription it names, and says on
 * the log what became of it. Null when the order is not one.
 */
export async function confirmTrialCardOfNotification(ctx: ServiceContext, log: Pick<WebhookLog, 'id' | 'orderId'>): Promise<TrialCardOutcome | null> {
  const subscriptionId = log.orderId ? subscriptionOfCardCheck(log.orderId) : null;
  if (!subscriptionId) return null;
  const { outcome } = await confirmTrialCard(ctx, subscriptionId);
  await ctx.em.fork().nativeUpdate(WebhookLog, { id: log.id }, { error: `Card pre-authorisation of subscription ${subscriptionId} for its trial; the gateway's status of it, asked now: ${outcome}.` });
  return outcome;
}
