import { HostedSession } from '../../db/entities/hosted-session.js';
import { Payment } from '../../db/entities/payment.js';
import type { Plan } from '../../db/entities/plan.js';
import type { User } from '../../db/entities/user.js';
import { addDays } from '../../domain/billing-calendar.js';
import { GatewayError } from '../../gateway/errors.js';
import type { PaymentType } from '../../db/entities/subscription.js';
import { Topup } from '../../db/entities/topup.js';
import { Subscription } from '../../db/entities/subscription.js';
import type { ServiceContext } from '../context.js';
import { firstPeriodAmount } from '../subscriptions/authorize-trial-card.js';
import { confirmTrialCard } from '../subscriptions/confirm-trial-card.js';
import { createSubscription, trialAllowed } from '../subscriptions/create-subscription.js';
import { createTopup } from '../topups/create-topup.js';

/**
 * Where a checkout stands, as its page shows it. `card_check`: a trial subscribed with a card
 * waits for the card's 3-D Secure step (the card is pre-authorised, nothing is charged).
 */
export type CheckoutState = 'choose' | 'pending' | 'card_check' | 'paid' | 'trialing' | 'failed';

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
  /** Failed: the reason the page gives next to the form. */
  failure: CheckoutFailure | null;
  /** Trialing: when the trial ends, which is when the first charge comes. */
  trialEnd: Date | null;
  /** Trialing: a card is saved for that charge (else the first bill is paid as the customer chooses then). */
  cardSaved: boolean;
}

const nothingYet: CheckoutProgress = { state: 'choose', paymentType: null, details: {}, amount: null, currency: null, expiresAt: null, failure: null, trialEnd: null, cardSaved: false };

function chargeProgress(state: CheckoutState, charge: { paymentType: PaymentType; paymentDetails: Record<string, unknown>; expiresAt: Date | null; currency: string }, amount: string): CheckoutProgress {
  return { ...nothingYet, state, paymentType: charge.paymentType, details: charge.paymentDetails, amount, currency: charge.currency, expiresAt: charge.expiresAt };
}

/**
 * Reads what the customer's choice on the page made: the subscription and its latest payment,
 * or the top-up. A payment that failed, was cancelled or expired sends the page back to the
 * choice (a new attempt replaces a never-paid subscription, as POST /subscriptions/ does).
 */
export async function checkoutProgress(ctx: Pick<ServiceContext, 'em'>, session: HostedSession): Promise<CheckoutProgress> {
  if (session.topup) {
    const topup = await ctx.em.findOneOrFail(Topup, session.topup.id, { refresh: true });
    if (topup.status === 'success') return chargeProgress('paid', topup, topup.amount);
    if (topup.status === 'pending') return chargeProgress('pending', topup, topup.amount);
    return { ...nothingYet, state: 'failed' };
  }
  if (session.subscription) {
    const subscription = await ctx.em.findOneOrFail(Subscription, session.subscription.id, { refresh: true });
    if (subscription.status === 'trialing') return { ...nothingYet, state: 'trialing', trialEnd: subscription.trialEnd, cardSaved: subscription.cardToken !== null };
    if (subscription.status === 'active') return { ...nothingYet, state: 'paid' };
    const payment = await ctx.em.findOne(Payment, { subscription: subscription.id }, { orderBy: { createdAt: 'desc' }, refresh: true });
    if (payment?.status === 'settled') return { ...nothingYet, state: 'paid' };
    if (payment?.status === 'pending' && (subscription.status === 'pending' || subscription.status === 'past_due')) {
      return chargeProgress('pending', payment, payment.grossAmount);
    }
    // Pending with no payment at all: only a trial's card waiting for 3-D Secure is (create-subscription.ts).
    if (!payment && subscription.status === 'pending' && subscription.paymentType === 'credit_card') return { ...nothingYet, state: 'card_check' };
    // The waiting trial was canceled because the card was declined or its 3-D Secure failed or expired.
    if (!payment && subscription.status === 'canceled' && subscription.cancelReason === 'card_declined') {
      return { ...nothingYet, state: 'failed', failure: 'card_declined' };
    }
    return { ...nothingYet, state: 'failed' };
  }
  return nothingYet;
}

/** When we last asked the gateway about a session's waiting trial card (ms), so polling asks at most every few seconds. */
const lastCardAsk = new Map<string, number>();
const CARD_ASK_EVERY_MS = 4000;

/**
 * The checkout's progress, as its polling page asks for it. A trial card waiting for 3-D Secure
 * is also asked about at the gateway (at most every few seconds per page): the gateway's
 * notification normally starts the trial, but the page must not wait forever for one that is
 * late or lost. confirmTrialCard reads the gateway's own status and is safe to repeat.
 */
export async function followCheckout(ctx: ServiceContext, session: HostedSession): Promise<CheckoutProgress> {
  const progress = await checkoutProgress(ctx, session);
  if (progress.state !== 'card_check' || !session.subscription) return progress;
  const now = Date.now();
  if (now - (lastCardAsk.get(session.id) ?? 0) < CARD_ASK_EVERY_MS) return progress;
  lastCardAsk.set(session.id, now);
  // Bounded: forget asks older than a page's life.
  if (lastCardAsk.size > 10_000) for (const [id, at] of lastCardAsk) if (now - at > 60 * 60_000) lastCardAsk.delete(id);
  try {
    await confirmTrialCard(ctx, session.subscription.id);
  } catch (err) {
    // The gateway cannot be reached now: the page keeps waiting and asks again on a later poll.
    if (!(err instanceof GatewayError)) throw err;
    return progress;
  }
  return checkoutProgress(ctx, session);
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
  bank?: string;
  token?: string;
}

/**
 * The customer's choice on a checkout page: the same use case as POST /subscriptions/ (or
 * POST /topups/), as the session's user, then remembered on the session so the page can follow it.
 */
export async function checkoutChoose(ctx: ServiceContext, session: HostedSession, choice: CheckoutChoice): Promise<{ threeDsUrl: string | null }> {
  const user = session.user;
  if (session.plan) {
    const { subscription, cardCheck } = await createSubscription(ctx, user, {
      planId: session.plan.id,
      paymentType: choice.paymentType,
      token: choice.token,
      metadata: choice.paymentType === 'bank_transfer' && choice.bank ? { bank: choice.bank } : undefined,
    });
    await ctx.em.nativeUpdate(HostedSession, { id: session.id }, { subscription: subscription.id, topup: null });
    session.subscription = subscription;
    // The gateway gives the 3-D Secure page's address in its charge answer only: the page shows it now.
    return { threeDsUrl: cardCheck?.status === 'pending' ? cardCheck.redirectUrl : null };
  } else {
    const topup = await createTopup(ctx, user, {
      amount: session.topupAmount,
      paymentType: choice.paymentType,
      bank: choice.paymentType === 'bank_transfer' ? choice.bank : undefined,
      token: choice.paymentType === 'credit_card' ? choice.token : undefined,
    });
    await ctx.em.nativeUpdate(HostedSession, { id: session.id }, { topup: topup.id, subscription: null });
    session.topup = topup;
  }
  return { threeDsUrl: null };
}
