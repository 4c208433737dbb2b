import { LockMode } from '@mikro-orm/core';
import { Payment } from '../../db/entities/payment.js';
import { Subscription } from '../../db/entities/subscription.js';
import { GatewayError } from '../../gateway/errors.js';
import { parseMidtransTime } from '../../gateway/midtrans-time.js';
import type { DataContext, ServiceContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { subscriptionData } from '../notifications/payloads.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import { isSuccess, type GatewayEvent } from './gateway-event.js';

/*
 * A card saved for merchant-initiated renewals (docs/gateway.md): `saved_token_id` and
 * `saved_token_id_expired_at` come with ANY successful card event: the charge answer (no 3-D
 * Secure), the capture notification after 3-D Secure, a status answer, a sync. The notification
 * signature covers only order_id, status_code and gross_amount, so a token read from a pushed
 * notification is believed only once a status call (our own authenticated request) confirms it.
 */

export interface SavedCard {
  token: string;
  expiresAt: Date | null;
}

/** The saved card a gateway payload carries, or null. */
export function savedCardOf(raw: Record<string, unknown>): SavedCard | null {
  const token = raw['saved_token_id'];
  if (typeof token !== 'string' || token.trim() === '' || token.length > 200) return null;
  return { token, expiresAt: parseMidtransTime(raw['saved_token_id_expired_at']) };
}

/** Makes the card the subscription's saved card; returns what changed (nothing when it already was). */
export function rememberSavedCard(sub: Subscription, card: SavedCard): string[] {
  const changes: string[] = [];
  // NOTE: a customer who paid with a new card chose it: renewals charge that card from now on.
  if (sub.paymentType !== 'credit_card') {
    changes.push(`subscription pays by credit_card from now on (was ${sub.paymentType})`);
    sub.paymentType = 'credit_card';
  }
  if (sub.cardToken === card.token && (sub.cardTokenExpiresAt?.getTime() ?? null) === (card.expiresAt?.getTime() ?? null)) return changes;
  sub.cardToken = card.token;
  sub.cardTokenExpiresAt = card.expiresAt;
  return [...changes, 'saved card stored for renewals'];
}

/**
 * For events read from our own authenticated calls (`verified`): a successful card event of a
 * subscription payment saves its card. Runs inside applyGatewayEvent's transaction.
 */
export function saveCardFromVerifiedEvent(payment: Payment, event: GatewayEvent): string[] {
  if (!event.verified || !isSuccess(event) || payment.paymentType !== 'credit_card' || !payment.subscription) return [];
  const card = savedCardOf(event.raw);
  return card ? rememberSavedCard(payment.subscription, card) : [];
}

/** Whether a pushed (unverified) payload carries a saved card the subscription does not hold yet. */
export function needsCardConfirmation(event: GatewayEvent): boolean {
  return !event.verified && isSuccess(event) && savedCardOf(event.raw) !== null;
}

/**
 * Confirms a saved card a notification announced by asking the gateway for the order's status,
 * and stores the card the STATUS answer names rather than the notification's. NOTE: Midtrans's
 * Go client does not list saved_token_id in its status response type (its charge response has
 * it), so a status answer that confirms the successful capture but names no card lets the
 * announced one stand. Best effort: when the gateway cannot be asked, `subscriptions sync`,
 * `payments sync` or the next charge answer will store it. Returns what changed.
 */
export async function confirmSavedCard(ctx: ServiceContext, orderId: string, announced: SavedCard): Promise<string[]> {
  let answer;
  try {
    answer = await ctx.gateway.status(orderId);
  } catch (err) {
    if (err instanceof GatewayError) return [];
    throw err;
  }
  const success = answer.transactionStatus === 'settlement' || (answer.transactionStatus === 'capture' && answer.fraudStatus === 'accept');
  if (!success) return [];
  return storeSavedCard(ctx, orderId, savedCardOf(answer.raw) ?? announced);
}

/** Stores the card on the subscription of the payment with this order id (a locked write of its own). */
export async function storeSavedCard(ctx: DataContext, orderId: string, card: SavedCard): Promise<string[]> {
  return retryingTransaction(ctx.em, async (em) => {
    const payment = await em.findOne(Payment, { orderId });
    if (!payment?.subscription || payment.paymentType !== 'credit_card') return [];
    const sub = await em.findOneOrFail(Subscription, { id: payment.subscription.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    return rememberSavedCard(sub, card);
  });
}

/**
 * A disputed card is not charged again (docs/gateway.md, "Chargebacks"): a chargeback, full or
 * partial, forgets the saved card of the payment's subscription, so renewals need a new payment
 * method, and the customer is told so. The card forgotten is the one the payment saved: when the
 * message names a saved token and the subscription holds another one (the customer has moved to
 * a new card since), that other card stays. Runs inside applyGatewayEvent's transaction.
 */
export function forgetDisputedCard(ctx: DataContext, payment: Payment, event: GatewayEvent): string[] {
  const sub = payment.subscription;
  if (!sub || payment.paymentType !== 'credit_card' || sub.cardToken === null) return [];
  const named = savedCardOf(event.raw);
  if (named && named.token !== sub.cardToken) return [];
  sub.cardToken = null;
  sub.cardTokenExpiresAt = null;
  notify(ctx, payment.user, 'payment_method_required', { ...subscriptionData(sub), order_id: payment.orderId, reason: 'chargeback' });
  return ['saved card forgotten after the chargeback: renewals need a new payment method (customer told)'];
}
