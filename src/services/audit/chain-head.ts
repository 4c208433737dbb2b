import type { EntityManager } from '@mikro-orm/knex';
import { eventHash, type ChainedContent } from './audit-chain.js';

/** The head of the chain: what the next append follows. */
export interface ChainHead {
  position: number;
  hash: string;
}

interface StoredEvent {
  id: string;
  occurred_at: Date | number | string;
  actor_type: string;
  actor_id: string;
  actor_name: string;
  action: string;
  target_type: string;
  target_id: string;
  reason: string | null;
  request_id: string | null;
  changes: unknown;
  hash: string | null;
}

const COLUMNS = 'id, occurred_at, actor_type, actor_id, actor_name, action, target_type, target_id, reason, request_id, changes, hash';

/** A datetime as the driver gives it back: a Date (PostgreSQL), milliseconds since the epoch (SQLite), or an ISO text written by hand. */
function storedDate(value: Date | number | string): Date {
  if (value instanceof Date) return value;
  return typeof value === 'number' || /^\d+$/.test(value) ? new Date(Number(value)) : new Date(value);
}

function contentOf(row: StoredEvent, previousHash: string | null): ChainedContent {
  return {
    id: row.id,
    occurredAt: storedDate(row.occurred_at),
    actorType: row.actor_type,
    actorId: row.actor_id,
    actorName: row.actor_name,
    action: row.action,
    targetType: row.target_type,
    targetId: row.target_id,
    reason: row.reason,
    requestId: row.request_id,
    changes: typeof row.changes === 'string' ? JSON.parse(row.changes) : row.changes,
    previousHash,
  };
}

/**
 * The head of the chain, read in the caller's transaction (which holds the chain's lock). A head
 * the database placed without a hash (SQLite: an event written by another release, docs/audit.md)
 * has its hash taken here from its content and the events before it, back to the last event that
 * keeps its own, exactly as `audit verify` takes it.
 */
export async function readChainHead(em: EntityManager): Promise<ChainHead | null> {
  const [head] = await em.execute<{ chain_position: number | string; hash: string | null }[]>(
    'select chain_position, hash from audit_events where chain_position is not null order by chain_position desc limit 1',
  );
  if (!head) return null;
  const position = Number(head.chain_position);
  if (head.hash !== null) return { position, hash: head.hash };
  const rows = await em.execute<StoredEvent[]>(
    `select ${COLUMNS} from audit_events where chain_position >= coalesce((select max(chain_position) from audit_events where hash is not null), 1) order by chain_position`,
  );
  let hash: string | null = null;
  for (const row of rows) hash = row.hash ?? eventHash(contentOf(row, hash));
  return { position, hash: hash as string };
}
