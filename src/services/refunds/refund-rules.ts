import { LockMode } from '@mikro-orm/core';
import type { Payment, Refund } from '../../db/entities/payment.js';
import { Subscription } from '../../db/entities/subscription.js';
import { add, compare, isPositive, minimum, subtract, ZERO, type Money } from '../../domain/money.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';
import { endSubscriptionNow } from '../subscription-rules/end-subscription.js';
import { unusedOfPayment, withdrawFunds } from '../subscription-rules/period-funds.js';

/*
 * NOTE: "a refund gives back at most what is unused, and ends what it pays back"
 * (docs/billing.md, 'Money rules').
 * Who asks decides the bound: a customer (the API) gets back at most the unused share of the
 * time the payment paid for; support staff (billing-admin payments refund) are bounded only by
 * what is refundable at all.
 */

export type RefundBound = 'customer' | 'staff';

export interface RefundLimit {
  /** settled − refunded (and held by pending refunds) − credits already granted from the payment. */
  refundable: Money;
  /** The unused share of what the payment paid for, now. */
  unused: Money;
  /** What this caller may refund. */
  limit: Money;
}

export async function refundLimit(ctx: DataContext, payment: Payment, refunds: Refund[], bound: RefundBound): Promise<RefundLimit> {
  // Refunds still waiting for the gateway hold their amount, so two refunds cannot exceed the payment.
  const held = refunds.filter((r) => r.status !== 'failed').reduce((sum, r) => add(sum, r.amount), ZERO);
  // What the cardholder's bank charged back is gone too (the gateway refuses a refund of it).
  const refundable = subtract(payment.grossAmount, add(held, payment.creditedAmount, payment.chargebackAmount));
  const unused = await unusedOfPayment(ctx, payment, ctx.clock.now());
  const limit = bound === 'staff' ? refundable : minimum(refundable, unused);
  return { refundable, unused, limit: isPositive(limit) ? limit : ZERO };
}

/**
 * Takes an accepted refund out of the time the payment paid for and, unless staff keep it, ends
 * the subscription that time belonged to (`cancel_reason: refunded`). Returns the order ids to
 * cancel at the gateway after the commit.
 */
export async function endWhatRefundPaysBack(ctx: DataContext, payment: Payment, amount: Money, keepSubscription: boolean): Promise<string[]> {
  const at = ctx.clock.now();
  // A payment of time already used (an old period) pays nothing current back: nothing to end.
  const paidForNow = isPositive(await unusedOfPayment(ctx, payment, at));
  await withdrawFunds(ctx, payment, amount, at);
  if (keepSubscription || !payment.subscription || !paidForNow) return [];
  return endRefundedTime(ctx, payment.subscription.id);
}

/** Ends, now, the subscription whose paid time was refunded; the order ids to cancel after the commit. */
async function endRefundedTime(ctx: DataContext, subscriptionId: string): Promise<string[]> {
  const sub = await ctx.em.findOneOrFail(Subscription, subscriptionId, { lockMode: LockMode.PESSIMISTIC_WRITE });
  await ctx.em.populate(sub, ['plan', 'user']);
  if (!subscriptionStates.can(sub, 'cancel')) return [];
  return endSubscriptionNow(ctx, sub, 'refunded');
}

/**
 * A refund made at the gateway (in its dashboard) and reported by a notification. NOTE: it is
 * taken out of the payment's funds like any refund; a full refund of a payment that still pays
 * for time to come ends that time (`cancel_reason: refunded`) as a customer's refund does, while a
 * partial one keeps the subscription, as staff's `--keep-subscription` does. Payments still
 * pending for the subscription are left to expire: their settlement would be credited to the
 * wallet (credit-unusable-settlement.ts).
 */
export async function endWhatGatewayRefundPaysBack(ctx: DataContext, payment: Payment, amount: Money, fullyRefunded: boolean): Promise<boolean> {
  const wasLive = payment.subscription ? subscriptionStates.can(payment.subscription, 'cancel') : false;
  await endWhatRefundPaysBack(ctx, payment, amount, !fullyRefunded);
  return wasLive && payment.subscription?.status === 'canceled';
}

/**
 * A settlement that arrives after the gateway's refunds of the same payment (notifications can
 * overtake each other): its period was funded net of them already, so nothing is withdrawn; but
 * when they add up to the whole payment, nothing paid for the period, which ends at once.
 */
export async function endWhatRefundsBeforeSettlementPaidBack(ctx: DataContext, payment: Payment): Promise<boolean> {
  if (!payment.subscription || compare(payment.refundedAmount, payment.grossAmount) < 0) return false;
  const wasLive = subscriptionStates.can(payment.subscription, 'cancel');
  await endRefundedTime(ctx, payment.subscription.id);
  return wasLive && payment.subscription.status === 'canceled';
}
