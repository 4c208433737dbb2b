import type { FilterQuery } from '@mikro-orm/core';
import type { Payment } from '../../db/entities/payment.js';
import type { Topup } from '../../db/entities/topup.js';
import type { GatewayTransaction } from '../../gateway/types.js';
import type { DataContext } from '../context.js';
import { withSettledHere } from './natural-order.js';
import type { GatewayEvent } from './gateway-event.js';
import { previewGatewayEvent } from './process-notification.js';

/*
 * What reconciliation asks the gateway about beside the non-final payments (docs/gateway.md): the
 * payments and top-ups settled within RECONCILE_LOOKBACK_DAYS, which the gateway may have
 * reversed, refunded or charged back since, with the notification lost. `payments sync`
 * (reconcile-payments.ts) and subscription sync both select them here.
 */

const DAY_MS = 24 * 60 * 60 * 1000;

/** Settled at or after this instant counts; null when the look back is off (0 days). */
export function lookbackCutoff(ctx: Pick<DataContext, 'config' | 'clock'>): Date | null {
  const days = ctx.config.reconcileLookbackDays;
  return days > 0 ? new Date(ctx.clock.now().getTime() - days * DAY_MS) : null;
}

/** Gateway payments (wallet ones never reach it) settled, wholly or partly refunded, since `cutoff`. */
export function settledPaymentsSince(cutoff: Date): FilterQuery<Payment> {
  return { status: { $in: ['settled', 'partially_refunded'] }, paymentType: { $ne: 'wallet' }, paidAt: { $gte: cutoff } };
}

/** Top-ups paid since `cutoff`. */
export function settledTopupsSince(cutoff: Date): FilterQuery<Topup> {
  return { status: 'success', paidAt: { $gte: cutoff } };
}

/**
 * The status answer about a payment or top-up we hold as paid (`paidAt`), read with that fact:
 * when the gateway now says `deny` or `cancel`, its money was taken back after we applied its
 * settlement, even if the answer does not carry settlement_time. So the reversal is applied,
 * and never hidden by the key of a failure applied before the settlement was heard
 * (natural-order.ts).
 */
export function answerAboutPaid(tx: GatewayTransaction, paidAt: Date | null): GatewayTransaction {
  if (!paidAt || (tx.transactionStatus !== 'deny' && tx.transactionStatus !== 'cancel')) return tx;
  return { ...tx, raw: withSettledHere(tx.raw, paidAt) };
}

/**
 * A settled one the gateway still holds as we recorded it: its status answer is an event already
 * processed. Nothing is recorded for it, so a daily sync over months of payments does not grow
 * the webhook log.
 */
export async function unchangedAtGateway(ctx: DataContext, event: GatewayEvent): Promise<boolean> {
  return (await previewGatewayEvent(ctx, event)).result === 'duplicate';
}
