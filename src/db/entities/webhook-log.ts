import { EntitySchema } from '@mikro-orm/core';
import { createdAtProperty, idProperty, updatedAtProperty } from './common.js';

export type WebhookLogStatus = 'received' | 'invalid' | 'duplicate' | 'processed' | 'failed' | 'ignored';
export type WebhookLogSource = 'gateway' | 'sync' | 'replay' | 'charge';

export class WebhookLog {
  id!: string;
  orderId: string | null = null;
  transactionStatus: string | null = null;
  /**
   * The raw body as received; for an `invalid` notification from the internet only its first
   * 4 KiB (`payloadTruncated`), so that a flood of forged bodies cannot fill the database.
   */
  payload!: string;
  /** Hex SHA-256 of the whole body as received (its bytes); null on logs written before it was kept. */
  payloadSha256: string | null = null;
  /** `payload` holds only the start of the body (an invalid notification keeps its first 4 KiB). */
  payloadTruncated = false;
  ipAddress: string | null = null;
  status: WebhookLogStatus = 'received';
  error: string | null = null;
  attempts = 0;
  source: WebhookLogSource = 'gateway';
  /**
   * Set when the notification's effects were applied; unique, so the database lets exactly one
   * log per (order_id, transaction_status[, fraud_status | refund_amount]) be `processed`.
   */
  dedupKey: string | null = null;
  processedAt: Date | null = null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const WebhookLogSchema = new EntitySchema<WebhookLog>({
  class: WebhookLog,
  tableName: 'webhook_logs',
  indexes: [{ properties: ['status', 'createdAt'] }, { properties: ['orderId'] }],
  properties: {
    id: idProperty,
    orderId: { type: 'string', length: 100, nullable: true },
    transactionStatus: { type: 'string', length: 50, nullable: true },
    payload: { type: 'text' },
    payloadSha256: { type: 'string', length: 64, nullable: true },
    payloadTruncated: { type: 'boolean', default: false },
    ipAddress: { type: 'string', length: 64, nullable: true },
    status: { type: 'string', length: 20 },
    error: { type: 'text', nullable: true },
    attempts: { type: 'integer', default: 0 },
    source: { type: 'string', length: 20 },
    dedupKey: { type: 'string', length: 250, nullable: true, unique: true },
    processedAt: { type: 'Date', nullable: true },
    createdAt: createdAtProperty,
    updatedAt: updatedAtProperty,
  },
});
