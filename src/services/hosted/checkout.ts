import { HostedSession } from '../../db/entities/hosted-session.js';
import { Payment } from '../../db/entities/payment.js';
import type { PaymentType } from '../../db/entities/subscription.js';
import { Topup } from '../../db/entities/topup.js';
import { Subscription } from '../../db/entities/subscription.js';
import type { ServiceContext } from '../context.js';
import { createSubscription } from '../subscriptions/create-subscription.js';
import { createTopup } from '../topups/create-topup.js';

/** Where a checkout stands, as its page shows it. */
export type CheckoutState = 'choose' | 'pending' | 'paid' | 'trialing' | 'failed';

export interface CheckoutProgress {
  state: CheckoutState;
  /** The charge under way (pending): how to pay, what, by when. */
  paymentType: PaymentType | null;
  details: Record<string, unknown>;
  amount: string | null;
  currency: string | null;
  expiresAt: Date | null;
}

const nothingYet: CheckoutProgress = { state: 'choose', paymentType: null, details: {}, amount: null, currency: null, expiresAt: null };

function chargeProgress(state: CheckoutState, charge: { paymentType: PaymentType; paymentDetails: Record<string, unknown>; expiresAt: Date | null; currency: string }, amount: string): CheckoutProgress {
  return { state, paymentType: charge.paymentType, details: charge.paymentDetails, amount, currency: charge.currency, expiresAt: charge.expiresAt };
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
    if (subscription.status === 'trialing') return { ...nothingYet, state: 'trialing' };
    if (subscription.status === 'active') return { ...nothingYet, state: 'paid' };
    const payment = await ctx.em.findOne(Payment, { subscription: subscription.id }, { orderBy: { createdAt: 'desc' }, refresh: true });
    if (payment?.status === 'settled') return { ...nothingYet, state: 'paid' };
    if (payment?.status === 'pending' && (subscription.status === 'pending' || subscription.status === 'past_due')) {
      return chargeProgress('pending', payment, payment.grossAmount);
    }
    return { ...nothingYet, state: 'failed' };
  }
  return nothingYet;
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
export async function checkoutChoose(ctx: ServiceContext, session: HostedSession, choice: CheckoutChoice): Promise<void> {
  const user = session.user;
  if (session.plan) {
    const { subscription } = await createSubscription(ctx, user, {
      planId: session.plan.id,
      paymentType: choice.paymentType,
      token: choice.token,
      metadata: choice.paymentType === 'bank_transfer' && choice.bank ? { bank: choice.bank } : undefined,
    });
    await ctx.em.nativeUpdate(HostedSession, { id: session.id }, { subscription: subscription.id, topup: null });
    session.subscription = subscription;
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
}
