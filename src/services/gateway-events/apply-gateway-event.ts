import type { DataContext } from '../context.js';
import { SUBSCRIPTION_ORDER_PREFIX, TOPUP_ORDER_PREFIX } from '../payments/order-id.js';
import { applyToPayment } from './apply-to-payment.js';
import { applyToTopup } from './apply-to-topup.js';
import type { EventOutcome } from './event-outcome.js';
import { UnknownOrderError, type GatewayEvent } from './gateway-event.js';

/**
 * Applies what the gateway says happened to an order: payment, subscription, invoice, top-up
 * and wallet, and the notifications. The webhook, `sync`, reconciliation and charge answers all
 * come through here, so the effects are written once: a payment's in apply-to-payment.ts (its
 * invoice and subscription in apply-to-subscription.ts, its refunds in apply-refund.ts), a
 * top-up's in apply-to-topup.ts. Must run inside a transaction; the caller deduplicates and
 * flushes.
 */
export async function applyGatewayEvent(ctx: DataContext, event: GatewayEvent): Promise<EventOutcome> {
  if (event.orderId.startsWith(SUBSCRIPTION_ORDER_PREFIX)) return applyToPayment(ctx, event);
  if (event.orderId.startsWith(TOPUP_ORDER_PREFIX)) return applyToTopup(ctx, event);
  throw new UnknownOrderError(event.orderId);
}
