import type { EntityManager } from '@mikro-orm/knex';
import { takeSqliteWriteLock } from '../../db/dialect.js';
import { ApiKey, type ApiKeyScope } from '../../db/entities/api-key.js';
import { NotFoundError, ValidationError } from '../../domain/errors.js';
import { isUuid } from '../../domain/ids.js';
import type { Actor } from '../audit/actor.js';
import { recordAuditEvent } from '../audit/record-audit-event.js';
import type { DataContext } from '../context.js';
import { newApiKeySecret } from './api-key-secret.js';

const SCOPES: readonly ApiKeyScope[] = ['read', 'write', 'events'];

/** `billing-admin api-keys create`: the key itself is in the result only, never stored. */
export async function createApiKey(ctx: DataContext, actor: Actor, input: { name: string; scope: string; reason?: string | null }): Promise<{ apiKey: ApiKey; key: string }> {
  const name = input.name.trim();
  if (name === '' || name.length > 100) throw new ValidationError([{ field: 'name', message: 'must be 1 to 100 characters' }]);
  if (!SCOPES.includes(input.scope as ApiKeyScope)) throw new ValidationError([{ field: 'scope', message: `must be one of: ${SCOPES.join(', ')}` }]);
  const secret = newApiKeySecret();
  const apiKey = await ctx.em.transactional(async (em) => {
    const made = em.create(ApiKey, {
      name,
      scope: input.scope as ApiKeyScope,
      prefix: secret.prefix,
      secretHash: secret.hash,
      createdBy: actor.name,
      createdAt: ctx.clock.now(),
    });
    await em.flush();
    await recordAuditEvent({ ...ctx, em }, actor, {
      action: 'api_key.create',
      target: { type: 'api_key', id: made.id },
      reason: input.reason,
      changes: { name: [null, name], scope: [null, made.scope] },
    });
    return made;
  });
  return { apiKey, key: secret.key };
}

export async function listApiKeys(ctx: Pick<DataContext, 'em'>): Promise<ApiKey[]> {
  return ctx.em.find(ApiKey, {}, { orderBy: { createdAt: 'asc', id: 'asc' } });
}

/** Revokes a key (by id or its shown prefix); revoking a revoked key changes nothing. */
export async function revokeApiKey(ctx: DataContext, actor: Actor, ref: string, reason?: string | null): Promise<{ apiKey: ApiKey; changed: boolean }> {
  return ctx.em.transactional(async (em) => {
    // A revocation must not fail because a billing run is writing: it waits for the lock.
    await takeSqliteWriteLock(em as EntityManager, 'api_keys');
    const apiKey = await em.findOne(ApiKey, isUuid(ref) ? { id: ref } : { prefix: ref });
    if (!apiKey) throw new NotFoundError('API key');
    if (apiKey.revokedAt) return { apiKey, changed: false };
    const now = ctx.clock.now();
    apiKey.revokedAt = now;
    await em.flush();
    await recordAuditEvent({ ...ctx, em }, actor, {
      action: 'api_key.revoke',
      target: { type: 'api_key', id: apiKey.id },
      reason,
      changes: { revoked_at: [null, now.toISOString()] },
    });
    return { apiKey, changed: true };
  });
}
