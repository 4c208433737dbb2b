import { HostedSession } from '../../db/entities/hosted-session.js';
import { Payment } from '../../db/entities/payment.js';
import type { Plan } from '../../db/entities/plan.js';
import type { User } from '../../db/entities/user.js';
import { addDays } from '../../domain/billing-calendar.js';
import { DomainError } from '../../domain/errors.js';
import { GatewayError } from '../../gateway/errors.js';
import type { Bank, GatewayTransaction } from '../../gateway/types.js';
import type { PaymentType } from '../../db/entities/subscription.js';
import { Topup } from '../../db/entities/topup.js';
import { Subscription } from '../../db/entities/subscription.js';
import type { ServiceContext } from '../context.js';
import { eventFromTransaction } from '../gateway-events/gateway-event.js';
import { recordAndApplyGatewayEvent } from '../gateway-events/process-notification.js';
import { firstPeriodAmount } from '../subscriptions/authorize-trial-card.js';
import { chargeSubscription } from '../subscriptions/charge-subscription.js';
import { confirmTrialCard } from '../subscriptions/confirm-trial-card.js';
import { createSubscription, quantityFor, trialAllowed } from '../subscriptions/create-subscription.js';
import type { SubscriptionDiscount } from '../../db/entities/subscription.js';
import { discountCoversNewPeriod } from '../../domain/discount.js';
import { checkPromotionCode, discountOf } from '../coupons/redeem.js';
import { priceInvoice, type InvoicePricing } from '../invoices/create-invoice.js';
import { periodLine } from '../invoices/subscription-lines.js';
import { createTopup } from '../topups/create-topup.js';
import { extendCheckoutLink } from './hosted-sessions.js';
import { applyPaymentStatus, cancelWaitingPayment, dueToAsk, gatewayNews } from './waiting-payment.js';

/**
 * Where a checkout stands, as its page shows it. `processing`: a submit of the page is charging
 * right now (another tab, a double click); `confirming`: the gateway's answer to the charge was
 * lost, and whether it was taken is being asked; `card_check`: a trial subscribed with a card
 * waits for the card's 3-D Secure step (the card is pre-authorised, nothing is charged);
 * `nothing_due`: an invoice's page whose invoice was voided or written off.
 */
export type CheckoutState = 'choose' | 'processing' | 'confirming' | 'pending' | 'card_check' | 'paid' | 'trialing' | 'failed' | 'nothing_due';

/** Why a checkout failed, when the page can say more than "it did not go through". */
export type CheckoutFailure = 'card_declined';

export interface CheckoutProgress {
  state: CheckoutState;
  /** The charge under way (pending): how to pay, what, by when. */
  paymentType: PaymentType | null;
  details: Record<string, unknown>;
  amount: string | null;
  currency: string | null;
  expiresAt: Date | null;
  /** Pending or confirming: the gateway order the customer may replace by choosing another method. */
  orderId: string | null;
  /** Failed: the reason the page gives next to the form. */
  failure: CheckoutFailure | null;
  /** Trialing: when the trial ends, which is when the first charge comes. */
  trialEnd: Date | null;
  /** Trialing: a card is saved for that charge (else the first bill is paid as the customer chooses then). */
  cardSaved: boolean;
}

export const nothingYet: CheckoutProgress = {
  state: 'choose', paymentType: null, details: {}, amount: null, currency: null, expiresAt: null, orderId: null, failure: null, trialEnd: null, cardSaved: false,
};

type Charge = { paymentType: PaymentType; paymentDetails: Record<string, unknown>; expiresAt: Date | null; currency: string; orderId: string };

/**
 * A waiting charge: `pending` with its instructions, or `confirming` while they are unknown
 * because the gateway's answer to the charge was lost (it may or may not have been made).
 */
export function chargeProgress(charge: Charge, amount: string): CheckoutProgress {
  return {
    ...nothingYet,
    state: Object.keys(charge.paymentDetails).length === 0 ? 'confirming' : 'pending',
    paymentType: charge.paymentType,
    details: charge.paymentDetails,
    amount,
    currency: charge.currency,
    expiresAt: charge.expiresAt,
    orderId: charge.orderId,
  };
}

/**
 * How long a submit's claim on its checkout holds: longer than the few gateway calls a choice
 * makes (a cancel, a status, a charge, each up to the gateway timeout), so that only a claim
 * left behind by a process that died is ever taken over.
 */
export function claimMs(ctx: Pick<ServiceContext, 'config'>): number {
  return Math.max(2 * 60_000, 4 * ctx.config.gateway.timeoutMs);
}

function isChoosing(ctx: Pick<ServiceContext, 'config' | 'clock'>, session: HostedSession): boolean {
  return session.choosingAt !== null && ctx.clock.now().getTime() - session.choosingAt.getTime() < claimMs(ctx);
}

/**
 * Reads what the customer's choice on the page made: the subscription and its latest payment,
 * or the top-up. A payment that failed, was cancelled or expired sends the page back to the
 * choice (a new attempt replaces a never-paid subscription, as POST /subscriptions/ does).
 * While another submit of the page is charging, the page says so (`processing`).
 */
export async function checkoutProgress(ctx: Pick<ServiceContext, 'em' | 'config' | 'clock'>, session: HostedSession): Promise<CheckoutProgress> {
  // Read again: another request may have charged or claimed the checkout since this one loaded it.
  await ctx.em.findOneOrFail(HostedSession, session.id, { refresh: true });
  const made = await madeProgress(ctx, session);
  if (made.state !== 'paid' && made.state !== 'trialing' && isChoosing(ctx, session)) return { ...nothingYet, state: 'processing' };
  return made;
}

async function madeProgress(ctx: Pick<ServiceContext, 'em'>, session: HostedSession): Promise<CheckoutProgress> {
  if (session.topup) {
    const topup = await ctx.em.findOneOrFail(Topup, session.topup.id, { refresh: true });
    if (topup.status === 'success') return { ...nothingYet, state: 'paid' };
    if (topup.status === 'pending') return chargeProgress(topup, topup.amount);
    return { ...nothingYet, state: 'failed' };
  }
  if (session.subscription) {
    const subscription = await ctx.em.findOneOrFail(Subscription, session.subscription.id, { refresh: true });
    if (subscription.status === 'trialing') return { ...nothingYet, state: 'trialing', trialEnd: subscription.trialEnd, cardSaved: subscription.cardToken !== null };
    if (subscription.status === 'active') return { ...nothingYet, state: 'paid' };
    // The payment waiting for the customer, else the latest (another method chosen withdraws the one before).
    const payments = await ctx.em.find(Payment, { subscription: subscription.id }, { orderBy: { createdAt: 'desc' }, refresh: true });
    const payment = payments.find((p) => p.status === 'pending') ?? payments[0] ?? null;
    if (payment?.status === 'settled') return { ...nothingYet, state: 'paid' };
    if (payment?.status === 'pending' && (subscription.status === 'pending' || subscription.status === 'past_due')) {
      return chargeProgress(payment, payment.grossAmount);
    }
    // Pending with no payment at all: only a trial's card waiting for 3-D Secure is (create-subscription.ts).
    if (!payment && subscription.status === 'pending' && subscription.paymentType === 'credit_card') return { ...nothingYet, state: 'card_check' };
    // The waiting trial was canceled because the card was declined or its 3-D Secure failed or expired.
    if (!payment && subscription.status === 'canceled' && subscription.cancelReason === 'card_declined') {
      return { ...nothingYet, state: 'failed', failure: 'card_declined' };
    }
    // A card charge the bank denied (at once, or after its 3-D Secure step).
    if (payment?.status === 'failed' && payment.paymentType === 'credit_card' && payment.gatewayStatus === 'deny') {
      return { ...nothingYet, state: 'failed', failure: 'card_declined' };
    }
    return { ...nothingYet, state: 'failed' };
  }
  return nothingYet;
}

/**
 * The checkout's progress, as its polling page asks for it. A waiting charge is also asked
 * about at the gateway (at most every few seconds per page): its notification normally moves
 * the checkout on, but the page must not wait forever for one that is late or lost. The answer
 * is applied as `payments sync` applies it, so a notification that comes later is a duplicate.
 */
export async function followCheckout(ctx: ServiceContext, session: HostedSession): Promise<CheckoutProgress> {
  const progress = await checkoutProgress(ctx, session);
  if (progress.state !== 'card_check' && progress.state !== 'pending' && progress.state !== 'confirming') return progress;
  if (!dueToAsk(ctx, session.id, session.createdAt)) return progress;
  try {
    if (progress.state === 'card_check') await confirmTrialCard(ctx, session.subscription!.id);
    else await askGatewayAbout(ctx, session, progress);
    // A charge confirmed only now (its answer had been lost) has its expiry known only now.
    if (progress.state === 'confirming') await keepLinkForCharge(ctx, session);
  } catch (err) {
    // The gateway cannot be reached now: the page keeps waiting and asks again on a later poll.
    if (!(err instanceof GatewayError)) throw err;
    return progress;
  }
  return checkoutProgress(ctx, session);
}

/**
 * The gateway's status of the waiting order, applied as `payments sync` applies it (the
 * payment's instructions kept when the charge's own answer was lost), unless it says nothing new.
 */
async function askGatewayAbout(ctx: ServiceContext, session: HostedSession, progress: CheckoutProgress): Promise<void> {
  const orderId = progress.orderId!;
  const answer = await gatewayNews(ctx, orderId, progress.state === 'pending');
  if (!answer) return;
  const event = eventFromTransaction(answer);
  if (session.subscription) return applyPaymentStatus(ctx, orderId, answer);
  await keepTopupInstructions(ctx, orderId, answer);
  await recordAndApplyGatewayEvent(ctx, { event, source: 'sync' });
}

/** How to pay a top-up whose charge answer was lost, from the gateway's status answer (never overwriting the charge's own). */
async function keepTopupInstructions(ctx: ServiceContext, orderId: string, answer: GatewayTransaction): Promise<void> {
  const em = ctx.em.fork();
  const topup = await em.findOneOrFail(Topup, { orderId });
  if (Object.keys(topup.paymentDetails).length > 0 || answer.transactionStatus !== 'pending') return;
  topup.paymentDetails = { ...answer.paymentDetails };
  topup.expiresAt = answer.expiryTime;
  await em.flush();
}

/** What a plan checkout buys: the units, and the promotion code redeemed when it is paid. */
export interface CheckoutTerms {
  quantity: number;
  /** The code as the coupon's staff wrote it (any case typed), or null. */
  promotionCode: string | null;
}

/** A plan checkout's price for its terms: each line's amount, the discount and PPN, as the first invoice will have them. */
export interface CheckoutPricing extends CheckoutTerms {
  /** The promotion code's coupon terms, when one applies. */
  discount: SubscriptionDiscount | null;
  pricing: InvoicePricing;
}

/**
 * Checks the terms a page's form gives (`quantity` as typed, `promotionCode` '' for none) for the
 * session's plan and prices them: ValidationError (field `quantity`) or PromotionCodeInvalidError
 * when they cannot be bought. Nothing is written; the code is counted only when the checkout is paid.
 */
export async function checkoutTerms(ctx: Pick<ServiceContext, 'em' | 'config' | 'clock'>, session: HostedSession, given: { quantity?: number; promotionCode?: string | null }): Promise<CheckoutPricing> {
  const plan = session.plan!;
  const quantity = quantityFor(plan, given.quantity ?? session.quantity);
  const typed = given.promotionCode === undefined ? session.promotionCode : given.promotionCode?.trim() || null;
  const at = ctx.clock.now();
  let discount: SubscriptionDiscount | null = null;
  let promotionCode: string | null = null;
  if (typed) {
    const promo = await checkPromotionCode(ctx, { code: typed, user: session.user, plan, quantity, at });
    promotionCode = promo.code;
    discount = discountOf(promo.coupon, promo, at);
  }
  const line = periodLine(plan, quantity, null, null);
  const pricing = priceInvoice(ctx.config, { lines: [line], currency: plan.currency, taxBehavior: plan.taxBehavior, discount: discountCoversNewPeriod(discount, plan, at) ? discount : null });
  return { quantity, promotionCode, discount, pricing };
}

/** Keeps the terms on the checkout: a reload shows them, and the charge buys them. */
export async function keepCheckoutTerms(ctx: Pick<ServiceContext, 'em'>, session: HostedSession, terms: CheckoutTerms): Promise<void> {
  if (session.quantity === terms.quantity && session.promotionCode === terms.promotionCode) return;
  await ctx.em.nativeUpdate(HostedSession, { id: session.id }, { quantity: terms.quantity, promotionCode: terms.promotionCode });
  session.quantity = terms.quantity;
  session.promotionCode = terms.promotionCode;
}

/** A trial the checkout's customer would get: its length, its end if it started now, and its first charge (PPN included). */
export interface TrialOffer {
  days: number;
  endsAt: Date;
  firstCharge: string;
  currency: string;
}

/** The plan's trial for this user, or null when the plan has none or the user has had it. */
export async function trialOffer(ctx: Pick<ServiceContext, 'em' | 'config' | 'clock'>, user: Pick<User, 'id'>, plan: Plan): Promise<TrialOffer | null> {
  if (!(await trialAllowed(ctx, user, plan))) return null;
  return { days: plan.trialPeriodDays, endsAt: addDays(ctx.clock.now(), plan.trialPeriodDays), firstCharge: firstPeriodAmount(ctx, plan), currency: plan.currency };
}

export interface CheckoutChoice {
  paymentType: Exclude<PaymentType, 'wallet'>;
  /** The units and promotion code the page's form gave (checked with checkoutTerms); kept on the session when charged. */
  terms?: CheckoutTerms;
  bank?: Bank;
  token?: string;
  /** The waiting order the customer chose another method for (the pending page's switch form). */
  replaces?: string;
}

export type ChoiceResult =
  /** The choice was charged; a trial card's 3-D Secure page when the gateway asked for one. */
  | { outcome: 'charged'; threeDsUrl: string | null }
  /** Nothing was charged: another submit of this page is charging, or already has (a double click, a second tab). */
  | { outcome: 'already_chosen' }
  /** Another method was chosen, but the waiting order was paid before it could be canceled: nothing new was charged. */
  | { outcome: 'earlier_paid' }
  /** Another method was chosen, but the gateway would not cancel the waiting order: nothing new was charged. */
  | { outcome: 'earlier_not_canceled' };

/**
 * The customer's choice on a checkout page: the same use case as POST /subscriptions/ (or
 * POST /topups/), as the session's user, then remembered on the session so the page can follow it.
 *
 * NOTE: one charge per checkout. The checkout is claimed first (one conditional UPDATE of
 * `choosing_at`), so of any number of concurrent submits one charges; the others, and any
 * submit once a charge waits or is paid, answer `already_chosen`. A waiting charge is replaced
 * only when the page's switch form names it, and only once the gateway has canceled it: an
 * order the gateway will not cancel, or that was paid, stays the checkout's one charge.
 */
export async function checkoutChoose(ctx: ServiceContext, session: HostedSession, choice: CheckoutChoice): Promise<ChoiceResult> {
  const claimedAt = ctx.clock.now();
  const stale = new Date(claimedAt.getTime() - claimMs(ctx));
  const claimed = await ctx.em.nativeUpdate(
    HostedSession,
    { id: session.id, $or: [{ choosingAt: null }, { choosingAt: { $lt: stale } }] },
    { choosingAt: claimedAt },
  );
  if (claimed !== 1) return { outcome: 'already_chosen' };
  try {
    const progress = await madeProgressNow(ctx, session);
    const switching = (progress.state === 'pending' || progress.state === 'confirming') && choice.replaces !== undefined && choice.replaces === progress.orderId;
    if (!switching && progress.state !== 'choose' && progress.state !== 'failed' && progress.state !== 'card_check') return { outcome: 'already_chosen' };
    if (switching) {
      const earlier = await cancelWaitingOrder(ctx, session, progress.orderId!);
      if (earlier !== 'canceled') return { outcome: earlier === 'paid' ? 'earlier_paid' : 'earlier_not_canceled' };
    }
    // Under the claim: what this submit chose is what the checkout buys (and shows on a reload).
    if (choice.terms && !switching) await keepCheckoutTerms(ctx, session, choice.terms);
    const result = await charge(ctx, session, choice, claimedAt, switching);
    await keepLinkForCharge(ctx, session);
    return result;
  } finally {
    await ctx.em.nativeUpdate(HostedSession, { id: session.id, choosingAt: claimedAt }, { choosingAt: null });
    session.choosingAt = null;
  }
}

/** A checkout link lives at least as long as the payment its page shows (a VA paid at the ATM a day later). */
async function keepLinkForCharge(ctx: ServiceContext, session: HostedSession): Promise<void> {
  const made = await madeProgressNow(ctx, session);
  if (made.state === 'pending') await extendCheckoutLink(ctx, session, made.expiresAt);
}

/** The checkout's progress read again under the claim, leaving the claim itself out. */
async function madeProgressNow(ctx: ServiceContext, session: HostedSession): Promise<CheckoutProgress> {
  await ctx.em.findOneOrFail(HostedSession, session.id, { refresh: true });
  return madeProgress(ctx, session);
}

/**
 * NOTE: before another method is charged, the waiting order is canceled at the gateway: the
 * API's rule for paying again (cancelOrAskGateway: a refused cancel asks the order's status and
 * applies it, so a paid order counts as paid). Only `canceled` lets the new charge go: `paid`
 * when the old order was paid meanwhile, `unsure` when the gateway would not cancel it or could
 * not be asked (the customer may still pay it).
 */
async function cancelWaitingOrder(ctx: ServiceContext, session: HostedSession, orderId: string): Promise<'canceled' | 'paid' | 'unsure'> {
  if (session.subscription) return cancelWaitingPayment(ctx, orderId);
  // A top-up has no payment row for cancelOrAskGateway to stamp: the same steps, its answer
  // applied to the top-up as a status answer is (a cancel fails the top-up, a settlement credits it).
  let answer: GatewayTransaction;
  try {
    answer = await ctx.gateway.cancel(orderId);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    try {
      answer = await ctx.gateway.status(orderId);
    } catch (asked) {
      if (!(asked instanceof GatewayError)) throw asked;
      return 'unsure';
    }
  }
  await recordAndApplyGatewayEvent(ctx, { event: eventFromTransaction(answer), source: 'sync' });
  const topup = await ctx.em.fork().findOneOrFail(Topup, { orderId });
  if (topup.status === 'pending') return 'unsure';
  return topup.status === 'failed' || topup.status === 'expired' ? 'canceled' : 'paid';
}

/**
 * Charges the choice through the API's use cases. What they made is remembered on the session
 * even when the charge then fails (a lost answer keeps the payment waiting to be confirmed), so
 * that the page follows that charge instead of letting a second one be made.
 */
async function charge(ctx: ServiceContext, session: HostedSession, choice: CheckoutChoice, claimedAt: Date, switching: boolean): Promise<ChoiceResult> {
  const user = session.user;
  if (session.plan) {
    const remember = async (subscriptionId: string) => {
      await ctx.em.nativeUpdate(HostedSession, { id: session.id }, { subscription: subscriptionId, topup: null });
      session.subscription = ctx.em.getReference(Subscription, subscriptionId);
    };
    try {
      if (switching) {
        // The same subscription and invoice, paid another way: the API's paying again.
        await chargeSubscription(ctx, user, { subscriptionId: session.subscription!.id, paymentType: choice.paymentType, token: choice.token, bank: choice.bank });
        return { outcome: 'charged', threeDsUrl: null };
      }
      const { subscription, cardCheck } = await createSubscription(ctx, user, {
        planId: session.plan.id,
        paymentType: choice.paymentType,
        token: choice.token,
        metadata: choice.paymentType === 'bank_transfer' && choice.bank ? { bank: choice.bank } : undefined,
        quantity: session.plan.perUnit ? session.quantity : undefined,
        promotionCode: session.promotionCode ?? undefined,
      });
      await remember(subscription.id);
      // The gateway gives the 3-D Secure page's address in its charge answer only: the page shows it now.
      return { outcome: 'charged', threeDsUrl: cardCheck?.status === 'pending' ? cardCheck.redirectUrl : null };
    } catch (err) {
      // Paying again found the invoice paid by the order it replaced (cancelOrAskGateway applied it).
      if (switching && err instanceof DomainError && err.code === 'nothing_due') return { outcome: 'earlier_paid' };
      const made = await ctx.em.fork().findOne(Subscription, { user: user.id, plan: session.plan.id, createdAt: { $gte: claimedAt } }, { orderBy: { createdAt: 'desc' } });
      if (made && !switching) await remember(made.id);
      throw err;
    }
  }
  const remember = async (topupId: string) => {
    await ctx.em.nativeUpdate(HostedSession, { id: session.id }, { topup: topupId, subscription: null });
    session.topup = ctx.em.getReference(Topup, topupId);
  };
  try {
    const topup = await createTopup(ctx, user, {
      amount: session.topupAmount,
      paymentType: choice.paymentType,
      bank: choice.paymentType === 'bank_transfer' ? choice.bank : undefined,
      token: choice.paymentType === 'credit_card' ? choice.token : undefined,
    });
    await remember(topup.id);
  } catch (err) {
    const made = await ctx.em.fork().findOne(Topup, { user: user.id, createdAt: { $gte: claimedAt } }, { orderBy: { createdAt: 'desc' } });
    if (made) await remember(made.id);
    throw err;
  }
  return { outcome: 'charged', threeDsUrl: null };
}
