import { randomUUID } from 'node:crypto';

/** Every order id this service sends to the gateway starts with one of these. */
export const SUBSCRIPTION_ORDER_PREFIX = 'SUB-';
export const TOPUP_ORDER_PREFIX = 'TOPUP-';

/** `SUB-` and 32 random hex digits: unique, opaque, 36 characters (the gateway takes at most 50). */
export function newSubscriptionOrderId(): string {
  return `${SUBSCRIPTION_ORDER_PREFIX}${randomUUID().replace(/-/g, '').toUpperCase()}`;
}
