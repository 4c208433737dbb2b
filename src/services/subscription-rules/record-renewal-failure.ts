import { LockMode } from '@mikro-orm/core';
import { Subscription, type RenewalFailure } from '../../db/entities/subscription.js';
import { WebhookLog } from '../../db/entities/webhook-log.js';
import { GatewayError, merchantSideFailure } from '../../gateway/errors.js';
import type { Actor } from '../audit/actor.js';
import { recordAuditEvent } from '../audit/record-audit-event.js';
import type { DataContext } from '../context.js';
import { retryingTransaction } from '../common/retrying-transaction.js';

/*
 * Why a renewal charge failed is kept on the subscription (`last_renewal_failure`) until its
 * renewal is paid (by the pass, or by the customer's own payment: whatSettlementBuys says when a
 * settlement pays a renewal), and each failure is an audit event by the billing run's actor, or
 * by the service itself when the gateway reports the failure later (a renewal payment the pass
 * left pending, denied or expired by notification or found so by a sync): the reason
 * must outlive the run's output, for the customer, support staff and the dunning that follows
 * (docs/billing.md, "When a renewal fails").
 */

export type RenewalFailureCode = 'card_declined' | 'payment_method_required' | 'insufficient_funds' | 'gateway_error' | 'gateway_unavailable' | 'payment_expired' | 'payment_failed';

export function renewalFailure(at: Date, code: RenewalFailureCode, message: string): RenewalFailure {
  return { at: at.toISOString(), code, message };
}

/** A card subscription with no saved card: nothing can be charged without the customer. */
export function noSavedCard(at: Date): RenewalFailure {
  return renewalFailure(
    at,
    'payment_method_required',
    'No saved card to charge: the card was never saved or was forgotten (after a chargeback, for instance); the customer must pay with a new payment method.',
  );
}

/** A charge the gateway did not take: a refused card is the customer's, anything else the gateway's or ours. */
export function failureOfGatewayError(at: Date, err: GatewayError): RenewalFailure {
  if (err.kind === 'denied_token') return renewalFailure(at, 'card_declined', `The gateway refused the saved card: ${err.message}`);
  const merchant = merchantSideFailure(err);
  if (merchant === 'gateway_unavailable') return renewalFailure(at, 'gateway_unavailable', `The gateway could not take the charge: ${err.message}`);
  return renewalFailure(at, 'gateway_error', `The gateway refused the charge: ${err.message}`);
}

/**
 * A renewal charge the gateway answered `deny`, with the gateway's reason as its answer gave it
 * (the charge answer is kept as a webhook log of source `charge`).
 */
export async function declinedCharge(ctx: Pick<DataContext, 'em'>, orderId: string, at: Date): Promise<RenewalFailure> {
  const log = await ctx.em.fork().findOne(WebhookLog, { orderId, source: 'charge' }, { orderBy: { createdAt: 'desc' } });
  let reason = 'declined by the gateway';
  try {
    const body = log ? (JSON.parse(log.payload) as Record<string, unknown>) : {};
    const parts = [body['status_message'], body['channel_response_message']].filter((p): p is string => typeof p === 'string' && p !== '');
    if (parts.length > 0) reason = parts.join(': ');
  } catch {
    // An unreadable log keeps the plain reason.
  }
  return renewalFailure(at, 'card_declined', `The card was declined (order ${orderId}): ${reason}`);
}

/** What the gateway's later word on a pending renewal payment means (null: not a failure of the renewal). */
const FAILURE_BY_STATUS: Record<string, { code: RenewalFailureCode; what: string }> = {
  deny: { code: 'card_declined', what: 'was declined' },
  expire: { code: 'payment_expired', what: 'expired unpaid' },
  failure: { code: 'payment_failed', what: 'failed at the gateway' },
};

/**
 * A renewal payment the pass left pending (3-D Secure, a bank transfer) that the gateway later
 * reports `deny`, `expire` or `failure`, with the gateway's words when it gave any. A `cancel`
 * is not one: it is our own withdrawal, or the merchant's.
 */
export function failureOfLatePaymentStatus(at: Date, status: string, orderId: string, raw: Record<string, unknown>): RenewalFailure | null {
  const known = FAILURE_BY_STATUS[status];
  if (!known) return null;
  const words = [raw['status_message'], raw['channel_response_message']].filter((p): p is string => typeof p === 'string' && p !== '');
  return renewalFailure(at, known.code, `The renewal payment (order ${orderId}) ${known.what}${words.length > 0 ? `: ${words.join(': ')}` : ''}`);
}

/** The service itself, applying what the gateway reported (a notification, a sync's status answer). */
export const gatewayReportActor: Actor = { type: 'system', id: 'gateway-events', name: 'system', requestId: null };

/**
 * Keeps the failure on a subscription the caller has locked, and records it in the audit trail
 * (one event, the reason with it), in the caller's transaction.
 */
export async function keepRenewalFailure(em: DataContext['em'], sub: Subscription, failure: RenewalFailure, actor: Actor): Promise<void> {
  const before = sub.lastRenewalFailure;
  sub.lastRenewalFailure = failure;
  await recordAuditEvent({ em }, actor, {
    action: 'subscription.renewal_failed',
    target: { type: 'subscription', id: sub.id },
    reason: `${failure.code}: ${failure.message}`,
    changes: { last_renewal_failure: [before, failure] },
  });
}

/** keepRenewalFailure in a transaction of its own (the billing pass, after its step). */
export async function recordRenewalFailure(ctx: DataContext, subscriptionId: string, failure: RenewalFailure, actor: Actor): Promise<void> {
  await retryingTransaction(ctx.em, async (em) => {
    const sub = await em.findOne(Subscription, { id: subscriptionId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (sub) await keepRenewalFailure(em, sub, failure, actor);
  });
}

/** A renewal succeeded: the last failure no longer stands. */
export async function clearRenewalFailure(ctx: DataContext, subscriptionId: string): Promise<void> {
  await ctx.em.fork().nativeUpdate(Subscription, { id: subscriptionId, lastRenewalFailure: { $ne: null } }, { lastRenewalFailure: null });
}
