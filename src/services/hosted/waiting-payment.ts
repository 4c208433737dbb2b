import { Payment } from '../../db/entities/payment.js';
import { GatewayError } from '../../gateway/errors.js';
import type { GatewayTransaction } from '../../gateway/types.js';
import type { ServiceContext } from '../context.js';
import { applyStatusAnswer } from '../gateway-events/gateway-answers.js';
import { eventFromTransaction } from '../gateway-events/gateway-event.js';
import { previewGatewayEvent } from '../gateway-events/process-notification.js';
import { cancelOrAskGateway } from '../subscriptions/resolve-unknown-charges.js';

/*
 * A payment a hosted page shows while it waits for the customer (a checkout's, an invoice's):
 * how often the page's polls may ask the gateway about it, what the gateway's news are, and
 * how it is canceled before another method is charged.
 */

/** When we last asked the gateway about a session's waiting charge (ms), so polling asks at most every few seconds. */
const lastAsk = new Map<string, number>();
/** Every few seconds while the link is young (a customer at the screen), then less often (a virtual account paid later). */
const ASK_EVERY_MS = 4000;
const ASK_LATER_EVERY_MS = 30_000;
const YOUNG_LINK_MS = 30 * 60_000;

/** Whether a page (`key`) waiting since `since` may ask the gateway now; remembers that it did. */
export function dueToAsk(ctx: Pick<ServiceContext, 'clock'>, key: string, since: Date): boolean {
  const now = Date.now();
  const young = ctx.clock.now().getTime() - since.getTime() < YOUNG_LINK_MS;
  if (now - (lastAsk.get(key) ?? 0) < (young ? ASK_EVERY_MS : ASK_LATER_EVERY_MS)) return false;
  lastAsk.set(key, now);
  // Bounded: forget asks older than a day.
  if (lastAsk.size > 10_000) for (const [id, at] of lastAsk) if (now - at > 24 * 60 * 60_000) lastAsk.delete(id);
  return true;
}

/**
 * The gateway's status of a waiting order, or null when there is nothing to apply: the order
 * was never made (`payments sync` closes it once nobody can still be sending it), or it still
 * waits as shown (`shown`: its instructions are known), so polls record nothing.
 */
export async function gatewayNews(ctx: ServiceContext, orderId: string, shown: boolean): Promise<GatewayTransaction | null> {
  let answer: GatewayTransaction;
  try {
    answer = await ctx.gateway.status(orderId);
  } catch (err) {
    if (err instanceof GatewayError && err.kind === 'not_found') return null;
    throw err;
  }
  if (shown && (await previewGatewayEvent(ctx, eventFromTransaction(answer))).result === 'duplicate') return null;
  return answer;
}

/** A payment's status asked at the gateway and applied as `payments sync` applies it (the instructions kept when the charge's answer was lost). */
export async function applyPaymentStatus(ctx: ServiceContext, orderId: string, answer: GatewayTransaction): Promise<void> {
  const payment = await ctx.em.fork().findOneOrFail(Payment, { orderId }, { fields: ['id'] });
  await applyStatusAnswer(ctx, payment.id, answer);
}

/** A waiting payment's order asked about at the gateway (a page's poll), its news applied; GatewayError when it cannot be reached. */
export async function askGatewayAboutPayment(ctx: ServiceContext, orderId: string, shown: boolean): Promise<void> {
  const answer = await gatewayNews(ctx, orderId, shown);
  if (answer) await applyPaymentStatus(ctx, orderId, answer);
}

/** A waiting payment's order canceled at the gateway before another method is charged (cancelWaitingOrder's rule for a payment). */
export async function cancelWaitingPayment(ctx: ServiceContext, orderId: string): Promise<'canceled' | 'paid' | 'unsure'> {
  await cancelOrAskGateway(ctx, [orderId]);
  const payment = await ctx.em.fork().findOneOrFail(Payment, { orderId });
  if (['settled', 'partially_refunded', 'refunded'].includes(payment.status)) return 'paid';
  // Failed, expired or withdrawn, or canceled at the gateway now: nothing of it can be paid any more.
  return payment.status !== 'pending' || payment.gatewayStatus === 'cancel' ? 'canceled' : 'unsure';
}
