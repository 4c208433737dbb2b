import type { Body } from './payload.js';

const MAX_KEY_LENGTH = 46;
const TTL_MS = 5 * 60_000;

export interface StoredAnswer {
  httpStatus: number;
  body: Body;
}

/** Idempotency-Key replay (docs/gateway.md, 'Wire details'): global across endpoints, successes only, 5 minutes. */
export class IdempotencyStore {
  readonly #entries = new Map<string, StoredAnswer & { at: number }>();
  readonly #now: () => Date;

  constructor(now: () => Date) {
    this.#now = now;
  }

  /** A longer key is ignored by Midtrans, as if none was sent. */
  static keyOf(header: string | undefined): string | null {
    const key = header?.trim() ?? '';
    return key === '' || key.length > MAX_KEY_LENGTH ? null : key;
  }

  replay(key: string): StoredAnswer | null {
    const entry = this.#entries.get(key);
    if (!entry) return null;
    if (this.#now().getTime() - entry.at > TTL_MS) {
      this.#entries.delete(key);
      return null;
    }
    return { httpStatus: entry.httpStatus, body: entry.body };
  }

  remember(key: string, answer: StoredAnswer): void {
    const now = this.#now().getTime();
    for (const [k, entry] of this.#entries) if (now - entry.at > TTL_MS) this.#entries.delete(k);
    this.#entries.set(key, { ...answer, at: now });
  }

  clear(): void {
    this.#entries.clear();
  }
}
