import type { EntityManager } from '@mikro-orm/knex';
import { ApiKey } from '../../db/entities/api-key.js';
import { hashApiKey, looksLikeApiKey } from './api-key-secret.js';

/** last_used_at is written at most this often per key: not a write on every request. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * The live key a Bearer token names, or null (unknown, revoked). Read from the database on every
 * request, never cached, so that a revocation holds at once on every process.
 */
export async function authenticateApiKey(em: EntityManager, token: string, now: Date): Promise<ApiKey | null> {
  if (!looksLikeApiKey(token)) return null;
  const apiKey = await em.findOne(ApiKey, { secretHash: hashApiKey(token), revokedAt: null });
  if (!apiKey) return null;
  if (!apiKey.lastUsedAt || now.getTime() - apiKey.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS) {
    await em.nativeUpdate(ApiKey, { id: apiKey.id }, { lastUsedAt: now });
    apiKey.lastUsedAt = now;
  }
  return apiKey;
}
