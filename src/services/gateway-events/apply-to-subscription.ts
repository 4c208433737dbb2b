import { Payment } from '../../db/entities/payment.js';
import type { Subscription } from '../../db/entities/subscription.js';
import { add, isPositive, subtract } from '../../domain/money.js';
import { invoiceStates } from '../../domain/states/invoice-states.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { paymentData, subscriptionData } from '../notifications/payloads.js';
import { creditUnusableSettlement } from '../payments/credit-unusable-settlement.js';
import { fundPeriod } from '../subscription-rules/period-funds.js';
import { applyPaidPlanChange, isChangePayment, onChangePaymentFailed } from '../subscription-rules/plan-change.js';
import { failureOfLatePaymentStatus, gatewayReportActor, keepRenewalFailure } from '../subscription-rules/record-renewal-failure.js';
import type { GatewayEvent } from './gateway-event.js';
import { firstPeriodOf, movesPeriodForward, whatSettlementBuys } from './settlement-purchase.js';

/*
 * What a subscription payment's settlement or failure does to its invoice and subscription,
 * inside applyGatewayEvent's transaction (subscription and payment locked there).
 */

/**
 * NOTE (docs/billing.md, 'Dunning'): a settlement does not grant a period that is over. Its invoice is paid
 * and the calendar moves past that period (so the next renewal bills the period after it, not
 * this one again), but no access is given for it: the money goes to the wallet with a credit
 * note (`period_passed`), where it pays what covers now; the subscription is active only if
 * a period covering now is paid.
 */
async function creditPassedPeriod(ctx: DataContext, payment: Payment, sub: Subscription, period: { start: Date; end: Date }, at: Date): Promise<string[]> {
  if (movesPeriodForward(sub, period)) {
    sub.currentPeriodStart = period.start;
    sub.currentPeriodEnd = period.end;
    sub.nextBillingDate = period.end;
    sub.cyclesCompleted += 1;
  }
  // Active only on the grace of the invoice just paid (a billing pass catching up issued it late):
  // with no period covering now, it is past due until the next pass bills the current one.
  if (sub.status === 'active' && sub.currentPeriodEnd && sub.currentPeriodEnd.getTime() <= at.getTime()) {
    subscriptionStates.apply(sub, 'mark_past_due', at);
    notify(ctx, sub.user, 'subscription_past_due', subscriptionData(sub));
  }
  const amount = subtract(payment.grossAmount, add(payment.refundedAmount, payment.creditedAmount));
  if (!isPositive(amount)) return [`period ${period.start.toISOString()} to ${period.end.toISOString()} had passed`];
  return [
    `period ${period.start.toISOString()} to ${period.end.toISOString()} had passed: subscription stays ${sub.status}`,
    await creditUnusableSettlement(ctx, {
      user: payment.user,
      orderId: payment.orderId,
      amount,
      currency: payment.currency,
      reason: 'period_passed',
      source: 'refund',
      referenceId: `late-settlement:${payment.id}`,
      payment,
    }),
  ];
}

/**
 * A payment's money arrived: pays its invoice and applies what it buys (settlement-purchase.ts):
 * a period of service, the plan change it paid for, or, when nothing can use it, wallet credit.
 */
export async function onPaymentSettled(ctx: DataContext, payment: Payment, at: Date): Promise<string[]> {
  const changes: string[] = [];
  notify(ctx, payment.user, 'payment_succeeded', paymentData(payment));
  const invoice = payment.invoice;
  const sub = payment.subscription;
  const purchase = whatSettlementBuys({ subscription: sub, invoice, payment }, at);
  if (purchase.kind === 'nothing') {
    // What a refund or an earlier credit already gave back is not credited again.
    const amount = subtract(payment.grossAmount, add(payment.refundedAmount, payment.creditedAmount));
    if (!isPositive(amount)) return changes;
    changes.push(
      await creditUnusableSettlement(ctx, {
        user: payment.user,
        orderId: payment.orderId,
        amount,
        currency: payment.currency,
        reason: purchase.reason,
        source: 'refund',
        referenceId: `late-settlement:${payment.id}`,
        payment,
      }),
    );
    return changes;
  }
  if (invoice && invoiceStates.applyIfAllowed(invoice, 'pay', at)) changes.push(`invoice ${invoice.number} paid`);
  if (!sub || purchase.kind === 'invoice') return changes;
  if (purchase.kind === 'plan_change') return [...changes, ...(await applyPaidPlanChange(ctx, payment))];
  if (purchase.kind === 'passed_period') return [...changes, ...(await creditPassedPeriod(ctx, payment, sub, purchase.period, at))];

  const { period, advances, move, paysRenewal } = purchase;
  if (paysRenewal && sub.lastRenewalFailure) {
    sub.lastRenewalFailure = null;
    changes.push('last renewal failure cleared: the renewal is paid');
  }
  if (period && advances) {
    if (period.anchors) {
      sub.billingAnchor = period.start;
      if (invoice) Object.assign(invoice, firstPeriodOf(period));
    }
    sub.currentPeriodStart = period.start;
    sub.currentPeriodEnd = period.end;
    sub.nextBillingDate = period.end;
    sub.cyclesCompleted += 1;
  }
  // Any other invoice pays, from now, for the period the subscription is in.
  const end = period?.end ?? sub.currentPeriodEnd;
  if (end) fundPeriod(ctx, { subscription: sub, payment, amount: subtract(payment.grossAmount, payment.refundedAmount), start: period?.start ?? at, end });
  if (move === 'activate') {
    const wasStatus = sub.status;
    subscriptionStates.apply(sub, 'activate', at);
    sub.cancelReason = null;
    notify(ctx, sub.user, 'subscription_activated', subscriptionData(sub));
    changes.push(`subscription ${wasStatus} -> active`);
  } else if (move === 'renew') {
    notify(ctx, sub.user, 'subscription_renewed', subscriptionData(sub));
    changes.push('subscription renewed');
  }
  return changes;
}

/**
 * A payment failed: the subscription falls past due, unless a later payment supersedes it.
 * `laterFailure`: the gateway's word on a payment it had reported pending (3-D Secure, a bank
 * transfer), null for a charge's own answer (the billing pass keeps that failure itself). A
 * renewal's payment that fails so is that renewal failing: its reason is kept as the pass keeps
 * a failed charge's.
 */
export async function onPaymentFailed(ctx: DataContext, payment: Payment, at: Date, laterFailure: GatewayEvent | null): Promise<string[]> {
  notify(ctx, payment.user, 'payment_failed', { ...paymentData(payment), gateway_status: payment.gatewayStatus });
  const sub = payment.subscription;
  if (!sub) return [];
  // A plan change's payment failing drops the change; the subscription's own period is paid.
  if (isChangePayment(payment)) return onChangePaymentFailed(ctx, payment);
  // A newer payment (pending or settled) means this one was superseded (charge/ cancels older
  // pending payments) or already made good: its failure says nothing about the subscription.
  const newer = await ctx.em.count(Payment, {
    subscription: sub,
    id: { $ne: payment.id },
    createdAt: { $gte: payment.createdAt },
    status: { $in: ['pending', 'settled', 'partially_refunded', 'refunded'] },
  });
  if (newer > 0) return ['subscription unchanged: a newer payment exists'];
  const changes: string[] = [];
  const failure =
    laterFailure && payment.invoice?.billingReason === 'subscription_cycle' ? failureOfLatePaymentStatus(at, laterFailure.transactionStatus, payment.orderId, laterFailure.raw) : null;
  if (failure) {
    await keepRenewalFailure(ctx.em, sub, failure, gatewayReportActor);
    changes.push(`renewal failure kept: ${failure.code}`);
  }
  const wasStatus = sub.status;
  if (!subscriptionStates.applyIfAllowed(sub, 'mark_past_due', at)) return [...changes, `subscription stays ${sub.status}`];
  if (wasStatus !== 'past_due') notify(ctx, sub.user, 'subscription_past_due', subscriptionData(sub));
  return [...changes, `subscription ${wasStatus} -> past_due`];
}
