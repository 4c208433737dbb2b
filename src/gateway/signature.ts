import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Midtrans signature_key: lowercase hex SHA-512 of order_id + status_code + gross_amount +
 * server key. The strings must be the payload's own ("150000.00", not "150000").
 */
export function computeSignature(orderId: string, statusCode: string, grossAmount: string, serverKey: string): string {
  return createHash('sha512').update(orderId + statusCode + grossAmount + serverKey, 'utf8').digest('hex');
}

export interface SignedPayload {
  order_id?: unknown;
  status_code?: unknown;
  gross_amount?: unknown;
  signature_key?: unknown;
}

/** Constant-time check of a notification's or status answer's signature_key; never throws. */
export function verifySignature(payload: SignedPayload | null | undefined, serverKey: string): boolean {
  if (payload === null || typeof payload !== 'object') return false;
  const { order_id, status_code, gross_amount, signature_key } = payload;
  if (typeof order_id !== 'string' || typeof status_code !== 'string' || typeof gross_amount !== 'string') return false;
  if (typeof signature_key !== 'string' || typeof serverKey !== 'string' || serverKey === '') return false;
  const expected = Buffer.from(computeSignature(order_id, status_code, gross_amount, serverKey), 'utf8');
  const given = Buffer.from(signature_key, 'utf8');
  if (given.length !== expected.length) return false;
  return timingSafeEqual(given, expected);
}
