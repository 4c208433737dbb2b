import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import type { Clock } from '../../domain/clock.js';

/** An answer of the plan catalogue, with the ETag that names its exact JSON. */
export interface CatalogueAnswer {
  body: unknown;
  etag: string;
}

/** Distinct answers kept at most; arbitrary query strings must not grow memory without bound. */
const MAX_ENTRIES = 1000;

function answerOf(body: unknown): CatalogueAnswer {
  const digest = createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 27);
  return { body, etag: `"${digest}"` };
}

/**
 * Whether an If-None-Match header names this answer (RFC 9110 §13.1.2: a list of tags, `*`, weak
 * comparison).
 */
export function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}

/**
 * The plan catalogue's answers, kept in memory by each server process. Plans change rarely and
 * from another process (`billing-admin plans`), so a process cannot be told; instead, at most
 * every `maxAgeSeconds` (0: on every request) it reads the plans table's version — how many
 * plans there are and the latest `updated_at` — and drops every answer when it moved. Every
 * change to a plan goes through the ORM, which stamps `updated_at`.
 */
export class CatalogueCache {
  private readonly entries = new Map<string, CatalogueAnswer>();
  private version: string | null = null;
  private checkedAt: number | null = null;
  private check: Promise<void> | null = null;

  constructor(
    private readonly maxAgeSeconds: number,
    private readonly clock: Clock,
  ) {}

  /** The answer under `key`, computed by `compute` when the catalogue changed or it was never asked. */
  async answer(em: EntityManager, key: string, compute: () => Promise<unknown>): Promise<CatalogueAnswer> {
    await this.revalidate(em);
    const cached = this.entries.get(key);
    if (cached) return cached;
    const version = this.version;
    const answer = answerOf(await compute());
    // NOTE: computed after the version was read, so it is never older than that version.
    if (this.version === version) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
      this.entries.set(key, answer);
    }
    return answer;
  }

  private async revalidate(em: EntityManager): Promise<void> {
    const now = this.clock.now().getTime();
    // A clock set back (tests, a corrected host clock) counts as expired, never as fresh.
    const fresh = this.checkedAt !== null && now >= this.checkedAt && now - this.checkedAt < this.maxAgeSeconds * 1000;
    if (fresh) return;
    // Concurrent requests share one look at the table.
    this.check ??= (async () => {
      try {
        const [row] = (await em.execute('select count(*) as n, max(updated_at) as latest from plans', [], 'all')) as { n: number | string; latest: unknown }[];
        const version = `${row.n}|${row.latest instanceof Date ? row.latest.getTime() : String(row.latest)}`;
        if (version !== this.version) {
          this.entries.clear();
          this.version = version;
        }
        this.checkedAt = now;
      } finally {
        this.check = null;
      }
    })();
    await this.check;
  }
}
