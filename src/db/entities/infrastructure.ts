import { EntitySchema } from '@mikro-orm/core';
import { createdAtProperty, idProperty } from './common.js';

/** A remembered POST (Idempotency-Key): the first response is replayed for 24 hours. */
export class IdempotencyRecord {
  id!: string;
  userId!: string;
  key!: string;
  /** SHA-256 of method, path and body: another body under the same key is refused. */
  requestHash!: string;
  state: 'in_progress' | 'done' = 'in_progress';
  responseStatus: number | null = null;
  responseBody: string | null = null;
  createdAt!: Date;
}

export const IdempotencyRecordSchema = new EntitySchema<IdempotencyRecord>({
  class: IdempotencyRecord,
  tableName: 'idempotency_keys',
  uniques: [{ properties: ['userId', 'key'] }],
  indexes: [{ properties: ['createdAt'] }],
  properties: {
    id: idProperty,
    userId: { type: 'string', length: 36 },
    key: { type: 'string', length: 255 },
    requestHash: { type: 'string', length: 64 },
    state: { type: 'string', length: 20 },
    responseStatus: { type: 'integer', nullable: true },
    responseBody: { type: 'text', nullable: true },
    createdAt: createdAtProperty,
  },
});

/** Server-side session data, so that logins work across processes and can be revoked. */
export class Session {
  id!: string;
  data!: string;
  expiresAt!: Date;
}

export const SessionSchema = new EntitySchema<Session>({
  class: Session,
  tableName: 'sessions',
  indexes: [{ properties: ['expiresAt'] }],
  properties: {
    id: { type: 'string', length: 100, primary: true },
    data: { type: 'text' },
    expiresAt: { type: 'Date' },
  },
});

/** Login attempts per username and per IP since the last success (`failures`), shared by every server process; see LoginThrottler. */
export class LoginThrottle {
  key!: string;
  failures = 0;
  windowStart!: Date;
}

export const LoginThrottleSchema = new EntitySchema<LoginThrottle>({
  class: LoginThrottle,
  tableName: 'login_throttles',
  properties: {
    key: { type: 'string', length: 300, primary: true },
    failures: { type: 'integer' },
    windowStart: { type: 'Date' },
  },
});
