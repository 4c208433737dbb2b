import { LockMode } from '@mikro-orm/core';
import { Subscription, type RenewalFailure } from '../../db/entities/subscription.js';
import { WebhookLog } from '../../db/entities/webhook-log.js';
import { GatewayError, merchantSideFailure } from '../../gateway/errors.js';
import type { Actor } from '../audit/actor.js';
import { recordAuditEvent } from '../audit/record-audit-event.js';
import type { DataContext } from '../context.js';
import { retryingTransaction } from '../shared/retrying-transaction.js';

/*
 * Why a renewal charge failed is kept on the subscription (`last_renewal_failure`) until a
 * renewal succeeds, and each failure is an audit event by the billing run's actor: the reason
 * must outlive the run's output, for the customer, support staff and the dunning that follows
 * (docs/billing.md, "When a renewal fails").
 */

export type RenewalFailureCode = 'card_declined' | 'payment_method_required' | 'insufficient_funds' | 'gateway_error' | 'gateway_unavailable';

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

/**
 * Keeps the failure on the subscription and records it in the audit trail (one event, the
 * reason with it), in one transaction.
 */
export async function recordRenewalFailure(ctx: DataContext, subscriptionId: string, failure: RenewalFailure, actor: Actor): Promise<void> {
  await retryingTransaction(ctx.em, async (em) => {
    const sub = await em.findOne(Subscription, { id: subscriptionId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!sub) return;
    const before = sub.lastRenewalFailure;
    sub.lastRenewalFailure = failure;
    await recordAuditEvent({ em }, actor, {
      action: 'subscription.renewal_failed',
      target: { type: 'subscription', id: subscriptionId },
      reason: `${failure.code}: ${failure.message}`,
      changes: { last_renewal_failure: [before, failure] },
    });
  });
}

/** A renewal succeeded: the last failure no longer stands. */
export async function clearRenewalFailure(ctx: DataContext, subscriptionId: string): Promise<void> {
  await ctx.em.fork().nativeUpdate(Subscription, { id: subscriptionId, lastRenewalFailure: { $ne: null } }, { lastRenewalFailure: null });
}
