import { randomUUID } from 'node:crypto';
import { SUBSCRIPTION_ORDER_PREFIX } from './gateway-event.js';

/** `SUB-` and 32 random hex digits: unique, opaque, 36 characters (the gateway takes at most 50). */
export function newSubscriptionOrderId(): string {
  return `${SUBSCRIPTION_ORDER_PREFIX}${randomUUID().replace(/-/g, '').toUpperCase()}`;
}
