import type { Invoice } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import type { Plan } from '../../db/entities/plan.js';
import type { Subscription } from '../../db/entities/subscription.js';
import { cycleBoundary } from '../../domain/billing-calendar.js';
import { add, isPositive, subtract } from '../../domain/money.js';
import { invoiceStates } from '../../domain/states/invoice-states.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { paymentData, subscriptionData } from '../notifications/payloads.js';
import { creditUnusableSettlement, type UnusableSettlementReason } from '../payments/credit-unusable-settlement.js';
import { fundPeriod } from '../subscription-rules/period-funds.js';
import { applyPaidPlanChange, isChangePayment, onChangePaymentFailed } from '../subscription-rules/plan-change.js';

/*
 * What a subscription payment's settlement or failure does to its invoice and subscription,
 * inside applyGatewayEvent's transaction (subscription and payment locked there).
 */

/**
 * A settlement buys nothing when its invoice was already paid (a superseded payment settled
 * after all) or voided, or when its subscription has ended (canceled, expired, or replaced by
 * another): checked before anything is paid or revived. Shared with settle-plain-payment.ts.
 */
export function unusableBecause(
  sub: Pick<Subscription, 'status'> | null,
  invoice: Pick<Invoice, 'status'> | null,
): UnusableSettlementReason | null {
  if (sub && (sub.status === 'canceled' || sub.status === 'expired')) return 'subscription_ended';
  if (invoice?.status === 'paid') return 'invoice_already_paid';
  if (invoice?.status === 'void') return 'invoice_void';
  return null;
}

/**
 * The service period a create or renewal payment buys, or null when its invoice buys none (a
 * plan change's, or another kind): a renewal buys its invoice's period; a first payment (or one
 * without an invoice) a cycle from the moment it settles, which anchors the billing calendar.
 * Shared with settle-plain-payment.ts.
 */
export function periodBought(
  invoice: Pick<Invoice, 'billingReason' | 'periodStart' | 'periodEnd'> | null,
  plan: Pick<Plan, 'interval' | 'intervalUnit'>,
  at: Date,
): { start: Date; end: Date; anchors: boolean } | null {
  // NOTE: a first invoice records the period its first settlement bought (firstPeriodOf): paid
  // again after a reversal or chargeback, it buys that period back, never a new cycle from the
  // repayment on whatever plan the subscription has moved to since (DECISIONS §10).
  const buysItsPeriod = invoice?.billingReason === 'subscription_cycle' || invoice?.billingReason === 'subscription_create';
  if (buysItsPeriod && invoice.periodStart && invoice.periodEnd) {
    return { start: invoice.periodStart, end: invoice.periodEnd, anchors: false };
  }
  if (!invoice || invoice.billingReason === 'subscription_create') {
    return { start: at, end: cycleBoundary(at, plan.interval, plan.intervalUnit, 1), anchors: true };
  }
  return null;
}

/**
 * Whether a bought period becomes the subscription's: never when the subscription is already in
 * it or in a later one (a reversed payment repaid; a reversed first payment repaid after a
 * paid change that restarted the period): the repayment then makes good what it paid for, and
 * the period and the cycle count stay. Shared with settle-plain-payment.ts, which leaves that
 * case to onPaymentSettled.
 */
export function movesPeriodForward(sub: Pick<Subscription, 'currentPeriodEnd'>, period: { end: Date }): boolean {
  return !sub.currentPeriodEnd || period.end.getTime() > sub.currentPeriodEnd.getTime();
}

/**
 * A period that ended between its payment's order and its money (an order paid days late,
 * after the subscription fell past due or was charged again). A payment ordered after its
 * period had already ended is not late: it is a billing run catching up on missed cycles
 * (DECISIONS §4, one run far in the future bills every cycle it missed) or a customer paying an
 * overdue invoice, and it buys that period as it always did. Shared with
 * settle-plain-payment.ts, which leaves it to onPaymentSettled.
 */
export function hasPassed(period: { end: Date; anchors: boolean }, payment: Pick<Payment, 'createdAt'>, at: Date): boolean {
  if (period.anchors) return false;
  const end = period.end.getTime();
  return end <= at.getTime() && end > payment.createdAt.getTime();
}

/**
 * NOTE (DECISIONS §9): a settlement does not grant a period that is over. Its invoice is paid
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

/** The period a first invoice keeps once paid: what a repayment of it buys back (periodBought). */
export function firstPeriodOf(period: { start: Date; end: Date }): Pick<Invoice, 'periodStart' | 'periodEnd'> {
  return { periodStart: period.start, periodEnd: period.end };
}

/** A payment's money arrived: pay its invoice and start, renew or revive its subscription. */
export async function onPaymentSettled(ctx: DataContext, payment: Payment, at: Date): Promise<string[]> {
  const changes: string[] = [];
  notify(ctx, payment.user, 'payment_succeeded', paymentData(payment));
  const unusable = unusableBecause(payment.subscription, payment.invoice);
  if (unusable) {
    // What a refund or an earlier credit already gave back is not credited again.
    const amount = subtract(payment.grossAmount, add(payment.refundedAmount, payment.creditedAmount));
    if (!isPositive(amount)) return changes;
    changes.push(
      await creditUnusableSettlement(ctx, {
        user: payment.user,
        orderId: payment.orderId,
        amount,
        currency: payment.currency,
        reason: unusable,
        source: 'refund',
        referenceId: `late-settlement:${payment.id}`,
        payment,
      }),
    );
    return changes;
  }
  const invoice = payment.invoice;
  if (invoice && invoiceStates.applyIfAllowed(invoice, 'pay', at)) changes.push(`invoice ${invoice.number} paid`);
  const sub = payment.subscription;
  if (!sub) return changes;

  // NOTE: a plan change takes effect when its payment settles (DECISIONS §4).
  if (isChangePayment(payment)) return [...changes, ...(await applyPaidPlanChange(ctx, payment))];
  const wasStatus = sub.status;
  const period = periodBought(invoice, sub.plan, at);
  if (period && hasPassed(period, payment, at)) return [...changes, ...(await creditPassedPeriod(ctx, payment, sub, period, at))];
  if (period && movesPeriodForward(sub, period)) {
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
  if (wasStatus !== 'active') {
    subscriptionStates.apply(sub, 'activate', at);
    sub.cancelReason = null;
    notify(ctx, sub.user, 'subscription_activated', subscriptionData(sub));
    changes.push(`subscription ${wasStatus} -> active`);
  } else if (invoice?.billingReason === 'subscription_cycle') {
    notify(ctx, sub.user, 'subscription_renewed', subscriptionData(sub));
    changes.push('subscription renewed');
  }
  return changes;
}

/** A payment failed: the subscription falls past due, unless a later payment supersedes it. */
export async function onPaymentFailed(ctx: DataContext, payment: Payment, at: Date): Promise<string[]> {
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
  const wasStatus = sub.status;
  if (!subscriptionStates.applyIfAllowed(sub, 'mark_past_due', at)) return [`subscription stays ${sub.status}`];
  if (wasStatus !== 'past_due') notify(ctx, sub.user, 'subscription_past_due', subscriptionData(sub));
  return [`subscription ${wasStatus} -> past_due`];
}
