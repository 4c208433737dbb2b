import { rehearse } from '../common/rehearse.js';
import type { FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { Payment, Refund } from '../../db/entities/payment.js';
import { Topup } from '../../db/entities/topup.js';
import type { WebhookLog } from '../../db/entities/webhook-log.js';
import { DomainError } from '../../domain/errors.js';
import { GatewayError } from '../../gateway/errors.js';
import type { ServiceContext } from '../context.js';
import { eventFromTransaction } from './gateway-event.js';
import { refundAtGateway } from '../refunds/refund-payment.js';
import { closeUnsentPayment, isPastReach } from './close-unsent-payment.js';
import { previewGatewayEvent, processRecordedNotification, recordAndApplyGatewayEvent, recordNotification, type NotificationOutcome, type NotificationResult } from './process-notification.js';
import type { GatewayEvent } from './gateway-event.js';
import { answerAboutPaid, lookbackCutoff, settledPaymentsSince, settledTopupsSince } from './settled-lookback.js';

export interface ReconcileInput {
  /** Only payments and top-ups created at or after this time. */
  since?: Date;
  /** At most this many gateway questions, oldest first (the non-final ones before the look back). */
  limit?: number;
  dryRun?: boolean;
}

export type ReconcileResult =
  | NotificationResult
  | 'would_process'
  /** Dry run: the real run's processing would fail (its error says why). */
  | 'would_fail'
  /** The gateway does not know the order (a charge that never reached it). */
  | 'not_found'
  /** The gateway could not be asked. */
  | 'gateway_error'
  /** The gateway never saw the charge and it is too old to be on its way: failed, `never_reached_gateway`. */
  | 'closed'
  /** Dry run: the real run would close it (`closed`). */
  | 'would_close'
  /** A settled payment or top-up of the look back whose status at the gateway is what we applied: nothing recorded. */
  | 'unchanged';

export interface ReconcileItem {
  /** `card_check`: a trial card's pre-authorisation (its `id` is the subscription's; reconcile-trial-cards.ts). */
  kind: 'payment' | 'topup' | 'card_check';
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
  /** A refund of it was sent to the gateway and never answered. */
  lostRefund?: boolean;
  /** Settled within the look back: asked in case the gateway moved its money since (a lost notification). */
  settled?: boolean;
  /** When we applied its settlement (look back candidates). */
  paidAt?: Date | null;
}

/** Settled payments and top-ups are read in pages of this many (memory stays flat over 120 days of them). */
const LOOKBACK_BATCH = 200;

/** What the look back selects, `--since` included (settled-lookback.ts). */
function lookbackFilters(cutoff: Date, input: ReconcileInput): { payment: FilterQuery<Payment>; topup: FilterQuery<Topup> } {
  const since = input.since ? { createdAt: { $gte: input.since } } : {};
  return { payment: { ...(settledPaymentsSince(cutoff) as object), ...since }, topup: { ...(settledTopupsSince(cutoff) as object), ...since } };
}

/**
 * The payments and top-ups settled within the look back, in pages, oldest first, keyed on
 * (paid_at, id); those already among the non-final candidates (`skip`) are left out.
 */
async function* settledWithinLookback(ctx: ServiceContext, input: ReconcileInput, skip: Set<string>): AsyncGenerator<Candidate[]> {
  const cutoff = lookbackCutoff(ctx);
  if (!cutoff) return;
  const filters = lookbackFilters(cutoff, input);
  for (const kind of ['payment', 'topup'] as const) {
    let after: { paidAt: Date; id: string } | null = null;
    for (;;) {
      const page = after ? { $or: [{ paidAt: { $gt: after.paidAt } }, { paidAt: after.paidAt, id: { $gt: after.id } }] } : {};
      const options = { orderBy: [{ paidAt: 'asc' as const }, { id: 'asc' as const }], limit: LOOKBACK_BATCH };
      const em = forkIn(ctx);
      const rows: (Payment | Topup)[] =
        kind === 'payment'
          ? await em.find(Payment, { $and: [filters.payment, page] } as FilterQuery<Payment>, options)
          : await em.find(Topup, { $and: [filters.topup, page] } as FilterQuery<Topup>, options);
      if (rows.length === 0) break;
      yield rows
        .filter((r) => !skip.has(r.id))
        .map((r) => ({ kind, id: r.id, orderId: r.orderId, status: r.status, createdAt: r.createdAt, settled: true, paidAt: r.paidAt }));
      const last = rows[rows.length - 1]!;
      after = { paidAt: last.paidAt!, id: last.id };
      if (rows.length < LOOKBACK_BATCH) break;
    }
  }
}

/** How many the look back will ask about (for progress). */
async function countSettledWithinLookback(ctx: ServiceContext, input: ReconcileInput): Promise<number> {
  const cutoff = lookbackCutoff(ctx);
  if (!cutoff) return 0;
  const filters = lookbackFilters(cutoff, input);
  const em = forkIn(ctx);
  return (await em.count(Payment, filters.payment)) + (await em.count(Topup, filters.topup));
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
  // Refunds still pending after longer than a gateway call may take: their answer was lost.
  const cutoff = new Date(ctx.clock.now().getTime() - ctx.config.gateway.timeoutMs);
  const refunds = await ctx.em.find(
    Refund,
    { status: 'pending', destination: 'gateway', createdAt: { $lt: cutoff, ...(input.since ? { $gte: input.since } : {}) } },
    { populate: ['payment'], orderBy: { createdAt: 'asc' } },
  );
  const refunding = [...new Map(refunds.map((r) => [r.payment.id, r])).values()].filter((r) => !payments.some((p) => p.id === r.payment.id));
  const all: Candidate[] = [
    ...payments.map((p) => ({ kind: 'payment' as const, id: p.id, orderId: p.orderId, status: p.status, createdAt: p.createdAt })),
    ...topups.map((t) => ({ kind: 'topup' as const, id: t.id, orderId: t.orderId, status: t.status, createdAt: t.createdAt })),
    ...refunding.map((r) => ({ kind: 'payment' as const, id: r.payment.id, orderId: r.payment.orderId, status: r.payment.status, createdAt: r.createdAt, lostRefund: true })),
  ].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  return input.limit ? all.slice(0, input.limit) : all;
}

async function currentStatus(ctx: ServiceContext, c: Candidate): Promise<string> {
  const em = forkIn(ctx);
  const row = c.kind === 'payment' ? await em.findOne(Payment, c.id) : await em.findOne(Topup, c.id);
  return row?.status ?? c.status;
}

/**
 * Sends again, under the same refund_key (the gateway's idempotency key for refunds, so never
 * twice), each gateway refund of the payment still pending. A refusal marks it failed.
 */
async function resendLostRefunds(ctx: ServiceContext, paymentId: string): Promise<{ changes: string[]; error: string | null }> {
  const pending = await forkIn(ctx).find(Refund, { payment: paymentId, status: 'pending', destination: 'gateway' }, { populate: ['payment'] });
  const changes: string[] = [];
  let error: string | null = null;
  for (const r of pending) {
    try {
      const outcome = await refundAtGateway(ctx, { refundId: r.id, paymentId, refundKey: r.refundKey, orderId: r.payment.orderId, amount: r.amount, method: r.method }, r.direct, r.reason);
      if (outcome === 'succeeded') changes.push(`refund ${r.refundKey} sent again: succeeded`);
      else error = `refund ${r.refundKey}: the gateway's answer was lost again; it stays pending`;
    } catch (err) {
      if (err instanceof GatewayError && (err.outcomeUnknown || err.kind === 'unavailable' || err.kind === 'timeout')) {
        error = `refund ${r.refundKey}: gateway ${err.kind}: ${err.message}`;
      } else if (err instanceof GatewayError || err instanceof DomainError) {
        changes.push(`refund ${r.refundKey} sent again: refused (${err.message})`);
      } else throw err;
    }
  }
  return { changes, error };
}

/**
 * Reconciliation (`billing-admin payments sync`): asks the gateway for every payment and top-up
 * that is not final, and for those settled within RECONCILE_LOOKBACK_DAYS, and applies what it
 * says through the webhook pipeline as a `sync` log, so a lost or failed notification is made
 * good exactly once (a status already applied is a duplicate). A settled one whose status is
 * the one already applied is `unchanged` and records nothing, so a daily run over months of
 * payments does not grow the webhook log.
 */
export async function reconcilePayments(
  ctx: ServiceContext,
  input: ReconcileInput = {},
  onProgress?: (item: ReconcileItem, index: number, total: number) => void,
): Promise<ReconcileItem[]> {
  if (!input.dryRun) return reconcileAll(ctx, input, onProgress);
  // NOTE: a dry run is the same reconciliation rehearsed in one transaction that is rolled back:
  // each answer is applied as the real run would apply it (so its changes, the subscription it
  // activates and the payment it settles, are the real run's), each candidate sees what the ones
  // before it did, and nothing stays. Only what would be sent to the gateway (a cancel, a refund
  // sent again) is not done, and is said instead. While it runs it holds the locks a sync would
  // take (on SQLite, the write lock: src/services/common/rehearse.ts).
  const items = await rehearse(ctx.em as EntityManager, 'webhook_logs', (tx) => reconcileAll({ ...ctx, em: tx }, input, onProgress));
  return items.map((i) => ({ ...i, log: null }));
}

/** A fresh entity manager, inside the caller's transaction when there is one (a dry run's rehearsal). */
function forkIn(ctx: ServiceContext): EntityManager {
  return ctx.em.fork({ keepTransactionContext: true }) as EntityManager;
}

const PREVIEW_OF: Partial<Record<ReconcileResult, ReconcileResult>> = { processed: 'would_process', failed: 'would_fail' };

async function reconcileAll(
  ctx: ServiceContext,
  input: ReconcileInput,
  onProgress?: (item: ReconcileItem, index: number, total: number) => void,
): Promise<ReconcileItem[]> {
  const list = await candidates(ctx, input);
  const limit = input.limit ?? Number.POSITIVE_INFINITY;
  const total = Math.min(limit, list.length + (list.length < limit ? await countSettledWithinLookback(ctx, input) : 0));
  const items: ReconcileItem[] = [];
  let asked = 0;
  const ask = async (c: Candidate) => {
    const item = await reconcileOne(ctx, c, input);
    items.push(item);
    onProgress?.(item, asked, total);
    asked += 1;
  };
  for (const c of list) {
    if (asked >= limit) return items;
    await ask(c);
  }
  for await (const batch of settledWithinLookback(ctx, input, new Set(list.map((c) => c.id)))) {
    for (const c of batch) {
      if (asked >= limit) return items;
      await ask(c);
    }
  }
  return items;
}

/**
 * A dry run's processing of one answer, inside the rehearsal's transaction: recorded as a `sync`
 * log and processed as a replay of it would be (the pipeline's steps run in the caller's
 * transaction, process-notification.ts), rolled back with the rest.
 */
async function rehearseGatewayEvent(ctx: ServiceContext, event: GatewayEvent): Promise<NotificationOutcome> {
  const log = await recordNotification(ctx, { rawPayload: JSON.stringify({ ...event.raw, order_id: event.orderId, transaction_status: event.transactionStatus }), ip: null, source: 'sync' });
  return processRecordedNotification(ctx, log.id, log);
}

async function reconcileOne(ctx: ServiceContext, c: Candidate, input: ReconcileInput): Promise<ReconcileItem> {
  const base = { kind: c.kind, id: c.id, orderId: c.orderId, statusBefore: c.status, statusAfter: c.status, changes: [] as string[], log: null };
  try {
    let answer = await ctx.gateway.status(c.orderId);
    // NOTE: a payment we canceled whose cancel never reached the gateway is still payable
    // there: cancel it now, and apply what the gateway answers like any status.
    const wouldCancel = c.kind === 'payment' && c.status === 'canceled' && answer.transactionStatus === 'pending';
    if (wouldCancel && !input.dryRun) answer = await ctx.gateway.cancel(c.orderId);
    if (c.settled) answer = answerAboutPaid(answer, c.paidAt ?? null);
    const event = eventFromTransaction(answer);
    if (c.settled) {
      // A settled one already processed is `unchanged` (unchangedAtGateway).
      const preview = await previewGatewayEvent(ctx, event);
      if (preview.result === 'duplicate') return { ...base, gatewayStatus: event.transactionStatus, result: 'unchanged', error: null };
    }
    if (input.dryRun && wouldCancel) {
      // What the gateway's cancel would answer is the gateway's to say.
      return { ...base, gatewayStatus: event.transactionStatus, result: 'would_process', changes: [`order ${c.orderId} would be canceled at the gateway, and its answer applied`], error: null };
    }
    // A dry run is inside its rehearsal's transaction (reconcilePayments): the same processing, rolled back after.
    const outcome = input.dryRun ? await rehearseGatewayEvent(ctx, event) : await recordAndApplyGatewayEvent(ctx, { event, source: 'sync' });
    // The status answer lists the refunds the gateway made (applied above); the others are sent again.
    const resent = !c.lostRefund
      ? { changes: [], error: null }
      : input.dryRun
        ? { changes: ['refunds the gateway never answered would be sent again'], error: null }
        : await resendLostRefunds(ctx, c.id);
    const result = resent.error ? 'gateway_error' : outcome.result;
    return {
      ...base,
      statusAfter: await currentStatus(ctx, c),
      gatewayStatus: event.transactionStatus,
      result: input.dryRun ? (PREVIEW_OF[result] ?? result) : result,
      changes: [...outcome.changes, ...resent.changes],
      error: resent.error ?? outcome.error,
      log: outcome.log,
    };
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    const notFound = err.kind === 'not_found';
    const item: ReconcileItem = { ...base, gatewayStatus: null, result: notFound ? 'not_found' : 'gateway_error', error: `gateway ${err.kind}: ${err.message}` };
    // A charge the gateway never saw, old enough that nobody is still sending it: closed as failed.
    if (notFound && c.kind === 'payment' && c.status === 'pending' && !c.lostRefund && isPastReach(ctx, c.createdAt)) {
      const changes = await closeUnsentPayment(ctx, c.id);
      return { ...item, result: input.dryRun ? 'would_close' : 'closed', statusAfter: await currentStatus(ctx, c), changes, error: null };
    }
    return item;
  }
}
