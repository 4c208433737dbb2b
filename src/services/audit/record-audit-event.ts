import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import { AuditEvent, type AuditChanges } from '../../db/entities/audit-event.js';
import { isPostgres, takeSqliteWriteLock } from '../../db/dialect.js';
import type { DataContext } from '../context.js';
import type { Actor } from './actor.js';
import { AUDIT_CHAIN_LOCK_KEY, eventHash, jsonValue } from './audit-chain.js';
import { readChainHead } from './chain-head.js';

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
 * Appends one audit event at the head of the hash chain (docs/audit.md). Call it inside the
 * change's own transaction where the change has one, so that a change and its event are kept or
 * lost together; without one, the caller's pending changes and the event are written in one
 * transaction here. A change that changed nothing (empty `changes`) records nothing: null.
 */
export async function recordAuditEvent(ctx: Pick<DataContext, 'em'>, actor: Actor, entry: AuditEntry): Promise<AuditEvent | null> {
  const changes = jsonValue(entry.changes ?? {});
  if (Object.keys(changes).length === 0) return null;
  const em = ctx.em;
  if (em.isInTransaction()) return appendToChain(em, actor, entry, changes);
  await em.begin();
  try {
    const event = await appendToChain(em, actor, entry, changes);
    await em.commit();
    return event;
  } catch (err) {
    await em.rollback();
    throw err;
  }
}

/**
 * NOTE: appends take turns, so that two never read the same head. PostgreSQL: a transaction-
 * scoped advisory lock, waited for and held until the change's transaction ends (a unique
 * violation would abort the caller's whole transaction, so losing a race and retrying is not an
 * option there). SQLite: a write that changes no row takes the database's one write lock now
 * (the caller's transaction usually holds it already), so no other process writes between the
 * head read here and the insert; a transaction whose snapshot is already stale fails at that
 * statement with SQLITE_BUSY as any of its writes would. The unique index on chain_position is
 * the backstop: even code that skips this cannot fork the chain. Callers record as the last step of
 * their transaction: one holding the chain's lock then waits for no other row lock (no deadlock).
 */
async function appendToChain(em: EntityManager, actor: Actor, entry: AuditEntry, changes: AuditChanges): Promise<AuditEvent> {
  // The caller's own changes first, in the same transaction (they were flushed with the event before).
  await em.flush();
  if (isPostgres(em)) await em.execute('select pg_advisory_xact_lock(?)', [AUDIT_CHAIN_LOCK_KEY]);
  else await takeSqliteWriteLock(em, 'audit_events');
  const head = await readChainHead(em);
  const content = {
    id: randomUUID(),
    occurredAt: occurredNow(),
    actorType: actor.type,
    actorId: actor.id,
    actorName: actor.name,
    action: entry.action,
    targetType: entry.target.type,
    targetId: entry.target.id,
    reason: entry.reason?.trim() || null,
    requestId: actor.requestId,
    changes,
    previousHash: head?.hash ?? null,
  };
  const event = em.create(AuditEvent, {
    ...content,
    chainPosition: head ? head.position + 1 : 1,
    hash: eventHash(content),
  });
  await em.flush();
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
