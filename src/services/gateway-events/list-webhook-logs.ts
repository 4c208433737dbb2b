import type { FilterQuery } from '@mikro-orm/core';
import { WebhookLog, type WebhookLogStatus } from '../../db/entities/webhook-log.js';
import { NotFoundError, ValidationError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';
import { parseUuid } from '../../domain/ids.js';

export const WEBHOOK_LOG_STATUSES: readonly WebhookLogStatus[] = ['received', 'invalid', 'duplicate', 'processed', 'failed', 'ignored'];

export interface WebhookLogFilter {
  statuses?: WebhookLogStatus[];
  /** Received at or after. */
  since?: Date;
  /** Received before. */
  until?: Date;
  orderId?: string;
  limit?: number;
  /** Default newest first (for reading); replays go oldest first. */
  order?: 'newest' | 'oldest';
}

/** Reads a comma-separated status list (`failed,invalid`), refusing unknown names. */
export function parseWebhookLogStatuses(text: string, allowed: readonly WebhookLogStatus[] = WEBHOOK_LOG_STATUSES): WebhookLogStatus[] {
  const statuses = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = statuses.filter((s) => !allowed.includes(s as WebhookLogStatus));
  if (statuses.length === 0 || unknown.length > 0) {
    throw new ValidationError([{ field: 'status', message: `must be a comma-separated list of: ${allowed.join(', ')}` }]);
  }
  return statuses as WebhookLogStatus[];
}

export function webhookLogWhere(filter: WebhookLogFilter): FilterQuery<WebhookLog> {
  const where: Record<string, unknown> = {};
  if (filter.statuses?.length) where.status = { $in: filter.statuses };
  if (filter.orderId) where.orderId = filter.orderId;
  if (filter.since || filter.until) {
    where.createdAt = { ...(filter.since ? { $gte: filter.since } : {}), ...(filter.until ? { $lt: filter.until } : {}) };
  }
  return where as FilterQuery<WebhookLog>;
}

/** The webhook logs support staff look at: by status, time window and order. */
export async function listWebhookLogs(ctx: Pick<DataContext, 'em'>, filter: WebhookLogFilter = {}): Promise<WebhookLog[]> {
  const direction = filter.order === 'oldest' ? 'asc' : 'desc';
  return ctx.em.find(WebhookLog, webhookLogWhere(filter), {
    orderBy: { createdAt: direction, id: direction },
    ...(filter.limit ? { limit: filter.limit } : {}),
  });
}


/** One webhook log by id. */
export async function getWebhookLog(ctx: Pick<DataContext, 'em'>, id: string): Promise<WebhookLog> {
  // A malformed id is simply not found (PostgreSQL would otherwise reject it as a uuid).
  const canonical = parseUuid(id);
  const log = canonical ? await ctx.em.findOne(WebhookLog, { id: canonical }) : null;
  if (!log) throw new NotFoundError(`Webhook log ${id}`);
  return log;
}
