import type { EntityManager } from '@mikro-orm/knex';
import type { AuditEvent } from '../db/entities/audit-event.js';
import type { Notification } from '../db/entities/notification.js';
import type { Refund } from '../db/entities/payment.js';
import { User } from '../db/entities/user.js';
import type { Schemas } from './operations.js';
import { serializeNotification, serializeRefund } from './serializers.js';

type OwnerRef = Schemas['OwnerRef'];
type UserOf = { user: { id: string } };

/** The owners of records, by id, in one query: staff see whose record each one is. */
export async function ownersOf(em: EntityManager, records: UserOf[]): Promise<(record: UserOf) => OwnerRef> {
  const ids = [...new Set(records.map((r) => r.user.id))];
  const users = ids.length ? await em.find(User, { id: { $in: ids } }, { fields: ['id', 'username'] }) : [];
  const byId = new Map(users.map((u) => [u.id, { id: u.id, username: u.username }]));
  return (record) => byId.get(record.user.id) ?? { id: record.user.id, username: '' };
}

/** A record's wire shape with its owner beside it (the staff API's `Admin…` schemas). */
export async function withOwners<T extends UserOf, R>(em: EntityManager, records: T[], serialize: (r: T) => R): Promise<(r: T) => R & { user: OwnerRef }> {
  const owner = await ownersOf(em, records);
  return (r) => ({ ...serialize(r), user: owner(r) });
}

/** One record as the staff API shows it: the API's record and its owner beside it. */
export async function ownedRecord<T extends UserOf, R>(em: EntityManager, record: T, serialize: (r: T) => R): Promise<R & { user: OwnerRef }> {
  return (await withOwners(em, [record], serialize))(record);
}

/** A notification entry for staff: its delivery attempts and last error too (the owner is added by withOwners). */
export function serializeAdminNotification(n: Notification) {
  return { ...serializeNotification(n), attempts: n.attempts, last_error: n.lastError };
}

/** A refund for staff: which payment, whose, and what the customer was told. */
export function serializeAdminRefund(r: Refund, payment: { id: string; orderId: string }, owner: OwnerRef): Schemas['AdminRefund'] {
  return {
    ...serializeRefund(r),
    id: r.id,
    payment_id: payment.id,
    order_id: payment.orderId,
    description: r.reason,
    created_at: r.createdAt.toISOString(),
    user: owner,
  };
}

export function serializeAuditEvent(e: AuditEvent): Schemas['AuditEvent'] {
  return {
    id: e.id,
    occurred_at: e.occurredAt.toISOString(),
    actor: { type: e.actorType, id: e.actorId, name: e.actorName },
    action: e.action,
    target: { type: e.targetType, id: e.targetId },
    reason: e.reason,
    request_id: e.requestId,
    changes: e.changes as Schemas['AuditEvent']['changes'],
  };
}
