import type { FilterQuery } from '@mikro-orm/core';
import { Payment } from '../../db/entities/payment.js';
import { Topup } from '../../db/entities/topup.js';
import type { WebhookLog } from '../../db/entities/webhook-log.js';
import { GatewayError } from '../../gateway/errors.js';
import type { ServiceContext } from '../context.js';
import { eventFromTransaction } from '../payments/gateway-event.js';
import { previewGatewayEvent, recordAndApplyGatewayEvent, type NotificationResult } from './process-notification.js';

export interface ReconcileInput {
  /** Only payments and top-ups created at or after this time. */
  since?: Date;
  /** At most this many, oldest first. */
  limit?: number;
  dryRun?: boolean;
}

export type ReconcileResult =
  | NotificationResult
  | 'would_process'
  /** The gateway does not know the order (a charge that never reached it). */
  | 'not_found'
  /** The gateway could not be asked. */
  | 'gateway_error';

export interface ReconcileItem {
  kind: 'payment' | 'topup';
  id: string;
  orderId: string;
  statusBefore: string;
  statusAfter: string;
  /** transaction_status as the gateway reported it, or null when it could not tell. */
  gatewayStatus: string | null;
  result: ReconcileResult;
  changes: string[];
  error: string | null;
  /** The `sync` webhook log the answer was recorded as (null on dry runs and gateway errors). */
  log: WebhookLog | null;
}

interface Candidate {
  kind: 'payment' | 'topup';
  id: string;
  orderId: string;
  status: string;
  createdAt: Date;
}

async function candidates(ctx: ServiceContext, input: ReconcileInput): Promise<Candidate[]> {
  // Not final: still pending, or a charge (or a cancel) whose answer we never got.
  const where = {
    $or: [{ status: 'pending' as const }, { outcomeUnknown: true }],
    ...(input.since ? { createdAt: { $gte: input.since } } : {}),
  };
  const options = { orderBy: { createdAt: 'asc' as const }, ...(input.limit ? { limit: input.limit } : {}) };
  const payments = await ctx.em.find(Payment, where as FilterQuery<Payment>, options);
  const topups = await ctx.em.find(Topup, where as FilterQuery<Topup>, options);
  const all: Candidate[] = [
    ...payments.map((p) => ({ kind: 'payment' as const, id: p.id, orderId: p.orderId, status: p.status, createdAt: p.createdAt })),
    ...topups.map((t) => ({ kind: 'topup' as const, id: t.id, orderId: t.orderId, status: t.status, createdAt: t.createdAt })),
  ].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  return input.limit ? all.slice(0, input.limit) : all;
}

async function currentStatus(ctx: ServiceContext, c: Candidate): Promise<string> {
  const em = ctx.em.fork();
  const row = c.kind === 'payment' ? await em.findOne(Payment, c.id) : await em.findOne(Topup, c.id);
  return row?.status ?? c.status;
}

/**
 * Reconciliation (`billing-admin payments sync`): asks the gateway for every payment and top-up
 * that is not final and applies what it says through the webhook pipeline as a `sync` log, so a
 * lost or failed notification is made good exactly once (a status already applied is a duplicate).
 */
export async function reconcilePayments(
  ctx: ServiceContext,
  input: ReconcileInput = {},
  onProgress?: (item: ReconcileItem, index: number, total: number) => void,
): Promise<ReconcileItem[]> {
  const list = await candidates(ctx, input);
  const items: ReconcileItem[] = [];
  for (const [index, c] of list.entries()) {
    const base = { kind: c.kind, id: c.id, orderId: c.orderId, statusBefore: c.status, statusAfter: c.status, changes: [] as string[], log: null };
    let item: ReconcileItem;
    try {
      let answer = await ctx.gateway.status(c.orderId);
      // NOTE: a payment we canceled whose cancel never reached the gateway is still payable
      // there: cancel it now, and apply what the gateway answers like any status.
      if (!input.dryRun && c.kind === 'payment' && c.status === 'canceled' && answer.transactionStatus === 'pending') {
        answer = await ctx.gateway.cancel(c.orderId);
      }
      const event = eventFromTransaction(answer);
      if (input.dryRun) {
        const preview = await previewGatewayEvent(ctx, event);
        item = { ...base, gatewayStatus: event.transactionStatus, result: preview.result, error: preview.error };
      } else {
        const outcome = await recordAndApplyGatewayEvent(ctx, { event, source: 'sync' });
        item = {
          ...base,
          statusAfter: await currentStatus(ctx, c),
          gatewayStatus: event.transactionStatus,
          result: outcome.result,
          changes: outcome.changes,
          error: outcome.error,
          log: outcome.log,
        };
      }
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      const notFound = err.kind === 'not_found';
      item = { ...base, gatewayStatus: null, result: notFound ? 'not_found' : 'gateway_error', error: `gateway ${err.kind}: ${err.message}` };
    }
    items.push(item);
    onProgress?.(item, index, list.length);
  }
  return items;
}
