import { createHash } from 'node:crypto';

/** Whom a credential was verified as, and against which stored password hash. */
export interface CachedCredential {
  userId: string;
  passwordHash: string;
}

export interface BasicCredentials {
  username: string;
  password: string;
}

/** Parses `Authorization: Basic …`; null when absent or not Basic, 'malformed' when unreadable. */
export function parseBasicAuth(header: string | undefined): BasicCredentials | null | 'malformed' {
  if (!header) return null;
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match) return /^Basic\b/i.test(header) ? 'malformed' : null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return 'malformed';
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * Verified Basic credentials, remembered for a short time so that a client sending Basic on
 * every request does not pay for scrypt every time. Keys are SHA-256 digests of the whole
 * credential, so no password is held in memory. Each entry keeps the password hash it was
 * verified against: a hit stands only while the user's stored hash is the same (the caller
 * compares it with the user row, which the access version keeps current on every process
 * within ACCESS_RECHECK_MS), so a changed password ends the old one's cached access at once
 * (issue 28 row 11: it stayed valid for the cache's 60 s).
 */
export class VerifiedCredentialCache {
  private readonly entries = new Map<string, CachedCredential & { expiresAt: number }>();
  private readonly inFlight = new Map<string, Promise<unknown>>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  private key(c: BasicCredentials): string {
    return createHash('sha256').update(`${c.username}\u0000${c.password}`).digest('hex');
  }

  /**
   * Runs one check for identical credentials that arrive together: a client that opens with a
   * burst of requests pays one password compare (and one throttle attempt) for the burst, so a
   * cold cache does not turn its own requests into 429s. The verdict is remembered on success.
   */
  async verifyOnce<T extends { result: string; user?: { id: string; passwordHash: string } }>(c: BasicCredentials, verify: () => Promise<T>): Promise<T> {
    const key = this.key(c);
    let pending = this.inFlight.get(key) as Promise<T> | undefined;
    if (!pending) {
      pending = verify().finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    const verdict = await pending;
    if (verdict.result === 'ok' && verdict.user) this.set(c, { userId: verdict.user.id, passwordHash: verdict.user.passwordHash });
    return verdict;
  }

  get(c: BasicCredentials): CachedCredential | null {
    if (this.ttlMs <= 0) return null;
    const key = this.key(c);
    const hit = this.entries.get(key);
    if (!hit) return null;
    if (hit.expiresAt <= Date.now()) {
      this.entries.delete(key);
      return null;
    }
    return { userId: hit.userId, passwordHash: hit.passwordHash };
  }

  /** The credential no longer verifies (its user's password changed). */
  forget(c: BasicCredentials): void {
    this.entries.delete(this.key(c));
  }

  set(c: BasicCredentials, verified: CachedCredential): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= this.maxEntries) {
      // Maps iterate in insertion order: drop the oldest entry.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(this.key(c), { ...verified, expiresAt: Date.now() + this.ttlMs });
  }
}
