import type { FilterQuery } from '@mikro-orm/core';
import { Invoice, type InvoiceLine } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import type { Subscription } from '../../db/entities/subscription.js';
import { invoiceStates } from '../../domain/states/invoice-states.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import { GatewayError } from '../../gateway/errors.js';
import type { DataContext, ServiceContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { subscriptionData } from '../notifications/payloads.js';
import { cancelInvoicePayments } from '../payments/cancel-invoice-payments.js';
import { forgetPendingChange } from './pending-change.js';
import { billsUsageOnly, issueUsageInvoice } from './usage-invoice.js';

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
 * cancel at the gateway once the transaction has committed. Then the usage of its open window
 * up to `usageUntil` (now, or the end of the period at which it was set to end) is billed on a
 * usage-only invoice under the plan it was used under (usage-invoice.ts), issued after the
 * voiding, for the caller to collect (subscriptions/collect-usage-invoices.ts).
 */
export async function endSubscriptionNow(ctx: DataContext, sub: Subscription, reason: string | null, usageUntil = ctx.clock.now()): Promise<string[]> {
  const at = ctx.clock.now();
  subscriptionStates.apply(sub, 'cancel', at);
  sub.cancelReason = reason;
  sub.nextBillingDate = null;
  await forgetPendingChange(ctx, sub);
  const cancelOrderIds = await cancelInvoicePayments(ctx.em, { subscription: sub }, at);
  await voidOpenInvoices(ctx, sub, at);
  notify(ctx, sub.user, 'subscription_canceled', { ...subscriptionData(sub), cancel_reason: reason });
  await issueUsageInvoice(ctx, sub, sub.plan, usageUntil);
  return cancelOrderIds;
}

/**
 * Voids the subscription's open invoices, but not a usage-only one: usage already consumed
 * stays owed (its payment has no subscription, so it was not withdrawn either). A voided
 * invoice that billed usage (an unpaid renewal) gives its window back to the open one, billed
 * again on the invoice that ends it (reopenUsageOf).
 */
export async function voidOpenInvoices(ctx: DataContext, sub: Subscription, at: Date, where: FilterQuery<Invoice> = {}): Promise<void> {
  for (const invoice of await ctx.em.find(Invoice, { ...(where as object), subscription: sub, status: 'open' }, { populate: ['lines'] })) {
    const lines = invoice.lines.getItems();
    if (billsUsageOnly(lines)) continue;
    invoiceStates.apply(invoice, 'void', at);
    reopenUsageOf(sub, lines);
  }
}

/** A voided invoice's usage lines are billed no more: the open usage window starts again at the earliest of them. */
export function reopenUsageOf(sub: Subscription, lines: InvoiceLine[]): void {
  for (const line of lines) {
    if (line.kind !== 'usage' || !line.periodStart) continue;
    if (!sub.usageBilledUntil || line.periodStart.getTime() < sub.usageBilledUntil.getTime()) sub.usageBilledUntil = line.periodStart;
  }
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
