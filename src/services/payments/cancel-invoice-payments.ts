import type { EntityManager } from '@mikro-orm/core';
import type { Invoice } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import type { Subscription } from '../../db/entities/subscription.js';
import { paymentStates } from '../../domain/states/payment-states.js';

/** Whose pending payments to cancel: one invoice's, or every one of a subscription's invoices. */
export type PendingPaymentsOf = { invoice: Invoice } | { subscription: Subscription };

/**
 * Cancels the pending payments of an invoice (or of a whole subscription) inside the caller's
 * transaction and returns the order ids to cancel at the gateway once it has committed
 * (cancelAtGateway). A wallet payment has nothing at the gateway to cancel.
 */
export async function cancelInvoicePayments(em: EntityManager, of: PendingPaymentsOf, at: Date): Promise<string[]> {
  const orderIds: string[] = [];
  for (const payment of await em.find(Payment, { ...of, status: 'pending' })) {
    paymentStates.apply(payment, 'withdraw', at);
    if (payment.paymentType !== 'wallet') orderIds.push(payment.orderId);
  }
  return orderIds;
}
