import type { Command } from 'commander';
import type { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { serializeWebhookLog } from '../../src/http/serializers.js';
import { getWebhookLog, listWebhookLogs, parseWebhookLogStatuses } from '../../src/services/gateway-events/list-webhook-logs.js';
import { REPLAYABLE_STATUSES } from '../../src/services/gateway-events/process-notification.js';
import { parseAge, PRUNABLE_STATUSES, pruneWebhookLogs } from '../../src/services/gateway-events/prune-webhook-logs.js';
import { replayWebhookLogs, type ReplayItem } from '../../src/services/gateway-events/replay-webhook-logs.js';
import { startProgress } from '../progress.js';
import { CliFailure, EXIT, globalOptions, note, output, table, withServices } from '../runtime.js';
import { auditCliChange, reasonFor, withReasonUnlessDryRun } from '../audit-trail.js';

/** An ISO 8601 date or time from an option (`2026-01-15`, `2026-01-15T10:00:00Z`). */
export function parseTime(value: string | undefined, option: string): Date | undefined {
  if (value === undefined) return undefined;
  const at = /^\d{4}-\d{2}-\d{2}/.test(value) ? new Date(value) : new Date(NaN);
  if (Number.isNaN(at.getTime())) throw new CliFailure(`${option} must be an ISO 8601 date or time, got "${value}"`, EXIT.usage);
  return at;
}

export function parseLimit(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new CliFailure(`--limit must be a whole number above 0, got "${value}"`, EXIT.usage);
  return Number(value);
}

const short = (s: string | null, max = 70): string => (s === null ? '' : s.length > max ? `${s.slice(0, max - 1)}…` : s);

const LOG_COLUMNS = ['id', 'created_at', 'source', 'status', 'order_id', 'transaction_status', 'attempts', 'error'];

function logRow(l: WebhookLog): Record<string, unknown> {
  return {
    id: l.id,
    created_at: l.createdAt.toISOString(),
    source: l.source,
    status: l.status,
    order_id: l.orderId,
    transaction_status: l.transactionStatus,
    attempts: l.attempts,
    error: short(l.error),
  };
}

function describeLog(l: WebhookLog): string {
  const s = serializeWebhookLog(l);
  let payload = s.payload;
  try {
    payload = JSON.stringify(JSON.parse(s.payload), null, 2);
  } catch {
    // shown as received
  }
  const fields = Object.entries(s)
    .filter(([k]) => k !== 'payload')
    .map(([k, v]) => `${k.padEnd(18)} ${v ?? ''}`);
  return [...fields, 'payload:', payload].join('\n');
}

function serializeReplay(item: ReplayItem) {
  return {
    id: item.log.id,
    previous_status: item.previousStatus,
    result: item.result,
    changes: item.changes,
    error: item.error,
    webhook_log: serializeWebhookLog(item.log),
  };
}

export function registerWebhookCommands(program: Command): void {
  const webhooks = program.command('webhooks').description('the gateway notifications received (webhook logs)');

  webhooks
    .command('list')
    .description('list webhook logs, newest first')
    .option('--status <statuses>', 'comma-separated: received, invalid, duplicate, processed, failed')
    .option('--since <time>', 'received at or after this ISO 8601 time')
    .option('--until <time>', 'received before this ISO 8601 time')
    .option('--order <orderId>', 'only this order_id')
    .option('--limit <n>', 'at most this many', '100')
    .action(async (opts, cmd: Command) => {
      const filter = {
        statuses: opts.status ? parseWebhookLogStatuses(opts.status) : undefined,
        since: parseTime(opts.since, '--since'),
        until: parseTime(opts.until, '--until'),
        orderId: opts.order as string | undefined,
        limit: parseLimit(opts.limit),
      };
      const logs = await withServices((s) => listWebhookLogs(s, filter));
      output(globalOptions(cmd), logs.map(serializeWebhookLog), () => table(logs.map(logRow), LOG_COLUMNS));
    });

  webhooks
    .command('show <id>')
    .description('one webhook log with its raw payload')
    .action(async (id: string, _opts, cmd: Command) => {
      const log = await withServices((s) => getWebhookLog(s, id));
      output(globalOptions(cmd), serializeWebhookLog(log), () => describeLog(log));
    });

  withReasonUnlessDryRun(webhooks.command('replay [ids...]'))
    .description(
      'run signature check, deduplication and processing again on stored payloads with the current server key; ' +
        'updates each log in place; safe to run twice (a processed log is skipped, an already-applied notification becomes duplicate)',
    )
    .option('--status <statuses>', `without ids: logs in these statuses (${REPLAYABLE_STATUSES.join(', ')})`, 'failed')
    .option('--since <time>', 'without ids: received at or after this ISO 8601 time')
    .option('--until <time>', 'without ids: received before this ISO 8601 time')
    .option('--dry-run', 'run the same processing in a transaction that is rolled back, and say per log what the replay would do (would_process, would_fail, duplicate, …); changes nothing')
    .action(async (ids: string[], opts, cmd: Command) => {
      const global = globalOptions(cmd);
      const reason = reasonFor(opts);
      const input = {
        ids,
        statuses: parseWebhookLogStatuses(opts.status, REPLAYABLE_STATUSES),
        since: parseTime(opts.since, '--since'),
        until: parseTime(opts.until, '--until'),
        dryRun: Boolean(opts.dryRun),
      };
      const progress = startProgress();
      const items = await withServices(async (s) => {
        const replayed = await replayWebhookLogs(s, input, (item, i, total) =>
          progress.update(i + 1, total, `${item.log.id} ${item.log.orderId ?? '-'} ${item.previousStatus} -> ${input.dryRun ? item.result : item.log.status}`),
        );
        if (!input.dryRun) {
          await auditCliChange(
            s,
            ...replayed.map((i) => ({ action: 'webhook_log.replay', target: { type: 'webhook_log', id: i.log.id }, reason, changes: { status: [i.previousStatus, i.log.status] as [unknown, unknown] } })),
          );
        }
        return replayed;
      }).finally(() => progress.finish());
      output(global, { dry_run: input.dryRun, count: items.length, results: items.map(serializeReplay) }, () =>
        items.length === 0
          ? 'Nothing to replay.'
          : table(
              items.map((i) => ({
                id: i.log.id,
                order_id: i.log.orderId,
                transaction_status: i.log.transactionStatus,
                was: i.previousStatus,
                now: i.log.status,
                result: i.result,
                detail: short(i.error ?? i.changes.join('; ')),
              })),
              ['id', 'order_id', 'transaction_status', 'was', 'now', 'result', 'detail'],
            ),
      );
      const unresolved = items.filter((i) => ['failed', 'invalid', 'unreadable'].includes(i.result));
      if (!input.dryRun && unresolved.length > 0) {
        note(`${unresolved.length} of ${items.length} still not processed.`);
        process.exitCode = EXIT.checkFailed;
      }
    });

  withReasonUnlessDryRun(webhooks.command('prune'))
    .description(`delete webhook logs older than an age whose status is final (${PRUNABLE_STATUSES.join(', ')}); never failed or received ones; in batches`)
    .requiredOption('--older-than <age>', 'created more than this long ago: days or hours, e.g. 90d or 12h')
    .option('--dry-run', 'count what would be deleted; delete nothing')
    .action(async (opts, cmd: Command) => {
      const olderThanMs = parseAge(opts.olderThan, '--older-than');
      const reason = reasonFor(opts);
      const dryRun = Boolean(opts.dryRun);
      const result = await withServices(async (s) => {
        const pruned = await pruneWebhookLogs(s, { olderThanMs, dryRun }, (n) => note(`deleted ${n} so far`));
        if (!dryRun) {
          await auditCliChange(s, { action: 'webhook_log.prune', target: { type: 'webhook_logs', id: `before ${pruned.before.toISOString()}` }, reason, changes: { deleted: [null, pruned.count] } });
        }
        return pruned;
      });
      output(globalOptions(cmd), { dry_run: result.dryRun, count: result.count, before: result.before.toISOString(), statuses: result.statuses }, () =>
        `${result.dryRun ? 'Would delete' : 'Deleted'} ${result.count} webhook log${result.count === 1 ? '' : 's'} ` +
        `(${result.statuses.join(', ')}) created before ${result.before.toISOString()}.`,
      );
    });
}
