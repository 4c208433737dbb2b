import { EntitySchema } from '@mikro-orm/core';
import { idProperty } from './common.js';
import { Notification } from './notification.js';

export type DeliveryOutcome = 'delivered' | 'failed';

/** One try at sending an `email` or `webhook` notification entry: what support staff look at. */
export class DeliveryAttempt {
  id!: string;
  notification!: Notification;
  attemptedAt!: Date;
  outcome!: DeliveryOutcome;
  /** The receiver's HTTP status (webhooks), or null when no answer came or for email. */
  httpStatus: number | null = null;
  /** Why it failed: the SMTP reply, the HTTP status and the start of the body, or the network error. */
  error: string | null = null;
  durationMs = 0;
}

export const DeliveryAttemptSchema = new EntitySchema<DeliveryAttempt>({
  class: DeliveryAttempt,
  tableName: 'delivery_attempts',
  indexes: [{ properties: ['notification', 'attemptedAt'] }],
  properties: {
    id: idProperty,
    notification: { kind: 'm:1', entity: () => Notification },
    attemptedAt: { type: 'Date' },
    outcome: { type: 'string', length: 10 },
    httpStatus: { type: 'integer', nullable: true },
    error: { type: 'text', nullable: true },
    durationMs: { type: 'integer' },
  },
});
