import { WebhookLog, type WebhookLogStatus } from '../../db/entities/webhook-log.js';
import { ValidationError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';

/**
 * Statuses whose logs `webhooks prune` may delete: the final ones that no one has to act on.
 * NOTE: never `received` (not yet processed) or `failed` (money may still be owed to it; a
 * replay must find it). `invalid` and `ignored` are replayable, but a notification nobody
 * replayed in the retention period is evidence only, and `payments sync` asks the gateway about
 * every order we still wait for; they are also what a flood of forged bodies leaves behind.
 */
export const PRUNABLE_STATUSES: readonly WebhookLogStatus[] = ['processed', 'duplicate', 'invalid', 'ignored'];

/** Rows deleted per statement, so that a huge table is never locked by one long delete. */
export const PRUNE_BATCH_SIZE = 1000;

const UNIT_MS = { d: 86_400_000, h: 3_600_000 } as const;

/** An age such as `90d` or `12h` in milliseconds; anything else is a validation error. */
export function parseAge(text: string, field = 'older_than'): number {
  const match = /^\s*(\d{1,6})\s*([dh])\s*$/i.exec(text);
  const amount = match ? Number(match[1]) : 0;
  if (!match || amount < 1) {
    throw new ValidationError([{ field, message: `must be a whole number of days or hours above 0, such as 90d or 12h; got "${text}"` }]);
  }
  return amount * UNIT_MS[match[2].toLowerCase() as keyof typeof UNIT_MS];
}

export interface PruneResult {
  /** Logs created before this time were candidates. */
  before: Date;
  statuses: readonly WebhookLogStatus[];
  /** Deleted, or with `dryRun` that would be. */
  count: number;
  dryRun: boolean;
}

/**
 * Deletes webhook logs in a final, settled status (PRUNABLE_STATUSES) created more than
 * `olderThanMs` ago, a batch at a time; each delete repeats the conditions, so a log that a
 * replay moved to `failed` meanwhile is kept. With `dryRun`, counts them and deletes nothing.
 */
export async function pruneWebhookLogs(
  ctx: DataContext,
  input: { olderThanMs: number; dryRun?: boolean; batchSize?: number },
  onBatch?: (deletedSoFar: number) => void,
): Promise<PruneResult> {
  const before = new Date(ctx.clock.now().getTime() - input.olderThanMs);
  const where = { status: { $in: [...PRUNABLE_STATUSES] }, createdAt: { $lt: before } };
  const result = { before, statuses: PRUNABLE_STATUSES, dryRun: Boolean(input.dryRun) };
  if (input.dryRun) return { ...result, count: await ctx.em.fork().count(WebhookLog, where) };

  const batchSize = input.batchSize ?? PRUNE_BATCH_SIZE;
  let count = 0;
  for (;;) {
    const em = ctx.em.fork();
    const batch = await em.find(WebhookLog, where, { fields: ['id'], limit: batchSize, orderBy: { createdAt: 'asc', id: 'asc' } });
    if (batch.length === 0) break;
    count += await em.nativeDelete(WebhookLog, { ...where, id: { $in: batch.map((l) => l.id) } });
    onBatch?.(count);
    if (batch.length < batchSize) break;
  }
  return { ...result, count };
}
