import { createHash, randomBytes } from 'node:crypto';

/** Every key starts so, which lets secret scanners (and people) recognise a leaked one. */
const KEY_PREFIX = 'bsk_';

/** A new key: 32 random bytes, shown once; only its SHA-256 is stored. */
export function newApiKeySecret(): { key: string; prefix: string; hash: string } {
  const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { key, prefix: key.slice(0, 12), hash: hashApiKey(key) };
}

/**
 * The stored form of a key. A plain SHA-256 is enough (no scrypt as for passwords): the key
 * holds 256 random bits, so a stolen hash cannot be guessed back, and the lookup by hash on
 * every request stays cheap.
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Whether a Bearer token can be one of ours at all (checked before any lookup). */
export function looksLikeApiKey(token: string): boolean {
  return token.startsWith(KEY_PREFIX) && token.length <= 100;
}
