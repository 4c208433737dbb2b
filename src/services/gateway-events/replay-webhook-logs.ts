import { rehearse } from '../common/rehearse.js';
import type { EntityManager } from '@mikro-orm/knex';
import type { WebhookLog, WebhookLogStatus } from '../../db/entities/webhook-log.js';
import { ValidationError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';
import { getWebhookLog, listWebhookLogs } from './list-webhook-logs.js';
import { processRecordedNotification, REPLAYABLE_STATUSES, type NotificationOutcome, type NotificationResult } from './process-notification.js';

/**
 * What a dry run says a real replay would do: `would_process` (it would be processed, with
 * `changes`), `would_fail` (it would stay failed, with the `error`), or the real outcome's own
 * name (`duplicate`, `invalid`, `unreadable`, `skipped`).
 */
export type ReplayPreview = 'would_process' | 'would_fail' | Exclude<NotificationResult, 'processed' | 'failed'>;

function asPreview(result: NotificationResult): ReplayPreview {
  return result === 'processed' ? 'would_process' : result === 'failed' ? 'would_fail' : result;
}

/** Thrown at the end of a dry run to roll back everything it rehearsed. */

export interface ReplayInput {
  /** Replay exactly these logs (filters are ignored). */
  ids?: string[];
  /** Without ids: logs in these statuses (default `failed`); only received, failed and invalid can be replayed. */
  statuses?: WebhookLogStatus[];
  since?: Date;
  until?: Date;
  dryRun?: boolean;
}

export interface ReplayItem {
  /** The log after the replay (as it is, unchanged, on a dry run). */
  log: WebhookLog;
  previousStatus: WebhookLogStatus;
  result: NotificationResult | ReplayPreview;
  changes: string[];
  error: string | null;
}

/**
 * Support staff's replay: runs steps 2-5 of the webhook again on stored payloads with the
 * current server key, oldest first (the order the gateway sent them), updating each log row in
 * place (see process-notification.ts). Safe to run twice: a processed log is skipped, and a
 * notification processed meanwhile through another log becomes `duplicate`.
 */
export async function replayWebhookLogs(
  ctx: DataContext,
  input: ReplayInput,
  onProgress?: (item: ReplayItem, index: number, total: number) => void,
): Promise<ReplayItem[]> {
  const statuses = input.statuses ?? ['failed'];
  const refused = statuses.filter((s) => !REPLAYABLE_STATUSES.includes(s));
  if (refused.length > 0) {
    throw new ValidationError([{ field: 'status', message: `only ${REPLAYABLE_STATUSES.join(', ')} logs can be replayed` }]);
  }
  let logs: WebhookLog[];
  if (input.ids?.length) {
    // Every id is checked before anything is replayed.
    logs = [];
    for (const id of input.ids) logs.push(await getWebhookLog(ctx, id));
    logs.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  } else {
    logs = await listWebhookLogs(ctx, { statuses, since: input.since, until: input.until, order: 'oldest' });
  }

  const items: ReplayItem[] = [];
  const replay = async (data: DataContext, after: (log: WebhookLog, outcome: NotificationOutcome) => ReplayItem) => {
    for (const [index, log] of logs.entries()) {
      const item = after(log, await processRecordedNotification(data, log.id));
      items.push(item);
      onProgress?.(item, index, logs.length);
    }
  };
  if (!input.dryRun) {
    await replay(ctx, (log, outcome) => ({ log: outcome.log, previousStatus: log.status, result: outcome.result, changes: outcome.changes, error: outcome.error }));
    return items;
  }
  // NOTE: a dry run runs the very same processing, in order, inside one transaction that it rolls
  // back: each log sees what the logs before it would have done (a duplicate of an earlier one,
  // an order settled by it), so its answer is the real replay's. While it runs it holds the locks
  // a replay would take (on SQLite, the write lock: src/services/common/rehearse.ts).
  await rehearse(ctx.em as EntityManager, 'webhook_logs', (tx) =>
    replay({ ...ctx, em: tx }, (log, outcome) => ({
      log,
      previousStatus: log.status,
      result: asPreview(outcome.result),
      changes: outcome.changes,
      error: outcome.error,
    })),
  );
  return items;
}
