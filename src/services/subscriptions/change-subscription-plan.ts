import { randomUUID } from 'node:crypto';
import type { Payment } from '../../db/entities/payment.js';
import { Plan } from '../../db/entities/plan.js';
import type { Subscription, SubscriptionDiscount } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { afterCoveredPeriod, cutAt } from '../../domain/discount.js';
import { DomainError, InvalidStateError, ValidationError } from '../../domain/errors.js';
import { compare, isPositive, negate, type Money } from '../../domain/money.js';
import { priceChange, unitsOn } from '../../domain/plan-change-pricing.js';
import { subscriptionActions } from '../../domain/states/subscription-actions.js';
import type { DataContext, ServiceContext } from '../context.js';
import { changeInvoicePeriod, createInvoice, type InvoiceLineInput } from '../invoices/create-invoice.js';
import { notify } from '../notifications/notify.js';
import { subscriptionData } from '../notifications/payloads.js';
import { loadPayment } from '../payments/find-payment.js';
import { openPayment } from '../gateway-events/open-payment.js';
import { findSubscribablePlan } from '../plans/get-plan.js';
import { cancelAtGateway } from '../subscription-rules/end-subscription.js';
import { cancelWithdrawnOrders } from '../subscription-rules/withdrawn-orders.js';
import { resolveOwnUnknownCharges } from './resolve-unknown-charges.js';
import { findOwnSubscription, loadSubscription } from './find-subscription.js';
import { submitChangePayment } from './submit-change-payment.js';
import { unusedCredit } from '../subscription-rules/period-funds.js';
import { dropPendingChange, switchPlan } from '../subscription-rules/plan-change.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import { collectUsageInvoices, submitUsagePayments } from './collect-usage-invoices.js';
import { issueUsageInvoice } from '../subscription-rules/usage-invoice.js';
import { checkPromotionCode, discountOf, redeemPromotionCode } from '../coupons/redeem.js';

/** How long a priced preview may be confirmed at its own price. */
export const PLAN_CHANGE_QUOTE_MINUTES = 10;

/**
 * What the customer was shown before confirming an immediate change: the instant it was
 * priced at and the net that pricing gave (null for a trial, where nothing is charged).
 */
export interface PlanChangeQuote {
  pricedAt: Date;
  net: Money | null;
}

export interface ChangePlanInput {
  planId: string;
  /** True (default) switches now with proration; false schedules the switch for the next renewal. */
  immediate?: boolean;
  /**
   * NOTE: with a quote the change is priced at the quote's instant, not at the confirm (as
   * Stripe's proration_date does), so the amount charged is the amount previewed; when that
   * pricing no longer gives the quoted net (the plan's price or the subscription moved), or the
   * quote is older than PLAN_CHANGE_QUOTE_MINUTES, nothing is changed or charged
   * (PlanChangeQuoteRefused). Without one the change is priced at the moment it is made.
   */
  quote?: PlanChangeQuote;
  /**
   * A customer's promotion code, checked against the new plan (422 promotion_code_invalid naming
   * why). Redeemed in the change's transaction, its discount replaces the subscription's from
   * this change on: an immediate change's charge is priced after it; a scheduled change
   * (immediate: false) redeems it now and it first applies at the renewal that switches the plan.
   */
  promotionCode?: string;
}

/** Raised when a quoted change cannot be made at its quoted price: the caller shows a new preview. */
export class PlanChangeQuoteRefused extends DomainError {
  constructor(readonly why: 'expired' | 'moved') {
    super('conflict', why === 'expired'
      ? `The price shown for this change is more than ${PLAN_CHANGE_QUOTE_MINUTES} minutes old; preview the change again.`
      : 'The price of this change is no longer the one shown; preview the change again.');
    this.name = 'PlanChangeQuoteRefused';
  }
}

/** Refuses a quote priced in the future or too long ago: a quote is good for a few minutes only. */
function assertQuoteFresh(quote: PlanChangeQuote, now: Date): void {
  const age = now.getTime() - quote.pricedAt.getTime();
  if (Number.isNaN(age) || age < 0 || age > PLAN_CHANGE_QUOTE_MINUTES * 60_000) throw new PlanChangeQuoteRefused('expired');
}

/** Refuses a change whose terms at the quote's instant are not those the customer saw. */
function assertQuoteHolds(quote: PlanChangeQuote, sub: Subscription, net: Money | null): void {
  const sameNet = net === null || quote.net === null ? net === quote.net : compare(net, quote.net) === 0;
  // A renewal since the quote moved the period the quote priced: its terms no longer apply.
  const samePeriod = !sub.currentPeriodStart || sub.currentPeriodStart.getTime() <= quote.pricedAt.getTime();
  if (!sameNet || !samePeriod) throw new PlanChangeQuoteRefused('moved');
}

export interface ChangedPlan {
  subscription: Subscription;
  /** The change's payment, or null (scheduled change, wallet credit, or nothing to charge). */
  payment: Payment | null;
}

/** Whether the subscription may move to `newPlan` now (invalid_state otherwise): the same checks for a change and its preview. */
function assertChangeable(sub: Subscription, newPlan: Plan): void {
  subscriptionActions.assert(sub, 'change_plan');
  const oldPlan = sub.plan;
  if (oldPlan.id === newPlan.id && sub.pendingChange === null && sub.pendingPlan === null) throw new InvalidStateError(`The subscription is already on ${oldPlan.slug}.`);
  if (oldPlan.currency !== newPlan.currency) {
    throw new InvalidStateError(`${newPlan.slug} is priced in ${newPlan.currency}, the subscription in ${oldPlan.currency}.`);
  }
}

/**
 * What an immediate change to `plan` at `at` costs or credits: the one pricing of a change and
 * of its preview. `discount` is the subscription's discount from the change on: the one a code
 * redeemed with the change, else the one it has (priceChange decides whether it covers the charge).
 */
async function quotePlanChange(ctx: DataContext, sub: Subscription, plan: Plan, at: Date, discount: SubscriptionDiscount | null): Promise<ReturnType<typeof priceChange>> {
  return priceChange({
    oldPlan: sub.plan,
    newPlan: plan,
    periodStart: sub.currentPeriodStart,
    periodEnd: sub.currentPeriodEnd,
    at,
    credit: await unusedCredit(ctx, sub, at),
    pkp: ctx.config.tax.pkp,
    quantity: sub.quantity,
    discount,
  });
}

export interface PlanChangePreview {
  plan: Plan;
  /** Null while trialing: the plan changes and the trial runs on, nothing is charged. */
  terms: ReturnType<typeof priceChange> | null;
}

/**
 * What an immediate change would cost, priced exactly as changeSubscriptionPlan prices it,
 * without changing anything (the hosted portal shows it before the customer confirms).
 */
export async function previewPlanChange(
  ctx: DataContext,
  user: User,
  id: string,
  planIdOrSlug: string,
  opts: { pricedAt?: Date; promotionCode?: string } = {},
): Promise<PlanChangePreview & { pricedAt: Date }> {
  const pricedAt = opts.pricedAt ?? ctx.clock.now();
  const plan = await findSubscribablePlan(ctx, planIdOrSlug);
  const sub = await findOwnSubscription(ctx.em, user, id);
  assertChangeable(sub, plan);
  // The code is checked as the change would redeem it, and not counted.
  let discount = sub.discount;
  if (opts.promotionCode !== undefined) {
    const promo = await checkPromotionCode(ctx, { code: opts.promotionCode, user: sub.user, plan, quantity: unitsOn(plan, sub.quantity), at: ctx.clock.now() });
    discount = discountOf(promo.coupon, promo, pricedAt);
  }
  if (sub.status === 'trialing') return { plan, terms: null, pricedAt };
  return { plan, terms: await quotePlanChange(ctx, sub, plan, pricedAt, discount), pricedAt };
}

/**
 * The subscription moves to `plan`'s units now (a plan not priced per unit has one), and units
 * asked for at the period's end no longer apply to it.
 */
function takeUnitsOf(sub: Subscription, plan: Plan): void {
  if (plan.perUnit) return;
  sub.quantity = 1;
  sub.pendingQuantity = null;
}

/**
 * Moves a subscription to another plan in the same currency: now (priced by priceChange: an
 * invoice and payment for a positive amount, a wallet credit for a negative one, and an invoice
 * of 0 for a new period that owes nothing), or at the next
 * renewal as `pending_plan`. A change that costs money waits for its payment (`pending_change`)
 * unless it is paid at once (wallet, saved card). A new change replaces a pending one; asking
 * for the current plan just drops it.
 */
export async function changeSubscriptionPlan(ctx: ServiceContext, user: User, id: string, input: ChangePlanInput): Promise<ChangedPlan> {
  const immediate = input.immediate ?? true;
  const newPlan = await findSubscribablePlan(ctx, input.planId);

  const quote = immediate ? (input.quote ?? null) : null;
  if (quote) assertQuoteFresh(quote, ctx.clock.now());
  await resolveOwnUnknownCharges(ctx, user, id);

  const outcome = await retryingTransaction(ctx.em, async (em) => {
    const tctx = { ...ctx, em };
    const now = ctx.clock.now();
    const made = await changeIn(tctx, now);
    // The usage so far, billed when the change applied now (switchPlan, or the trial's plan below), collected once.
    return { ...made, usage: (await collectUsageInvoices(tctx, await findOwnSubscription(em, user, id), now)).submits };
  });
  async function changeIn(tctx: DataContext, now: Date) {
    const em = tctx.em;
    const at = quote?.pricedAt ?? now;
    const sub = await findOwnSubscription(em, user, id, { lock: true });
    assertChangeable(sub, newPlan);
    const oldPlan = sub.plan;
    // NOTE: another change replaces a pending one: its payment is canceled before anything else.
    const toCancel = await dropPendingChange(tctx, sub);
    if (oldPlan.id === newPlan.id) {
      // Asking for the current plan withdraws a change: there is no change to redeem a code on.
      if (input.promotionCode !== undefined) {
        throw new ValidationError([{ field: 'promotion_code', message: `is redeemed on a change of plan; the subscription is already on ${oldPlan.slug}` }]);
      }
      sub.pendingPlan = null;
      return { paymentId: null, toCancel };
    }
    const plan = await em.findOneOrFail(Plan, newPlan.id);
    // NOTE: the code is checked against the new plan and its units, and counted here, once:
    // a refusal (422) or any later failure rolls the whole change back with its count.
    const redeemed = input.promotionCode === undefined ? null
      : await redeemPromotionCode(tctx, { code: input.promotionCode, user: sub.user, plan, quantity: unitsOn(plan, sub.quantity), at: now, subscription: sub });
    if (!immediate) {
      sub.pendingPlan = plan;
      // Redeemed now, it starts with the renewal that switches the plan (the first period it can cover).
      if (redeemed) sub.discount = { ...redeemed.discount, starts_at: (sub.currentPeriodEnd ?? sub.nextBillingDate ?? now).toISOString() };
      notify(tctx, sub.user, 'subscription_plan_changed', { ...subscriptionData(sub), old_plan_name: oldPlan.name, plan_name: plan.name, scheduled: true });
      return { paymentId: null, toCancel };
    }
    const discount = redeemed ? { ...redeemed.discount, starts_at: at.toISOString() } : sub.discount;
    if (sub.status === 'trialing') {
      if (quote) assertQuoteHolds(quote, sub, null);
      // A trial costs nothing and buys nothing to credit: the plan changes, the trial runs on
      // (a discount redeemed now first covers the period after it). Its usage so far is billed
      // now, under the plan it was used under.
      await issueUsageInvoice(tctx, sub, oldPlan, now);
      sub.plan = plan;
      sub.pendingPlan = null;
      sub.discount = discount;
      takeUnitsOf(sub, plan);
      notify(tctx, sub.user, 'subscription_plan_changed', { ...subscriptionData(sub), quantity: sub.quantity, old_plan_name: oldPlan.name, proration: null });
      return { paymentId: null, toCancel };
    }

    const terms = await quotePlanChange(tctx, sub, plan, at, discount);
    if (quote) assertQuoteHolds(quote, sub, terms.net);
    if (isPositive(terms.net) && sub.paymentType === 'credit_card' && !sub.cardToken) {
      throw new InvalidStateError('The subscription has no saved card to charge the change to.');
    }
    // NOTE: the discount is the subscription's from the change on, and only once the change
    // applies: a change waiting for its payment keeps it in the pending change (billChange), so a
    // change dropped unpaid neither counts a period of the discount nor keeps a code it redeemed.
    // It counts the change's period when that is a period it has not counted yet: a new one, or
    // its first (a code redeemed now). A new period cuts short one its count already ran out on.
    const from = terms.resetsPeriod ? cutAt(discount, at) : discount;
    const after = terms.discount && (redeemed || terms.resetsPeriod) ? afterCoveredPeriod(terms.discount, terms.periodEnd) : from;
    // NOTE: a change that starts a new period is invoiced even when it owes nothing (a discount
    // of all of it, or a credit of at least its price): the period has an invoice of 0 and a
    // payment of nothing, settled at once, as a subscription that starts at 0 does, so every
    // period bought stands on an invoice. A change within the period that owes nothing credits
    // the wallet and issues nothing: the period's own invoice still stands for it.
    if (!isPositive(terms.net) && !terms.resetsPeriod) {
      sub.discount = after;
      await switchPlan(tctx, sub, plan, terms, at, null);
      return { paymentId: null, toCancel };
    }
    return { paymentId: await billChange(tctx, sub, plan, terms, at, now, { discount: after, redemptionId: redeemed?.redemptionId ?? null }), toCancel };
  }

  await cancelAtGateway(ctx, outcome.toCancel);
  // A change paid at once (wallet, nothing owed) may have voided an open renewal: its orders too.
  await cancelWithdrawnOrders(ctx, { subscriptionId: id });
  if (outcome.paymentId) await submitChangePayment(ctx, id, outcome.paymentId);
  await submitUsagePayments(ctx, outcome.usage);
  return {
    subscription: await loadSubscription(ctx.em, id),
    payment: outcome.paymentId ? await loadPayment(ctx.em, outcome.paymentId) : null,
  };
}

/**
 * Withdraws a plan change not yet made: a change waiting for its payment (the payment is
 * withdrawn, its invoice voided, its order canceled at the gateway after the commit) and a
 * change scheduled for the next renewal. The subscription stays on its plan; invalid_state when
 * there is nothing to withdraw. A payment already made for the change cannot be withdrawn here:
 * a late settlement of its canceled order goes to the wallet, as for any change dropped.
 */
export async function withdrawPlanChange(ctx: ServiceContext, user: User, id: string): Promise<Subscription> {
  const toCancel = await retryingTransaction(ctx.em, async (em) => {
    const sub = await findOwnSubscription(em, user, id, { lock: true });
    if (sub.pendingChange === null && sub.pendingPlan === null) throw new InvalidStateError('The subscription has no plan change to withdraw.');
    const orderIds = await dropPendingChange({ ...ctx, em }, sub);
    sub.pendingPlan = null;
    return orderIds;
  });
  await cancelAtGateway(ctx, toCancel);
  return loadSubscription(ctx.em, id);
}

/**
 * Invoices a change (one that costs money, or starts a new period) and records it as the
 * subscription's pending change; a wallet payment, or one of nothing, settles inside
 * openPayment, which applies the change at once.
 */
async function billChange(
  ctx: DataContext,
  sub: Subscription,
  plan: Plan,
  terms: ReturnType<typeof priceChange>,
  at: Date,
  issuedAt: Date,
  /** The subscription's discount once the change applies, and the redemption of a code typed with it. */
  discount: { discount: SubscriptionDiscount | null; redemptionId: string | null },
): Promise<string> {
  const oldPlan = sub.plan;
  const lines: InvoiceLineInput[] = [];
  if (isPositive(terms.creditLine)) {
    lines.push({ description: `Unused time on ${oldPlan.name}`, subject: { type: 'unused_time', plan: oldPlan.name }, kind: 'proration', unitAmount: negate(terms.creditLine), periodStart: at, periodEnd: sub.currentPeriodEnd });
  }
  lines.push({
    description: terms.resetsPeriod ? `${plan.name} (new period)` : `Remaining time on ${plan.name}`,
    subject: { type: terms.resetsPeriod ? 'new_period' : 'remaining_time', plan: plan.name },
    kind: terms.resetsPeriod ? 'subscription' : 'proration',
    unitAmount: terms.chargeUnit,
    quantity: terms.chargeQuantity,
    periodStart: at,
    periodEnd: terms.periodEnd,
    // The subscription's own price: priced after the same discount priceChange took off.
    discounted: true,
  });
  const invoice = await createInvoice(ctx, {
    user: sub.user,
    subscription: sub,
    currency: plan.currency,
    billingReason: 'subscription_update',
    taxBehavior: plan.taxBehavior,
    issuedAt,
    dueAt: issuedAt,
    ...(await changeInvoicePeriod(ctx, sub, at, terms.periodEnd)),
    discount: terms.discount,
    lines,
  });
  const paymentId = randomUUID();
  sub.pendingChangePlan = plan;
  sub.pendingChange = {
    payment_id: paymentId,
    requested_at: at.toISOString(),
    period_start: terms.periodStart.toISOString(),
    period_end: terms.periodEnd.toISOString(),
    resets_period: terms.resetsPeriod,
    credit: terms.credit,
    charge: terms.charge,
    prior_period_end: sub.currentPeriodEnd?.toISOString() ?? null,
    discount: discount.discount,
    redemption_id: discount.redemptionId,
  };
  await openPayment(ctx, { id: paymentId, user: sub.user, subscription: sub, invoice, paymentType: sub.paymentType, amount: invoice.totalAmount, currency: plan.currency });
  return paymentId;
}
