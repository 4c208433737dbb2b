import type { WebhookLog, WebhookLogStatus } from '../../db/entities/webhook-log.js';
import { ValidationError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';
import { getWebhookLog, listWebhookLogs } from './list-webhook-logs.js';
import {
  previewRecordedNotification,
  processRecordedNotification,
  REPLAYABLE_STATUSES,
  type NotificationPreview,
  type NotificationResult,
} from './process-notification.js';

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
  /** The log after the replay (unchanged on a dry run). */
  log: WebhookLog;
  previousStatus: WebhookLogStatus;
  result: NotificationResult | NotificationPreview;
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
  for (const [index, log] of logs.entries()) {
    let item: ReplayItem;
    if (input.dryRun) {
      const preview = await previewRecordedNotification(ctx, log);
      item = { log, previousStatus: log.status, result: preview.result, changes: [], error: preview.error };
    } else {
      const outcome = await processRecordedNotification(ctx, log.id);
      item = { log: outcome.log, previousStatus: log.status, result: outcome.result, changes: outcome.changes, error: outcome.error };
    }
    items.push(item);
    onProgress?.(item, index, logs.length);
  }
  return items;
}
