import { AuditEvent } from '../../db/entities/audit-event.js';
import type { DataContext } from '../context.js';
import { eventHash } from './audit-chain.js';

/** What is wrong at the first broken link. */
export type ChainProblem =
  /** The event's content no longer gives its stored hash: a field was changed after it was written. */
  | 'content_changed'
  /** The event's previous_hash is not the hash of the event before it: an event before it was changed (hash and all) or replaced. */
  | 'link_broken'
  /** Positions are missing before this event: events were deleted. */
  | 'gap'
  /** The event has no place in the chain: written by hand, or by a build older than the chain. */
  | 'not_chained';

export interface BrokenLink {
  position: number | null;
  event_id: string;
  problem: ChainProblem;
  message: string;
}

export interface AuditChainReport {
  ok: boolean;
  events_checked: number;
  /** The last event of the chain: keep its position and hash elsewhere to notice the newest events being deleted. */
  head: { position: number; event_id: string; hash: string } | null;
  broken: BrokenLink | null;
}

const BATCH = 500;

/**
 * Walks the audit trail's hash chain from its first event (docs/audit.md, 'Checking the trail')
 * and names the first broken link: an event whose content no longer matches its hash, a link to
 * a previous hash that is not the previous event's, positions missing (events deleted), or an
 * event outside the chain. Reads only: an event the database placed without a hash is checked
 * through the event after it, which names the hash its content gives.
 */
export async function verifyAuditChain(ctx: Pick<DataContext, 'em'>): Promise<AuditChainReport> {
  const em = ctx.em.fork();
  const unchained = await em.findOne(AuditEvent, { chainPosition: null }, { orderBy: [{ occurredAt: 'asc' }, { id: 'asc' }] });
  let checked = 0;
  let previous: { position: number; event_id: string; hash: string } | null = null;
  let broken: BrokenLink | null = null;
  walk: for (;;) {
    const batch: AuditEvent[] = await em.find(
      AuditEvent,
      previous ? { chainPosition: { $gt: previous.position } } : { chainPosition: { $ne: null } },
      { orderBy: { chainPosition: 'asc' }, limit: BATCH },
    );
    for (const e of batch) {
      const position = e.chainPosition as number;
      const expected: number = previous ? previous.position + 1 : 1;
      const previousHash: string | null = previous ? previous.hash : null;
      checked++;
      if (position !== expected) {
        const missing = position - 1 === expected ? `position ${expected} is` : `positions ${expected} to ${position - 1} are`;
        broken = { position: expected, event_id: e.id, problem: 'gap', message: `${missing} missing before event ${e.id} (position ${position}): events were deleted` };
        break walk;
      }
      // An event the database placed without a hash (SQLite: written by another release) has its
      // hash taken from its content and the event before it; the event after it names that hash.
      const hashed = e.hash !== null || e.previousHash !== null;
      const hash: string | null = hashed ? e.hash : eventHash({ ...e, previousHash });
      if (hashed && e.hash !== eventHash(e)) {
        broken = { position, event_id: e.id, problem: 'content_changed', message: `event ${e.id} (position ${position}, ${e.action}) no longer matches its hash: it was changed after it was written` };
        break walk;
      }
      if (hashed && e.previousHash !== previousHash) {
        broken = {
          position,
          event_id: e.id,
          problem: 'link_broken',
          message: previous
            ? `event ${e.id} (position ${position}) does not follow event ${previous.event_id} (position ${previous.position}): its previous_hash is not that event's hash, so an earlier event was rewritten or replaced`
            : `event ${e.id} (position 1) names a previous hash, but nothing comes before it`,
        };
        break walk;
      }
      previous = { position, event_id: e.id, hash: hash as string };
    }
    em.clear();
    if (batch.length < BATCH) break;
  }
  if (!broken && unchained) {
    broken = {
      position: null,
      event_id: unchained.id,
      problem: 'not_chained',
      message: `event ${unchained.id} (${unchained.action} at ${unchained.occurredAt.toISOString()}) has no place in the chain: it was not written by this service's append`,
    };
  }
  return { ok: broken === null, events_checked: checked, head: previous, broken };
}
