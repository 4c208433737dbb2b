import { LockMode, type FilterQuery } from '@mikro-orm/core';
import { performance } from 'node:perf_hooks';
import { DeliveryAttempt } from '../../db/entities/delivery-attempt.js';
import { Notification, type NotificationChannel } from '../../db/entities/notification.js';
import { notificationStates } from '../../domain/states/notification-states.js';
import type { DataContext } from '../context.js';
import type { RenderPdf } from '../documents/document-renderer.js';
import { receiptDocumentFor } from '../documents/receipt-document.js';
import type { DeliveryChannels } from './channels.js';
import { loggableMessage } from '../../db/loggable-error.js';
import { retryable, type SendOutcome } from './send-outcome.js';

/** `renderPdf`: how receipts' PDFs are rendered (the server's worker pool; in this thread when absent). */
export type DeliveryContext = DataContext & { channels: DeliveryChannels; renderPdf?: RenderPdf };

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * NOTE: the waits before each retry. Webhooks keep trying for more than a day (1m … 24h, about
 * 45 hours in all, 8 attempts) so that a merchant's outage over a weekend night loses nothing;
 * an email is worth less once it is late, so it gives up after 6 attempts over about 8.6 hours.
 */
export const RETRY_DELAYS_MS: Record<Exclude<NotificationChannel, 'in_app'>, readonly number[]> = {
  email: [1 * MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR],
  webhook: [1 * MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR, 12 * HOUR, 24 * HOUR],
};

/**
 * How long a claimed entry is reserved for the worker sending it. Much longer than any send may
 * take (SMTP timeouts, the webhook timeout), so a lease only runs out when a worker died, and the
 * entry is then picked up again rather than lost.
 */
const LEASE_MS = 5 * MINUTE;
const BATCH = 50;
const PARALLEL_SENDS = 4;

export interface DeliveryReport {
  delivered: string[];
  /** Failed this time, retried later. */
  retrying: string[];
  /** Failed for good (permanent error or retries used up). */
  failed: string[];
  /** Why each entry of `retrying` and `failed` was not delivered (the SMTP or HTTP answer). */
  errors: Record<string, string>;
}

type Result = 'delivered' | 'retrying' | 'failed' | 'lost';

function configuredChannels(ctx: DeliveryContext): ('email' | 'webhook')[] {
  return (['email', 'webhook'] as const).filter((c) => ctx.channels[c] !== null);
}

/**
 * Takes an entry for this worker with a compare-and-set on (nextAttemptAt, attempts): of several
 * workers (processes) that saw the same due entry, exactly one UPDATE matches, so no entry is
 * sent twice at once. The attempt is counted here, before sending, so an entry whose sending
 * kills the process still runs out of attempts. NOTE: the claim clears `lastError`, so that a
 * queued entry with an error is one waiting for its retry, never one being sent now: `deliver
 * --now` takes only those (a failed attempt writes its error back when it settles).
 */
async function claim(ctx: DeliveryContext, entry: Notification): Promise<Date | null> {
  const leaseUntil = new Date(ctx.clock.now().getTime() + Math.max(LEASE_MS, 3 * ctx.config.outboundWebhookTimeoutMs));
  const updated = await ctx.em.fork().nativeUpdate(
    Notification,
    { id: entry.id, status: 'queued', nextAttemptAt: entry.nextAttemptAt, attempts: entry.attempts },
    { nextAttemptAt: leaseUntil, attempts: entry.attempts + 1, lastError: null },
  );
  return updated === 1 ? leaseUntil : null;
}

/** Records the attempt and moves the entry on: sent, retried later with backoff, or failed. */
async function settle(ctx: DeliveryContext, id: string, leaseUntil: Date, attemptedAt: Date, durationMs: number, outcome: SendOutcome): Promise<Result> {
  return ctx.em.fork().transactional(async (em) => {
    const entry = await em.findOne(Notification, id, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!entry) return 'lost';
    em.create(DeliveryAttempt, {
      notification: entry,
      attemptedAt,
      outcome: outcome.ok ? 'delivered' : 'failed',
      httpStatus: outcome.httpStatus,
      error: outcome.error,
      durationMs: Math.round(durationMs),
    } as DeliveryAttempt);
    // Someone else holds the entry now (the lease ran out, or support redelivered it): the
    // attempt is on record, the entry is theirs to move.
    if (entry.status !== 'queued' || entry.nextAttemptAt?.getTime() !== leaseUntil.getTime()) return 'lost';

    const now = ctx.clock.now();
    if (outcome.ok) {
      entry.lastError = null;
      entry.nextAttemptAt = null;
      notificationStates.apply(entry, 'mark_sent', now);
      return 'delivered';
    }
    entry.lastError = outcome.error;
    const delays = RETRY_DELAYS_MS[entry.channel as 'email' | 'webhook'] ?? [];
    const delay = outcome.permanent ? undefined : delays[entry.attempts - 1];
    if (delay === undefined) {
      entry.nextAttemptAt = null;
      notificationStates.apply(entry, 'mark_failed', now);
      return 'failed';
    }
    entry.nextAttemptAt = new Date(now.getTime() + delay);
    return 'retrying';
  });
}

async function deliverOne(ctx: DeliveryContext, candidate: Notification): Promise<{ result: Result; error: string | null } | null> {
  const leaseUntil = await claim(ctx, candidate);
  if (!leaseUntil) return null;
  const entry = await ctx.em.fork().findOneOrFail(Notification, candidate.id, { populate: ['user'] });
  const sender = ctx.channels[entry.channel as 'email' | 'webhook'];
  const attemptedAt = ctx.clock.now();
  const started = performance.now();
  let outcome: SendOutcome;
  try {
    // Inside the try: a database that fails this lookup makes a retried attempt like any other.
    const document = sender ? await receiptDocumentFor(ctx, entry, ctx.renderPdf) : null;
    outcome = sender ? await sender.send(entry, attemptedAt, document) : retryable(`the ${entry.channel} channel is not configured`);
  } catch (err) {
    // A bug in a sender must not strand the entry: it is an attempt like any other.
    outcome = retryable(`unexpected error: ${loggableMessage(err)}`);
  }
  const result = await settle(ctx, entry.id, leaseUntil, attemptedAt, performance.now() - started, outcome);
  return { result, error: outcome.ok ? null : (outcome.error ?? 'no reason given') };
}

/**
 * One delivery pass: sends every `email` and `webhook` entry that is queued and due (for the
 * channels this process has configuration for), a few at a time, until none is left, `limit`
 * entries were tried or `signal` aborts (sends under way finish first). Safe to run in several
 * processes at once. With `now`, entries backed off after a failed attempt are tried at once too,
 * whatever their next attempt time (`billing-admin notifications deliver --now`, once the SMTP
 * server or the webhook receiver is back); each is tried once per pass.
 */
export async function deliverDueNotifications(
  ctx: DeliveryContext,
  input: { ids?: string[]; limit?: number; signal?: AbortSignal; now?: boolean } = {},
): Promise<DeliveryReport> {
  const report: DeliveryReport = { delivered: [], retrying: [], failed: [], errors: {} };
  const triedIds: string[] = [];
  const channels = configuredChannels(ctx);
  if (channels.length === 0 || input.ids?.length === 0) return report;
  const limit = input.limit ?? Number.POSITIVE_INFINITY;
  let tried = 0;

  const stopped = () => input.signal?.aborted === true;
  while (tried < limit && !stopped()) {
    const due: FilterQuery<Notification> = input.now
      ? { $or: [{ nextAttemptAt: { $lte: ctx.clock.now() } }, { lastError: { $ne: null } }] }
      : { nextAttemptAt: { $lte: ctx.clock.now() } };
    const where: FilterQuery<Notification> = { channel: { $in: channels }, status: 'queued', ...due };
    if (input.ids) where.id = { $in: input.ids };
    // A forced pass tries each entry once: one that fails again is backed off with an error.
    if (input.now && triedIds.length > 0) where.$and = [{ id: { $nin: triedIds } }];
    const batch = await ctx.em.fork().find(Notification, where, {
      orderBy: [{ nextAttemptAt: 'asc' }, { id: 'asc' }],
      limit: Math.min(BATCH, limit - tried),
    });
    if (batch.length === 0) break;

    let next = 0;
    let claimedAny = false;
    const lane = async () => {
      while (next < batch.length && !stopped()) {
        const candidate = batch[next++];
        triedIds.push(candidate.id);
        const attempt = await deliverOne(ctx, candidate);
        if (attempt === null) continue;
        claimedAny = true;
        tried += 1;
        if (attempt.result === 'lost') continue;
        report[attempt.result].push(candidate.id);
        if (attempt.error !== null) report.errors[candidate.id] = attempt.error;
      }
    };
    // Every lane finishes its send before a failure (the database going away) is reported.
    const lanes = await Promise.allSettled(Array.from({ length: Math.min(PARALLEL_SENDS, batch.length) }, lane));
    const broken = lanes.find((l): l is PromiseRejectedResult => l.status === 'rejected');
    if (broken) throw broken.reason;
    // Every due entry went to other workers: they are ahead of us, let them finish.
    if (!claimedAny) break;
  }
  return report;
}
