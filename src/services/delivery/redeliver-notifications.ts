import { Notification } from '../../db/entities/notification.js';
import { InvalidStateError, NotFoundError, ValidationError } from '../../domain/errors.js';
import { notificationStates } from '../../domain/states/notification-states.js';
import { deliverDueNotifications, type DeliveryContext, type DeliveryReport } from './deliver-due-notifications.js';
import { isUuid, parseUuid } from '../../domain/ids.js';


/**
 * Support staff send `sent` or `failed` email/webhook entries again: each goes back to `queued`
 * with a fresh set of attempts, due now, and is delivered at once where this process has the
 * channel configured. All the ids are checked before any is changed.
 */
export async function redeliverNotifications(
  ctx: DeliveryContext,
  ids: string[],
): Promise<{ entries: Notification[]; report: DeliveryReport; before: Map<string, { status: Notification['status']; attempts: number }> }> {
  const unique = [...new Set(ids.map((id) => parseUuid(id) ?? id))];
  if (unique.length === 0) throw new ValidationError([{ field: 'ids', message: 'give at least one notification id' }]);
  const malformed = unique.filter((id) => !isUuid(id));
  if (malformed.length) throw new ValidationError(malformed.map((id) => ({ field: 'ids', message: `"${id}" is not a notification id` })));

  // Each entry as it was before this resend: the audit trail's "before".
  const before = new Map<string, { status: Notification['status']; attempts: number }>();
  await ctx.em.fork().transactional(async (em) => {
    const found = await em.find(Notification, { id: { $in: unique } });
    const missing = unique.filter((id) => !found.some((n) => n.id === id));
    if (missing.length) throw new NotFoundError(`Notification ${missing.join(', ')}`);
    const now = ctx.clock.now();
    for (const entry of found) {
      if (entry.channel === 'in_app') throw new InvalidStateError(`Notification ${entry.id} is an in-app entry; only email and webhook entries are delivered.`);
      if (!notificationStates.can(entry, 'requeue')) {
        throw new InvalidStateError(`Notification ${entry.id} is ${entry.status}; only sent or failed entries can be redelivered.`);
      }
      before.set(entry.id, { status: entry.status, attempts: entry.attempts });
      notificationStates.apply(entry, 'requeue', now);
      entry.attempts = 0;
      entry.lastError = null;
      entry.nextAttemptAt = now;
    }
  });

  const report = await deliverDueNotifications(ctx, { ids: unique });
  const entries = await ctx.em.fork().find(Notification, { id: { $in: unique } }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  return { entries, report, before };
}
