import { EntitySchema } from '@mikro-orm/core';
import { idProperty } from './common.js';

/** `system`: the service on its own schedule (the in-server billing run). */
export type AuditActorType = 'staff' | 'api_key' | 'cli' | 'system';

/** One field's value before and after a change. */
export type AuditChanges = Record<string, [unknown, unknown]>;

/**
 * A change made by a person or a key: append-only. On PostgreSQL a
 * trigger refuses every UPDATE and DELETE of the table (the migration that made it); on SQLite
 * two triggers do the same. Nothing in the service updates or deletes a row.
 */
export class AuditEvent {
  id!: string;
  occurredAt!: Date;
  actorType!: AuditActorType;
  /** The staff user's id, the key's id, or the operating-system user of the CLI. */
  actorId!: string;
  actorName!: string;
  action!: string;
  targetType!: string;
  targetId!: string;
  reason: string | null = null;
  /** The API request's id, or the CLI's command line. */
  requestId: string | null = null;
  changes: AuditChanges = {};
  /**
   * The hash chain that makes the trail tamper-evident: each event's place in the chain (unique,
   * so two appends at once cannot both follow the same event), the SHA-256 of the event before
   * it, and the SHA-256 of its own content and that previous hash.
   */
  chainPosition: number | null = null;
  previousHash: string | null = null;
  hash: string | null = null;
}

export const AuditEventSchema = new EntitySchema<AuditEvent>({
  class: AuditEvent,
  tableName: 'audit_events',
  indexes: [{ properties: ['targetId'] }, { properties: ['actorName'] }, { properties: ['occurredAt'] }],
  properties: {
    id: idProperty,
    occurredAt: { type: 'Date' },
    actorType: { type: 'string', length: 10 },
    actorId: { type: 'string', length: 200 },
    actorName: { type: 'string', length: 200 },
    action: { type: 'string', length: 60 },
    targetType: { type: 'string', length: 40 },
    targetId: { type: 'string', length: 200 },
    reason: { type: 'text', nullable: true },
    requestId: { type: 'text', nullable: true },
    changes: { type: 'json' },
    chainPosition: { type: 'integer', nullable: true, unique: true },
    previousHash: { type: 'string', length: 64, nullable: true },
    hash: { type: 'string', length: 64, nullable: true },
  },
});
