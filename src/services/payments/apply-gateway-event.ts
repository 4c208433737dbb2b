import { LockMode } from '@mikro-orm/core';
import { Payment, Refund } from '../../db/entities/payment.js';
import { Subscription } from '../../db/entities/subscription.js';
import { Topup } from '../../db/entities/topup.js';
import { cycleBoundary } from '../../domain/billing-calendar.js';
import { DomainError } from '../../domain/errors.js';
import { add, compare, isDecimalText, isPositive, money, subtract, ZERO } from '../../domain/money.js';
import { invoiceStates } from '../../domain/states/invoice-states.js';
import { paymentStates, type PaymentEvent } from '../../domain/states/payment-states.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import { topupStates, type TopupEvent } from '../../domain/states/topup-states.js';
import type { DataContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { postWalletEntry } from '../wallet/wallet-ledger.js';
import { fundPeriod } from '../subscriptions/period-funds.js';
import { applyPaidPlanChange, isChangePayment, onChangePaymentFailed } from '../subscriptions/plan-change.js';
import { endWhatGatewayRefundPaysBack, endWhatRefundsBeforeSettlementPaidBack } from './refund-rules.js';
import { creditUnusableSettlement, type UnusableSettlementReason } from './credit-unusable-settlement.js';
import { isReversal, reversePayment, reverseTopup } from './reverse-payment.js';
import { refundTopupAtGateway } from './refund-topup-at-gateway.js';
import { saveCardFromVerifiedEvent } from './saved-card.js';
import { isFailure, isSuccess, SUBSCRIPTION_ORDER_PREFIX, TOPUP_ORDER_PREFIX, UnknownOrderError, type GatewayEvent } from './gateway-event.js';

export interface EventOutcome {
  /** What changed, for the webhook log and the CLI; empty when the event changed nothing. */
  changes: string[];
}

/** Raised when an event cannot be applied (amount mismatch); the webhook logs it `failed`. Unknown orders: UnknownOrderError. */
export class GatewayEventError extends DomainError {
  constructor(message: string) {
    super('conflict', message);
  }
}

/**
 * Applies what the gateway says happened to an order: payment, subscription, invoice, top-up
 * and wallet, and the notifications. The webhook, `sync`, reconciliation and charge answers all
 * come through here, so the effects are written once. Must run inside a transaction; the
 * caller deduplicates and flushes.
 */
export async function applyGatewayEvent(ctx: DataContext, event: GatewayEvent): Promise<EventOutcome> {
  if (event.orderId.startsWith(SUBSCRIPTION_ORDER_PREFIX)) return applyToPayment(ctx, event);
  if (event.orderId.startsWith(TOPUP_ORDER_PREFIX)) return applyToTopup(ctx, event);
  throw new UnknownOrderError(event.orderId);
}

/**
 * NOTE: money is exact or refused: the notified gross_amount must equal the local amount as a
 * decimal, digit for digit, so "150000.001" does not settle a 150000.00 payment (rounding it to
 * the currency's precision first would). The webhook answers 503 and its log says why.
 */
function assertAmount(event: GatewayEvent, expected: string): void {
  if (event.grossAmount === null) return;
  if (!isDecimalText(event.grossAmount)) throw new GatewayEventError(`gross_amount "${event.grossAmount}" is not a decimal number.`);
  if (compare(event.grossAmount, expected) !== 0) {
    throw new GatewayEventError(`gross_amount ${event.grossAmount} does not match the local amount ${expected}.`);
  }
}

const FAILURE_EVENTS: Record<string, PaymentEvent> = { deny: 'fail', failure: 'fail', cancel: 'cancel', expire: 'expire' };

async function applyToPayment(ctx: DataContext, event: GatewayEvent): Promise<EventOutcome> {
  const payment = await ctx.em.findOne(Payment, { orderId: event.orderId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!payment) throw new UnknownOrderError(event.orderId);
  // Lock the subscription as well (its status and period change), but load the plan and the
  // users without a lock: MikroORM passes a lock mode on to populate queries, and a FOR UPDATE
  // on the plan row, which every subscription of that plan shares, ran all their settlements
  // one at a time.
  if (payment.subscription) {
    await ctx.em.findOne(Subscription, { id: payment.subscription.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  }
  await ctx.em.populate(payment, ['subscription', 'subscription.plan', 'subscription.user', 'invoice', 'user']);
  const at = ctx.clock.now();
  const changes: string[] = [];
  payment.transactionId ??= event.transactionId;
  // NOTE: a stale notification (a late pending, expire or challenge after the money arrived)
  // must not overwrite what the gateway reported since; settlements and refunds always count.
  if (payment.status === 'pending' || isSuccess(event) || event.transactionStatus.endsWith('refund') || isReversal(event, payment.status)) {
    payment.gatewayStatus = event.transactionStatus;
    if (event.fraudStatus) payment.fraudStatus = event.fraudStatus;
  }
  payment.outcomeUnknown = false;

  if (isSuccess(event)) {
    assertAmount(event, payment.grossAmount);
    changes.push(...saveCardFromVerifiedEvent(payment, event));
    if (paymentStates.applyIfAllowed(payment, 'settle', at)) {
      changes.push(`payment settled`);
      changes.push(...(await onPaymentSettled(ctx, payment, at)));
      // NOTE: a refund notification can overtake the settlement's; refunds already recorded count now.
      if (isPositive(payment.refundedAmount)) {
        paymentStates.apply(payment, refundEvent(payment, payment.refundedAmount), at);
        changes.push(`payment ${payment.status} by refunds recorded before the settlement`);
        if (await endWhatRefundsBeforeSettlementPaidBack(ctx, payment)) {
          changes.push('subscription canceled: its payment was refunded in full at the gateway');
        }
      }
    }
  } else if (event.transactionStatus === 'capture') {
    changes.push(`capture held with fraud status ${event.fraudStatus ?? 'none'}`);
  } else if (event.transactionStatus === 'pending') {
    if (payment.status === 'pending') {
      notify(ctx, payment.user, 'payment_pending', paymentData(payment));
      changes.push('payment pending notified');
    }
  } else if (isFailure(event) && isReversal(event, payment.status)) {
    changes.push(...(await reversePayment(ctx, payment, event, at, (refunds) => settleRefundTotals(ctx, payment, refunds))));
  } else if (isFailure(event)) {
    const move = FAILURE_EVENTS[event.transactionStatus];
    if (paymentStates.applyIfAllowed(payment, move, at)) {
      changes.push(`payment ${payment.status}`);
      changes.push(...(await onPaymentFailed(ctx, payment, at)));
    }
  } else if (event.transactionStatus === 'refund' || event.transactionStatus === 'partial_refund') {
    changes.push(...(await recordGatewayRefunds(ctx, payment, event)));
  } else {
    changes.push(`status ${event.transactionStatus} recorded`);
  }
  return { changes };
}

export function paymentData(payment: Pick<Payment, 'id' | 'orderId' | 'grossAmount' | 'currency' | 'paymentType' | 'paymentDetails'>): Record<string, unknown> {
  return {
    payment_id: payment.id,
    order_id: payment.orderId,
    amount: payment.grossAmount,
    currency: payment.currency,
    payment_type: payment.paymentType,
    ...payment.paymentDetails,
  };
}

/**
 * A settlement buys nothing when its invoice was already paid (a superseded payment settled
 * after all) or voided, or when its subscription has ended (canceled, expired, or replaced by
 * another): checked before anything is paid or revived.
 */
function unusableBecause(payment: Payment): UnusableSettlementReason | null {
  const sub = payment.subscription;
  if (sub && (sub.status === 'canceled' || sub.status === 'expired')) return 'subscription_ended';
  if (payment.invoice?.status === 'paid') return 'invoice_already_paid';
  if (payment.invoice?.status === 'void') return 'invoice_void';
  return null;
}

/** A payment's money arrived: pay its invoice and start, renew or revive its subscription. */
async function onPaymentSettled(ctx: DataContext, payment: Payment, at: Date): Promise<string[]> {
  const changes: string[] = [];
  notify(ctx, payment.user, 'payment_succeeded', paymentData(payment));
  const unusable = unusableBecause(payment);
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
  const plan = sub.plan;
  if (invoice?.billingReason === 'subscription_cycle' && invoice.periodStart && invoice.periodEnd) {
    sub.currentPeriodStart = invoice.periodStart;
    sub.currentPeriodEnd = invoice.periodEnd;
    sub.nextBillingDate = invoice.periodEnd;
    sub.cyclesCompleted += 1;
  } else if (!invoice || invoice.billingReason === 'subscription_create') {
    const start = at;
    sub.billingAnchor = start;
    sub.currentPeriodStart = start;
    sub.currentPeriodEnd = cycleBoundary(start, plan.interval, plan.intervalUnit, 1);
    sub.nextBillingDate = sub.currentPeriodEnd;
    sub.cyclesCompleted += 1;
  }
  fundPaidPeriod(ctx, payment, at);
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

/** Records the period a create or renewal payment bought, the base of later credits and refunds. */
function fundPaidPeriod(ctx: DataContext, payment: Payment, at: Date): void {
  const sub = payment.subscription!;
  const invoice = payment.invoice;
  const cycle = invoice?.billingReason === 'subscription_cycle' && invoice.periodStart && invoice.periodEnd;
  const start = cycle ? invoice.periodStart! : at;
  const end = cycle ? invoice.periodEnd! : sub.currentPeriodEnd;
  if (!end) return;
  fundPeriod(ctx, { subscription: sub, payment, amount: subtract(payment.grossAmount, payment.refundedAmount), start, end });
}

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

/** A payment failed: the subscription falls past due, unless a later payment supersedes it. */
async function onPaymentFailed(ctx: DataContext, payment: Payment, at: Date): Promise<string[]> {
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

/**
 * Refund notifications. NOTE: the gateway's cumulative `refund_amount` is the truth for what it
 * refunded (DECISIONS §5, revised 2026-11-23). Refunds it lists with a refund_key (ours, from
 * refundPayment, or a dashboard refund that carries one) are recorded once by that key; refunds
 * without a key cannot be told apart from one notification to the next, so they are never
 * added one by one: the part of the cumulative amount that no keyed refund explains is held by
 * one gateway refund per payment (gatewayRefundKey), recomputed on every notification. A
 * stale notification (a lower cumulative amount, out of order) never lowers what was recorded.
 */
async function recordGatewayRefunds(ctx: DataContext, payment: Payment, event: GatewayEvent): Promise<string[]> {
  const changes: string[] = [];
  const known = await ctx.em.find(Refund, { payment }, { orderBy: { createdAt: 'asc' } });
  const recordedBefore = payment.refundedAmount;
  const madeAtGatewayBefore = madeAtGateway(known);
  for (const r of event.refunds) {
    if (!r.refundKey) continue;
    const existing = known.find((k) => k.refundKey === r.refundKey);
    if (existing) {
      if (existing.status !== 'succeeded') {
        existing.status = 'succeeded';
        changes.push(`refund ${existing.refundKey} confirmed`);
      }
      continue;
    }
    known.push(gatewayRefund(ctx, payment, r.refundKey, money(r.amount)));
    changes.push(`refund ${r.refundKey} recorded`);
  }
  const reported = event.refundAmount ?? (event.refunds.length > 0 ? add(...event.refunds.map((r) => money(r.amount))) : null);
  if (reported !== null) {
    const truth = compare(money(reported), recordedBefore) > 0 ? money(reported) : recordedBefore;
    const unkeyedKey = gatewayRefundKey(payment);
    const explained = () => known.filter((k) => k.status === 'succeeded' && k.refundKey !== unkeyedKey).reduce((sum, k) => add(sum, k.amount), ZERO);
    // Our own refunds still waiting for an answer are the likeliest explanation of the gap.
    for (const pending of known.filter((k) => k.status === 'pending' && k.destination === 'gateway')) {
      if (compare(pending.amount, subtract(truth, explained())) > 0) continue;
      pending.status = 'succeeded';
      changes.push(`refund ${pending.refundKey} confirmed by the refunded total`);
    }
    const unexplained = subtract(truth, explained());
    const held = known.find((k) => k.refundKey === unkeyedKey);
    if (isPositive(unexplained)) {
      if (!held) {
        known.push(gatewayRefund(ctx, payment, unkeyedKey, unexplained));
        changes.push(`refund of ${unexplained} without a key recorded`);
      } else if (compare(held.amount, unexplained) !== 0) {
        held.amount = unexplained;
        changes.push(`refunds without a key now ${unexplained}`);
      }
    } else if (held) {
      // Keyed refunds now explain what it held: it was one of them, reported without its key before.
      known.splice(known.indexOf(held), 1);
      ctx.em.remove(held);
      changes.push('refunds without a key matched to keyed ones');
    }
  }
  // Refunds made at the gateway (not through refundPayment, which withdraws its own) give back
  // time the payment paid for: taken out of its funds, so no later credit pays it out again.
  const newlyAtGateway = subtract(madeAtGateway(known), madeAtGatewayBefore);
  if (isPositive(newlyAtGateway)) {
    const total = known.filter((k) => k.status === 'succeeded').reduce((sum, k) => add(sum, k.amount), ZERO);
    if (await endWhatGatewayRefundPaysBack(ctx, payment, newlyAtGateway, compare(total, payment.grossAmount) >= 0)) {
      changes.push('subscription canceled: its payment was refunded in full at the gateway');
    }
  }
  changes.push(...settleRefundTotals(ctx, payment, known));
  return changes;
}

const GATEWAY_REFUND_REASON = 'refund made at the gateway';

function madeAtGateway(refunds: Refund[]): string {
  return refunds.filter((r) => r.status === 'succeeded' && r.reason === GATEWAY_REFUND_REASON).reduce((sum, r) => add(sum, r.amount), ZERO);
}

/** The one refund row per payment that holds what the gateway refunded without a refund_key. */
export function gatewayRefundKey(payment: Pick<Payment, 'orderId'>): string {
  return `${payment.orderId}-gw`;
}

function gatewayRefund(ctx: DataContext, payment: Payment, refundKey: string, amount: string): Refund {
  return ctx.em.create(Refund, {
    payment,
    refundKey,
    amount,
    status: 'succeeded',
    destination: 'gateway',
    direct: false,
    reason: GATEWAY_REFUND_REASON,
    createdAt: ctx.clock.now(),
  } as Refund);
}

function refundEvent(payment: Payment, refunded: string): PaymentEvent {
  return compare(refunded, payment.grossAmount) >= 0 ? 'refund_fully' : 'refund_partially';
}

/**
 * Sets the payment's refunded amount (and status) from its succeeded refunds: the one place
 * that derives them, used by refund notifications and by refundPayment.
 */
export function settleRefundTotals(ctx: DataContext, payment: Payment, refunds: Refund[]): string[] {
  const total = refunds.filter((r) => r.status === 'succeeded').reduce((sum, r) => add(sum, r.amount), ZERO);
  if (compare(total, payment.refundedAmount) === 0) return [];
  payment.refundedAmount = total;
  paymentStates.applyIfAllowed(payment, refundEvent(payment, total), ctx.clock.now());
  if (payment.invoice) payment.invoice.amountRefunded = total;
  notify(ctx, payment.user, 'payment_refunded', { ...paymentData(payment), refunded_amount: total });
  return [`payment refunded ${total} (${payment.status})`];
}

const TOPUP_FAILURES: Record<string, TopupEvent> = { deny: 'fail', failure: 'fail', cancel: 'fail', expire: 'expire' };

async function applyToTopup(ctx: DataContext, event: GatewayEvent): Promise<EventOutcome> {
  const topup = await ctx.em.findOne(Topup, { orderId: event.orderId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!topup) throw new UnknownOrderError(event.orderId);
  // The user is read, not changed: no lock (the wallet row is locked where the balance moves).
  await ctx.em.populate(topup, ['user']);
  const at = ctx.clock.now();
  topup.transactionId ??= event.transactionId;
  topup.outcomeUnknown = false;
  const data = { topup_id: topup.id, order_id: topup.orderId, amount: topup.amount, currency: topup.currency };

  if (isSuccess(event)) {
    assertAmount(event, topup.amount);
    const wasCanceled = topup.status === 'failed' || topup.status === 'expired';
    if (!topupStates.applyIfAllowed(topup, 'succeed', at)) return { changes: [] };
    if (wasCanceled) {
      // The customer paid a top-up we had given up on: the money still reaches the wallet, loudly.
      const change = await creditUnusableSettlement(ctx, {
        user: topup.user,
        orderId: topup.orderId,
        amount: topup.amount,
        currency: topup.currency,
        reason: 'topup_canceled',
        source: 'topup',
        referenceId: topup.id,
      });
      // The top-up did succeed, whatever its order of arrival: told as any success is, too.
      notify(ctx, topup.user, 'topup_succeeded', data);
      return { changes: ['top-up success after it had ended', change] };
    }
    await postWalletEntry(ctx, {
      user: topup.user,
      kind: 'credit',
      amount: topup.amount,
      currency: topup.currency,
      source: 'topup',
      referenceId: topup.id,
      description: `Top-up ${topup.orderId}`,
    });
    notify(ctx, topup.user, 'topup_succeeded', data);
    return { changes: ['top-up success', `wallet credited ${topup.amount}`] };
  }
  if (isReversal(event, topup.status)) return { changes: await reverseTopup(ctx, topup, event, at) };
  if (event.transactionStatus === 'refund' || event.transactionStatus === 'partial_refund') return { changes: await refundTopupAtGateway(ctx, topup, event) };
  const move = TOPUP_FAILURES[event.transactionStatus];
  if (move && topupStates.applyIfAllowed(topup, move, at)) {
    notify(ctx, topup.user, move === 'expire' ? 'topup_expired' : 'topup_failed', data);
    return { changes: [`top-up ${topup.status}`] };
  }
  return { changes: [] };
}
