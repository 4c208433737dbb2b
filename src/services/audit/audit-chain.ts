import { createHash } from 'node:crypto';

/**
 * The hash chain of the audit trail (docs/audit.md, 'The hash chain'). Shared by the append and
 * by `billing-admin audit verify`: one serialization, so that the two can never disagree.
 * NOTE: the database computes the same text in SQL for rows it places itself (the PostgreSQL
 * migration that adds audit_event_chained_text), and the migrations keep frozen copies of this
 * file: a change to the text is a new version tag with its own SQL, never an edit of this one.
 */

/** What an event's hash covers: everything it says, and the hash of the event before it. */
export interface ChainedContent {
  id: string;
  occurredAt: Date;
  actorType: string;
  actorId: string;
  actorName: string;
  action: string;
  targetType: string;
  targetId: string;
  reason: string | null;
  requestId: string | null;
  changes: unknown;
  previousHash: string | null;
}

/**
 * A JSON value as the database gives it back: what JSON.stringify keeps (dates as ISO strings,
 * undefined dropped). The append stores this form, so that a value read back hashes the same.
 */
export function jsonValue<T>(value: T): T {
  return value === undefined ? (null as T) : (JSON.parse(JSON.stringify(value)) as T);
}

/** JSON with every object's keys sorted, at every depth: one text for one value, whatever the key order. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** The text an event's hash is taken of: its fields in a fixed order, as one JSON array. */
export function chainedText(e: ChainedContent): string {
  return canonicalJson([
    'audit-event/1',
    e.id,
    e.occurredAt.toISOString(),
    e.actorType,
    e.actorId,
    e.actorName,
    e.action,
    e.targetType,
    e.targetId,
    e.reason,
    e.requestId,
    jsonValue(e.changes),
    e.previousHash,
  ]);
}

/** SHA-256 (hex) of an event's content and the previous event's hash. */
export function eventHash(e: ChainedContent): string {
  return createHash('sha256').update(chainedText(e), 'utf8').digest('hex');
}

/**
 * PostgreSQL: the transaction-scoped advisory lock every append takes before it reads the head,
 * so that appends from every process take turns (held until the change's transaction ends).
 * A fixed key: 'audit' in ASCII.
 */
export const AUDIT_CHAIN_LOCK_KEY = 0x61756469;
