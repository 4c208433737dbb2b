import { Invoice } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import type { Subscription } from '../../db/entities/subscription.js';
import { invoiceStates } from '../../domain/states/invoice-states.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import { GatewayError } from '../../gateway/errors.js';
import type { DataContext, ServiceContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { subscriptionData } from '../notifications/payloads.js';
import { cancelInvoicePayments } from '../payments/cancel-invoice-payments.js';

const PAID_STATUSES = ['settled', 'partially_refunded', 'refunded'] as const;

/** True for a subscription nobody ever paid for: `pending`, or `past_due` without a settled payment. */
export async function wasNeverPaid(ctx: Pick<DataContext, 'em'>, sub: Subscription): Promise<boolean> {
  if (sub.status === 'pending') return true;
  if (sub.status !== 'past_due') return false;
  return (await ctx.em.count(Payment, { subscription: sub, status: { $in: [...PAID_STATUSES] } })) === 0;
}

/**
 * Cancels a subscription now, inside the caller's transaction: its pending payments are
 * canceled and its open invoices voided, so nothing stays payable. Returns the order ids to
 * cancel at the gateway once the transaction has committed.
 */
export async function endSubscriptionNow(ctx: DataContext, sub: Subscription, reason: string | null): Promise<string[]> {
  const at = ctx.clock.now();
  subscriptionStates.apply(sub, 'cancel', at);
  sub.cancelReason = reason;
  sub.nextBillingDate = null;
  sub.pendingChange = null;
  sub.pendingChangePlan = null;
  const orderIds = await cancelInvoicePayments(ctx.em, { subscription: sub }, at);
  for (const invoice of await ctx.em.find(Invoice, { subscription: sub, status: 'open' })) invoiceStates.apply(invoice, 'void', at);
  notify(ctx, sub.user, 'subscription_canceled', { ...subscriptionData(sub), cancel_reason: reason });
  return orderIds;
}

/**
 * Cancels payments at the gateway after our commit. A late settlement of a canceled payment is
 * still applied: its money goes to the wallet (credit-unusable-settlement.ts), the subscription
 * stays ended.
 */
export async function cancelAtGateway(ctx: ServiceContext, orderIds: string[]): Promise<void> {
  for (const orderId of orderIds) {
    try {
      const answer = await ctx.gateway.cancel(orderId);
      // What the gateway now says of the order: no longer `pending`, so cancelWithdrawnOrders
      // does not ask again.
      await ctx.em.fork().nativeUpdate(Payment, { orderId }, { gatewayStatus: answer.transactionStatus });
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      // NOTE: unless the gateway does not know the order, it may still be payable there (or
      // paid, with the notification lost): flagged, `payments sync` asks and finishes the job.
      if (err.kind !== 'not_found') await ctx.em.fork().nativeUpdate(Payment, { orderId }, { outcomeUnknown: true });
    }
  }
}
