import type { Invoice } from '../../db/entities/invoice.js';
import type { Payment } from '../../db/entities/payment.js';
import type { Plan } from '../../db/entities/plan.js';
import type { Subscription } from '../../db/entities/subscription.js';
import type { UnusableSettlementReason } from '../payments/credit-unusable-settlement.js';
import { cycleBoundary } from '../../domain/billing-calendar.js';

/*
 * NOTE: the one place that decides what a settled subscription payment buys (docs/billing.md).
 * The webhook's general path (onPaymentSettled, on entities) and its set-based plain path
 * (settlePlainPayment, on rows) both apply this decision; neither branches on activate-or-renew
 * itself. A settlement reaches them from the webhook, payments sync, subscription sync, a
 * charge's answer, a renewal's and a replay alike (all through applyGatewayEvent).
 */

export type SettlementPurchase =
  /** Nothing: the invoice was paid or voided, or the subscription ended. The money goes to the wallet. */
  | { kind: 'nothing'; reason: UnusableSettlementReason }
  /** Its invoice only: a payment without a subscription. */
  | { kind: 'invoice' }
  /** The plan change it paid for (plan-change.ts applies it). */
  | { kind: 'plan_change' }
  /** A period that ended between the order and the money: its invoice is paid, the money goes to the wallet. */
  | { kind: 'passed_period'; period: BoughtPeriod }
  /**
   * Service: `period` (null: the period the subscription is in, from now), which becomes the
   * subscription's when `advances`; `move` is what happens to the subscription's status;
   * `paysRenewal`: it pays a renewal's invoice, whoever paid it (the billing pass's charge, or the
   * customer by hand after the pass's charge failed), so the last renewal failure no longer stands.
   */
  | { kind: 'service'; period: BoughtPeriod | null; advances: boolean; move: 'activate' | 'renew' | null; paysRenewal: boolean };

export interface SettlementFacts {
  subscription: (Pick<Subscription, 'status' | 'currentPeriodEnd'> & { plan: Pick<Plan, 'interval' | 'intervalUnit'> }) | null;
  invoice: Pick<Invoice, 'status' | 'billingReason' | 'periodStart' | 'periodEnd'> | null;
  payment: Pick<Payment, 'createdAt'>;
}

export function whatSettlementBuys({ subscription: sub, invoice, payment }: SettlementFacts, at: Date): SettlementPurchase {
  const unusable = unusableBecause(sub, invoice);
  if (unusable) return { kind: 'nothing', reason: unusable };
  if (!sub) return { kind: 'invoice' };
  // NOTE: a plan change takes effect when its payment settles (docs/billing.md, 'Money rules').
  if (invoice?.billingReason === 'subscription_update') return { kind: 'plan_change' };
  const period = periodBought(invoice, sub.plan, at);
  if (period && hasPassed(period, payment, at)) return { kind: 'passed_period', period };
  const move = sub.status !== 'active' ? 'activate' : invoice?.billingReason === 'subscription_cycle' ? 'renew' : null;
  return { kind: 'service', period, advances: period !== null && movesPeriodForward(sub, period), move, paysRenewal: invoice?.billingReason === 'subscription_cycle' };
}

/** A service period a payment buys; `anchors`: a first payment's, which starts the billing calendar. */
export interface BoughtPeriod {
  start: Date;
  end: Date;
  anchors: boolean;
}

/**
 * A settlement buys nothing when its invoice was already paid (a superseded payment settled
 * after all) or voided, or when its subscription has ended (canceled, expired, or replaced by
 * another): checked before anything is paid or revived.
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
 */
export function periodBought(
  invoice: Pick<Invoice, 'billingReason' | 'periodStart' | 'periodEnd'> | null,
  plan: Pick<Plan, 'interval' | 'intervalUnit'>,
  at: Date,
): BoughtPeriod | null {
  // NOTE: a first invoice records the period its first settlement bought (firstPeriodOf): paid
  // again after a reversal or chargeback, it buys that period back, never a new cycle from the
  // repayment on whatever plan the subscription has moved to since (docs/billing.md, 'Money rules').
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
 * the period and the cycle count stay.
 */
export function movesPeriodForward(sub: Pick<Subscription, 'currentPeriodEnd'>, period: { end: Date }): boolean {
  return !sub.currentPeriodEnd || period.end.getTime() > sub.currentPeriodEnd.getTime();
}

/**
 * A period that ended between its payment's order and its money (an order paid days late,
 * after the subscription fell past due or was charged again). A payment ordered after its
 * period had already ended is not late: it is a billing run catching up on missed cycles
 * (one run far in the future bills every cycle it missed) or a customer paying an
 * overdue invoice, and it buys that period as it always did.
 */
export function hasPassed(period: { end: Date; anchors: boolean }, payment: Pick<Payment, 'createdAt'>, at: Date): boolean {
  if (period.anchors) return false;
  const end = period.end.getTime();
  return end <= at.getTime() && end > payment.createdAt.getTime();
}

/** The period a first invoice keeps once paid: what a repayment of it buys back (periodBought). */
export function firstPeriodOf(period: { start: Date; end: Date }): Pick<Invoice, 'periodStart' | 'periodEnd'> {
  return { periodStart: period.start, periodEnd: period.end };
}

