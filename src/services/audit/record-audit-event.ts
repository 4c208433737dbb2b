import { AuditEvent, type AuditChanges } from '../../db/entities/audit-event.js';
import type { DataContext } from '../context.js';
import type { Actor } from './actor.js';

export interface AuditEntry {
  /** `<target type>.<verb>`, e.g. `payment.refund`, `wallet.adjust`. */
  action: string;
  target: { type: string; id: string };
  reason?: string | null;
  changes?: AuditChanges;
}

/** The last time this process gave an event, so that its events never share an instant. */
let lastOccurredAt = 0;

/**
 * The wall clock, not the service's clock: the trail says when a person acted, even when the
 * change itself is dated otherwise (a billing run `--at` another time). Strictly increasing
 * within a process, so that a list's newest-first order is the order of the changes.
 */
function occurredNow(): Date {
  lastOccurredAt = Math.max(Date.now(), lastOccurredAt + 1);
  return new Date(lastOccurredAt);
}

/**
 * Appends one audit event. Call it inside the change's own transaction where the change has
 * one, so that a change and its event are kept or lost together.
 */
export async function recordAuditEvent(ctx: Pick<DataContext, 'em'>, actor: Actor, entry: AuditEntry): Promise<AuditEvent> {
  const event = ctx.em.create(AuditEvent, {
    occurredAt: occurredNow(),
    actorType: actor.type,
    actorId: actor.id,
    actorName: actor.name,
    action: entry.action,
    targetType: entry.target.type,
    targetId: entry.target.id,
    reason: entry.reason?.trim() || null,
    requestId: actor.requestId,
    changes: entry.changes ?? {},
  });
  await ctx.em.flush();
  return event;
}

/** The fields of `after` that differ from `before`, as `[before, after]` pairs. */
export function changedFields(before: Record<string, unknown>, after: Record<string, unknown>): AuditChanges {
  const changes: AuditChanges = {};
  for (const [field, value] of Object.entries(after)) {
    if (JSON.stringify(before[field]) !== JSON.stringify(value)) changes[field] = [before[field] ?? null, value ?? null];
  }
  return changes;
}
