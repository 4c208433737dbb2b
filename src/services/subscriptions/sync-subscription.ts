import { Payment } from '../../db/entities/payment.js';
import { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { findWalletOwner } from '../wallet/find-wallet-owner.js';
import { GatewayError } from '../../gateway/errors.js';
import type { ServiceContext } from '../context.js';
import { applyStatusAnswer } from '../gateway-events/gateway-answers.js';
import { eventFromTransaction } from '../gateway-events/gateway-event.js';
import { answerAboutPaid, lookbackCutoff, settledPaymentsSince, unchangedAtGateway } from '../gateway-events/settled-lookback.js';
import { awaitsFreePeriodCard, confirmTrialCard } from './confirm-trial-card.js';
import { findOwnSubscription, loadSubscription } from './find-subscription.js';

export interface PaymentSyncResult {
  order_id: string;
  gateway_status: string | null;
  /** What the webhook pipeline made of the answer (`processed`, `duplicate`, `failed`…), or `unknown_at_gateway`. */
  outcome: string;
  error: string | null;
  changes: string[];
}

/**
 * Asks the gateway for the status of each of the subscription's pending payments, and of those
 * settled within RECONCILE_LOOKBACK_DAYS (a reversal, refund or chargeback whose notification was
 * lost; docs/gateway.md), and applies the answers like webhook notifications (logged with
 * `source: sync`; a settled one the gateway still holds as we recorded it is `unchanged` and
 * records nothing). Works for any subscription; callers scope it to a user.
 */
export async function syncSubscriptionPayments(ctx: ServiceContext, subscriptionId: string): Promise<PaymentSyncResult[]> {
  const pending = await ctx.em.fork().find(
    Payment,
    { subscription: subscriptionId, status: 'pending', paymentType: { $ne: 'wallet' } },
    { orderBy: { createdAt: 'asc' } },
  );
  const cutoff = lookbackCutoff(ctx);
  const settled = cutoff
    ? await ctx.em.fork().find(Payment, { $and: [settledPaymentsSince(cutoff), { subscription: subscriptionId }] }, { orderBy: { paidAt: 'asc' } })
    : [];
  const results: PaymentSyncResult[] = [];
  for (const payment of [...pending, ...settled]) {
    let tx;
    try {
      tx = await ctx.gateway.status(payment.orderId);
    } catch (err) {
      // A charge that timed out before reaching the gateway: nothing to apply; it stays pending.
      if (err instanceof GatewayError && err.kind === 'not_found') {
        results.push({ order_id: payment.orderId, gateway_status: null, outcome: 'unknown_at_gateway', changes: [], error: null });
        continue;
      }
      throw err;
    }
    if (payment.status !== 'pending') tx = answerAboutPaid(tx, payment.paidAt);
    if (payment.status !== 'pending' && (await unchangedAtGateway(ctx, eventFromTransaction(tx)))) {
      results.push({ order_id: payment.orderId, gateway_status: tx.transactionStatus, outcome: 'unchanged', changes: [], error: null });
      continue;
    }
    const outcome = await applyStatusAnswer(ctx, payment.id, tx);
    results.push({ order_id: payment.orderId, gateway_status: tx.transactionStatus, outcome: outcome.result, changes: outcome.changes, error: outcome.error });
  }
  return results;
}

/** `GET /subscriptions/{id}/sync/`: syncs one of the user's subscriptions and returns it. */
export async function syncSubscription(ctx: ServiceContext, user: User, id: string): Promise<Subscription> {
  const own = await findOwnSubscription(ctx.em.fork(), user, id);
  // A trial waiting for its card's 3-D Secure (or whose card hold is still to be released), or a
  // free first period whose card is still to be saved.
  if (own.status === 'pending' || (own.status === 'trialing' && own.paymentType === 'credit_card') || awaitsFreePeriodCard(own)) await confirmTrialCard(ctx, id);
  await syncSubscriptionPayments(ctx, id);
  return loadSubscription(ctx.em, id);
}

export interface SyncAllResult {
  subscription_id: string;
  username: string;
  status_before: string;
  status_after: string;
  /** `synced`; `failed` when a gateway answer could not be applied; `gateway_error` when the gateway did not answer. */
  result: 'synced' | 'failed' | 'gateway_error';
  payments: PaymentSyncResult[];
  error: string | null;
}

/**
 * The operator's reconciliation (`billing-admin subscriptions sync`): syncs every subscription
 * with a pending gateway payment, optionally of one user (id or username). One failure does not
 * stop the others; it is reported.
 */
export async function syncAllSubscriptions(
  ctx: ServiceContext,
  filter: { user?: string } = {},
  progress?: (item: SyncAllResult, index: number, total: number) => void,
): Promise<SyncAllResult[]> {
  const where: Record<string, unknown> = { status: 'pending', paymentType: { $ne: 'wallet' }, subscription: { $ne: null } };
  // A user the operator names must exist: "nothing to sync" for a typo would hide it (exit 4).
  if (filter.user) where.user = { id: (await findWalletOwner(ctx, filter.user)).id };
  const payments = await ctx.em.fork().find(Payment, where, { populate: ['subscription', 'user'], orderBy: { createdAt: 'asc' } });
  const subscriptions = new Map<string, { username: string; statusBefore: string }>();
  for (const p of payments) if (p.subscription) subscriptions.set(p.subscription.id, { username: p.user.username, statusBefore: p.subscription.status });

  const results: SyncAllResult[] = [];
  for (const [subscriptionId, { username, statusBefore }] of subscriptions) {
    let synced: PaymentSyncResult[] = [];
    let result: SyncAllResult['result'] = 'synced';
    let error: string | null = null;
    try {
      synced = await syncSubscriptionPayments(ctx, subscriptionId);
      const failed = synced.find((r) => r.outcome === 'failed');
      if (failed) [result, error] = ['failed', failed.error];
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      [result, error] = ['gateway_error', err.message];
    }
    const sub = await loadSubscription(ctx.em, subscriptionId);
    const item = { subscription_id: subscriptionId, username, status_before: statusBefore, status_after: sub.status, result, payments: synced, error };
    results.push(item);
    progress?.(item, results.length - 1, subscriptions.size);
  }
  return results;
}

