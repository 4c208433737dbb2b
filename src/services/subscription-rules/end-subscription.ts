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
import type { InvoiceLineInput } from '../invoices/create-invoice.js';
import { cancelInvoicePayments } from '../payments/cancel-invoice-payments.js';
import { forgetPendingChange } from './pending-change.js';
import { releaseUnheldRedemption } from '../coupons/redemption-hold.js';
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
  // A never-paid subscription's first payment, withdrawn unpaid, gives its code back.
  await releaseUnheldRedemption(ctx, sub);
  const billAgain = await voidOpenInvoices(ctx, sub, at);
  notify(ctx, sub.user, 'subscription_canceled', { ...subscriptionData(sub), cancel_reason: reason });
  await issueUsageInvoice(ctx, sub, sub.plan, usageUntil, billAgain);
  return cancelOrderIds;
}

/**
 * Voids the subscription's open invoices, but not a usage-only one: usage already consumed
 * stays owed (its payment has no subscription, so it was not withdrawn either). Returns the
 * usage lines of the invoices it voided (an unpaid renewal's), to be billed again on the
 * usage-only invoice issued with the voiding (usageToBillAgain).
 */
export async function voidOpenInvoices(ctx: DataContext, sub: Subscription, at: Date, where: FilterQuery<Invoice> = {}): Promise<InvoiceLineInput[]> {
  const billAgain: InvoiceLineInput[] = [];
  for (const invoice of await ctx.em.find(Invoice, { ...(where as object), subscription: sub, status: 'open' }, { populate: ['lines'] })) {
    const lines = invoice.lines.getItems();
    if (billsUsageOnly(lines)) continue;
    invoiceStates.apply(invoice, 'void', at);
    billAgain.push(...usageToBillAgain(lines));
  }
  return billAgain;
}

/**
 * A voided invoice's usage lines as they were priced, for the usage-only invoice issued with the
 * voiding (issueUsageInvoice). NOTE: their window is not reopened to be priced again: a renewal
 * prices the period's usage under the plan that ends, and a plan change scheduled for that
 * renewal has replaced that plan since, so pricing the window again under the subscription's
 * plan would bill the usage under a plan that may not charge its metric at all.
 */
export function usageToBillAgain(lines: readonly InvoiceLine[]): InvoiceLineInput[] {
  return lines
    .filter((line) => line.kind === 'usage')
    .map((line) => ({
      description: line.description,
      subject: line.subject,
      kind: line.kind,
      quantity: line.quantity,
      unitAmount: line.unitAmount,
      periodStart: line.periodStart,
      periodEnd: line.periodEnd,
    }));
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
