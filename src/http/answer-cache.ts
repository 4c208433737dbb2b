import { LRUCache } from 'lru-cache';
import type { AnswerVersions } from './auth/access-cache.js';

/** One kept answer: its JSON text and headers, and what it stays true under. */
export interface KeptAnswer {
  text: string;
  headers?: Record<string, string>;
  versions: AnswerVersions;
  /** Epoch ms on the service's clock: from then on it is read again (an access that ended). */
  freshUntil: number;
}

/** Per-entry bookkeeping beside the text (key, versions, the map's own node), counted against the bound. */
const ENTRY_OVERHEAD_BYTES = 256;

/**
 * The last answer of each customer's polled reads (`GET /subscriptions/active/`,
 * `GET /payments/`), as the JSON text sent, per process and bounded in bytes (ANSWER_CACHE_MB,
 * least recently used first out; 0 turns it off).
 *
 * NOTE: an answer is sent again only while the user's access version and the plan catalogue's
 * version, read from the database for this very request, are the ones it was read under, and
 * while the service's clock is before its `freshUntil`. Database triggers raise the user's version
 * on every change to their subscriptions, payments, invoices, user row and sessions, and the
 * catalogue's on every change to a plan, whoever writes it (another process, the CLI, SQL), in
 * the writing transaction. The versions are read before the rows an answer is made of, so a
 * change committed in between shows as a newer version next time, never as an old answer under
 * a new version. What it saves is the statement, the mapping of its rows and the serialisers
 * (bench/README.md); what it costs is one primary-key read per request and the triggers' upsert
 * per write.
 */
export class AnswerCache {
  private readonly answers: LRUCache<string, KeptAnswer> | null;

  constructor(maxBytes: number) {
    this.answers =
      maxBytes > 0
        ? new LRUCache<string, KeptAnswer>({
            maxSize: maxBytes,
            sizeCalculation: (answer, key) => answer.text.length + key.length + ENTRY_OVERHEAD_BYTES,
          })
        : null;
  }

  get enabled(): boolean {
    return this.answers !== null;
  }

  /** The answer kept under `key`, when it was read under `versions` and is still true at `now`. */
  get(key: string, versions: AnswerVersions, now: number): KeptAnswer | undefined {
    const kept = this.answers?.get(key);
    if (!kept) return undefined;
    if (kept.versions.user !== versions.user || kept.versions.catalogue !== versions.catalogue || now >= kept.freshUntil) {
      this.answers?.delete(key);
      return undefined;
    }
    return kept;
  }

  set(key: string, answer: KeptAnswer): void {
    this.answers?.set(key, answer);
  }
}
