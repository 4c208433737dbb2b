import { EntitySchema } from '@mikro-orm/core';
import { createdAtProperty, idProperty } from './common.js';

/** `events`: may only send usage events (POST /events/, /events/batch/), as a write key. */
export type ApiKeyScope = 'read' | 'write' | 'events';

/**
 * A staff API key (`billing-admin api-keys create`). Only the SHA-256 of the secret is kept: the
 * key is shown once. `prefix` (the key's first characters) tells keys apart in lists and logs
 * without revealing them. A key is revoked by stamping `revokedAt`; every request reads the row,
 * so a revocation holds at once on every process.
 */
export class ApiKey {
  id!: string;
  name!: string;
  scope!: ApiKeyScope;
  prefix!: string;
  secretHash!: string;
  createdBy!: string;
  createdAt!: Date;
  lastUsedAt: Date | null = null;
  revokedAt: Date | null = null;
}

export const ApiKeySchema = new EntitySchema<ApiKey>({
  class: ApiKey,
  tableName: 'api_keys',
  properties: {
    id: idProperty,
    name: { type: 'string', length: 100 },
    scope: { type: 'string', length: 10 },
    prefix: { type: 'string', length: 20 },
    secretHash: { type: 'string', length: 64, unique: true, hidden: true },
    createdBy: { type: 'string', length: 200 },
    createdAt: createdAtProperty,
    lastUsedAt: { type: 'Date', nullable: true },
    revokedAt: { type: 'Date', nullable: true },
  },
});
