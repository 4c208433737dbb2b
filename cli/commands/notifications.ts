import type { Command } from 'commander';
import type { DeliveryAttempt } from '../../src/db/entities/delivery-attempt.js';
import type { Notification } from '../../src/db/entities/notification.js';
import { serializeNotification } from '../../src/http/serializers.js';
import { closeDeliveryChannels, createDeliveryChannels, type DeliveryChannels } from '../../src/services/delivery/channels.js';
import { deliverDueNotifications, type DeliveryContext } from '../../src/services/delivery/deliver-due-notifications.js';
import { getNotificationEntry, listNotificationEntries } from '../../src/services/delivery/list-notification-entries.js';
import { redeliverNotifications } from '../../src/services/delivery/redeliver-notifications.js';
import type { ServiceContext } from '../../src/services/context.js';
import { CliFailure, EXIT, globalOptions, note, output, table, withServices } from '../runtime.js';
import type { AuditChanges } from '../../src/db/entities/audit-event.js';
import { auditCliChange, withReason } from '../audit-trail.js';

/** The API's notification fields plus the delivery bookkeeping support staff need. */
function entryJson(n: Notification) {
  return {
    ...serializeNotification(n),
    user_id: n.user.id,
    username: n.user.username ?? null,
    attempts: n.attempts,
    last_error: n.lastError,
    next_attempt_at: n.nextAttemptAt?.toISOString() ?? null,
    sent_at: n.sentAt?.toISOString() ?? null,
  };
}

function attemptJson(a: DeliveryAttempt) {
  return {
    id: a.id,
    attempted_at: a.attemptedAt.toISOString(),
    outcome: a.outcome,
    http_status: a.httpStatus,
    error: a.error,
    duration_ms: a.durationMs,
  };
}

const ENTRY_COLUMNS = ['id', 'created_at', 'username', 'notification_type', 'channel', 'status', 'attempts', 'next_attempt_at', 'last_error'];

/** Runs `fn` with the senders this configuration allows, closing them afterwards. */
async function withDelivery<T>(fn: (ctx: DeliveryContext, channels: DeliveryChannels) => Promise<T>): Promise<T> {
  return withServices(async (services: ServiceContext) => {
    const channels = createDeliveryChannels(services.config);
    try {
      return await fn({ em: services.em, config: services.config, clock: services.clock, channels }, channels);
    } finally {
      closeDeliveryChannels(channels);
    }
  });
}

export function registerNotificationCommands(program: Command): void {
  const notifications = program.command('notifications').description('notification entries and their email/webhook delivery');

  notifications
    .command('list')
    .description('list notification entries of every user, newest first')
    .option('--channel <channel>', 'email, webhook or in_app')
    .option('--status <status>', 'queued, sent, read or failed')
    .option('--user <user>', 'a username or user id')
    .option('--limit <n>', 'at most this many entries', '50')
    .action(async (opts, cmd: Command) => {
      const limit = /^\d+$/.test(opts.limit) ? Number(opts.limit) : Number.NaN;
      const rows = await withServices(async (s) =>
        (await listNotificationEntries(s, { channel: opts.channel, status: opts.status, user: opts.user, limit })).map(entryJson),
      );
      output(globalOptions(cmd), rows, () => table(rows, ENTRY_COLUMNS));
    });

  notifications
    .command('show <id>')
    .description('one entry with every delivery attempt')
    .action(async (id: string, _opts, cmd: Command) => {
      const { entry, attempts } = await withServices((s) => getNotificationEntry(s, id));
      const json = { ...entryJson(entry), delivery_attempts: attempts.map(attemptJson) };
      output(globalOptions(cmd), json, () =>
        [
          table([json], ENTRY_COLUMNS),
          '',
          'Delivery attempts:',
          table(json.delivery_attempts, ['attempted_at', 'outcome', 'http_status', 'duration_ms', 'error']),
        ].join('\n'),
      );
    });

  notifications
    .command('deliver')
    .description('send every queued email and webhook entry that is due (what the server does every DELIVERY_INTERVAL_SECONDS)')
    .option('--now', 'also retry at once the entries waiting for a retry after a failed attempt (the SMTP server or webhook receiver is back)')
    .action(async (opts: { now?: boolean }, cmd: Command) => {
      const report = await withDelivery(async (ctx, channels) => {
        // NOTE: a deployment without email or webhook delivery is a valid one (in-app entries need
        // no delivery), so a scheduler calling this must not see a failure: say so, exit 0.
        if (!channels.email && !channels.webhook) {
          note('Neither SMTP_URL nor OUTBOUND_WEBHOOK_URL is set: no channel to deliver with, nothing was sent (in-app entries need no delivery).');
          return { delivered: [], retrying: [], failed: [], errors: {} };
        }
        return deliverDueNotifications(ctx, { now: opts.now === true });
      });
      output(globalOptions(cmd), report, () =>
        [
          `Delivered ${report.delivered.length}, retrying later ${report.retrying.length}, failed ${report.failed.length}.`,
          ...report.retrying.map((id) => `  retrying ${id}: ${report.errors[id] ?? ''}`),
          ...report.failed.map((id) => `  failed   ${id}: ${report.errors[id] ?? ''}`),
          ...(report.retrying.length || report.failed.length ? ['See why with: billing-admin notifications show ID'] : []),
        ].join('\n'),
      );
    });

  withReason(notifications.command('redeliver <ids...>'))
    .description('put sent or failed email/webhook entries back in the queue, due now, and deliver them')
    .action(async (ids: string[], opts: { reason: string }, cmd: Command) => {
      const { entries, channels } = await withDelivery(async (ctx, ch) => {
        const { entries: sent, before } = await redeliverNotifications(ctx, ids);
        await auditCliChange(
          ctx,
          ...sent.map((e) => ({
            action: 'notification.resend',
            target: { type: 'notification', id: e.id },
            reason: opts.reason,
            changes: { status: [before.get(e.id)?.status ?? null, e.status], attempts: [before.get(e.id)?.attempts ?? null, e.attempts] } as AuditChanges,
          })),
        );
        return { entries: sent, channels: { email: ch.email !== null, webhook: ch.webhook !== null } };
      });
      const rows = entries.map(entryJson);
      output(globalOptions(cmd), rows, () => table(rows, ENTRY_COLUMNS.filter((c) => c !== 'username')));
      const waiting = rows.filter((r) => r.status === 'queued' && !channels[r.channel as 'email' | 'webhook']);
      if (waiting.length) note(`${waiting.length} entr${waiting.length === 1 ? 'y stays' : 'ies stay'} queued: this configuration cannot send ${[...new Set(waiting.map((r) => r.channel))].join(' or ')}; the server's delivery worker will.`);
      const unsent = rows.filter((r) => r.status === 'failed' || (r.status === 'queued' && r.attempts > 0));
      if (unsent.length) throw new CliFailure(`${unsent.length} of ${rows.length} could not be delivered: ${unsent.map((r) => `${r.id} (${r.last_error})`).join('; ')}`, EXIT.checkFailed);
    });
}
