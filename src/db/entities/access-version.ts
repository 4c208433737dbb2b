import { EntitySchema } from '@mikro-orm/core';

/**
 * A counter per user that database triggers (not the application) raise whenever anything that
 * decides the user's access changes: a subscription row of theirs (any writer: use cases, the
 * gateway-event pipeline, set-based billing SQL), their user row, or one of their sessions
 * ending. Each process may cache a user's authentication and access answers as long as this
 * counter reads the same (src/http/auth/access-cache.ts). The triggers live in the migration
 * that created the table (they are invisible to the schema snapshot).
 */
export class AccessVersion {
  userId!: string;
  version!: string;
}

export const AccessVersionSchema = new EntitySchema<AccessVersion>({
  class: AccessVersion,
  tableName: 'access_versions',
  properties: {
    // No foreign key: a deleted user's row must be bumped (the trigger runs after the delete).
    userId: { type: 'string', length: 36, primary: true },
    version: { type: 'bigint' },
  },
});
