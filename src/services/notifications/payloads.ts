import type { Payment } from '../../db/entities/payment.js';
import type { Subscription } from '../../db/entities/subscription.js';
import type { Topup } from '../../db/entities/topup.js';

/*
 * The one home of notification payloads: every `data` a notification carries about a
 * subscription, a payment or a top-up is built here, so the same event reads the same from every
 * path (HTTP, webhook, sync, billing run). Key order is part of the stored JSON: keep it.
 */

export function subscriptionData(sub: Subscription): Record<string, unknown> {
  return {
    subscription_id: sub.id,
    plan_name: sub.plan.name,
    plan_slug: sub.plan.slug,
    status: sub.status,
    current_period_end: sub.currentPeriodEnd?.toISOString() ?? null,
    trial_end: sub.trialEnd?.toISOString() ?? null,
  };
}

type PaymentFields = Pick<Payment, 'id' | 'orderId' | 'grossAmount' | 'currency' | 'paymentType'>;

/** A payment without its payment instructions (a reversal: nothing is left to pay). */
export function paymentSummaryData(payment: PaymentFields): Record<string, unknown> {
  return {
    payment_id: payment.id,
    order_id: payment.orderId,
    amount: payment.grossAmount,
    currency: payment.currency,
    payment_type: payment.paymentType,
  };
}

/** A payment with how to pay it (virtual account, bill key, QR…). */
export function paymentData(payment: PaymentFields & Pick<Payment, 'paymentDetails'>): Record<string, unknown> {
  return { ...paymentSummaryData(payment), ...payment.paymentDetails };
}

/** A top-up's outcome (succeeded, failed, expired, reversed, refunded). */
export function topupSummaryData(topup: Pick<Topup, 'id' | 'orderId' | 'amount' | 'currency'>): Record<string, unknown> {
  return { topup_id: topup.id, order_id: topup.orderId, amount: topup.amount, currency: topup.currency };
}

/** A top-up with how to pay it (pending, or refused when charged). */
export function topupData(topup: Pick<Topup, 'id' | 'orderId' | 'amount' | 'currency' | 'paymentType' | 'paymentDetails'>): Record<string, unknown> {
  return { ...topupSummaryData(topup), payment_type: topup.paymentType, ...topup.paymentDetails };
}
