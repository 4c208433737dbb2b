import { randomUUID } from 'node:crypto';
import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Payment } from '../../db/entities/payment.js';
import type { Plan } from '../../db/entities/plan.js';
import { Subscription, type PaymentType } from '../../db/entities/subscription.js';
import { TrialGrant } from '../../db/entities/trial-grant.js';
import { User } from '../../db/entities/user.js';
import { cycleBoundary } from '../../domain/billing-calendar.js';
import { DomainError, ValidationError } from '../../domain/errors.js';
import { invoiceStates } from '../../domain/states/invoice-states.js';
import { startSubscription, subscriptionStates } from '../../domain/states/subscription-states.js';
import type { Bank } from '../../gateway/types.js';
import type { DataContext, ServiceContext } from '../context.js';
import { createInvoice } from '../invoices/create-invoice.js';
import { notify } from '../notifications/notify.js';
import { subscriptionData } from '../notifications/payloads.js';
import { openPayment } from '../gateway-events/open-payment.js';
import { GATEWAY_CURRENCIES } from '../payments/payment-types.js';
import { loadPayment } from '../payments/find-payment.js';
import { submitPayment } from '../gateway-events/submit-payment.js';
import { findSubscribablePlan } from '../plans/get-plan.js';
import { cancelAtGateway, endSubscriptionNow, wasNeverPaid } from '../subscription-rules/end-subscription.js';
import { authorizeTrialCard, cardCheckOrderId, firstPeriodAmount, releaseCardAuthorization, type CardCheck } from './authorize-trial-card.js';
import { loadSubscription } from './find-subscription.js';
import { beginTrial } from './begin-trial.js';
import { rememberSavedCard } from '../gateway-events/saved-card.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import { discountCoversNewPeriod } from '../../domain/discount.js';
import { checkPromotionCode, redeemPromotionCode } from '../coupons/redeem.js';
import { countDiscountPeriod, periodLine } from '../invoices/subscription-lines.js';
import { firstPeriodIsFree } from './free-first-period.js';

/** The most units a subscription may have. */
export const MAX_QUANTITY = 10_000;

export interface CreateSubscriptionInput {
  planId: string;
  paymentType: PaymentType;
  token?: string;
  customerDetails?: { first_name?: string; last_name?: string; email?: string; phone?: string };
  metadata?: Record<string, unknown>;
  /** Units of a per-unit plan (1 to 10,000; only 1 for any other plan). */
  quantity?: number;
  /** A customer's promotion code (docs/pricing.md): refused with 422 promotion_code_invalid naming why. */
  promotionCode?: string;
}

export interface CreatedSubscription {
  subscription: Subscription;
  /** The first payment; null when the subscription starts with a trial. */
  payment: Payment | null;
  /** A trial subscribed with a card: the card's pre-authorisation (saved, or waiting for 3-D Secure). */
  cardCheck: (CardCheck & { orderId: string; amount: string; currency: string }) | null;
}

/** The units a subscription to `plan` has: 1 unless the plan is per unit. */
export function quantityFor(plan: Plan, quantity: number | undefined): number {
  if (quantity === undefined) return 1;
  if (!Number.isInteger(quantity) || quantity < 1 || quantity > MAX_QUANTITY) {
    throw new ValidationError([{ field: 'quantity', message: `must be a whole number from 1 to ${MAX_QUANTITY}` }]);
  }
  if (!plan.perUnit && quantity !== 1) throw new ValidationError([{ field: 'quantity', message: `${plan.name} is not priced per unit: its quantity is 1` }]);
  return quantity;
}

function customerDetails(user: User, given: CreateSubscriptionInput['customerDetails']): Record<string, string> {
  const fromUser: Record<string, string | null> = { first_name: user.firstName, last_name: user.lastName, email: user.email, phone: user.phone };
  const merged: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...fromUser, ...given })) if (typeof v === 'string' && v !== '') merged[k] = v;
  return merged;
}

/**
 * NOTE: a trial is given once per user and plan, ever (docs/billing.md): the grant is recorded
 * when the trial starts, so later plan changes and cancellations cannot give it back.
 */
export async function trialAllowed(ctx: DataContext, user: Pick<User, 'id'>, plan: Plan): Promise<boolean> {
  if (plan.trialPeriodDays <= 0) return false;
  return (await ctx.em.count(TrialGrant, { user: user.id, plan: plan.id })) === 0;
}

const isLiveUserViolation = (err: unknown): boolean =>
  err instanceof UniqueConstraintViolationException && /live_user_id/i.test(err.message);

/**
 * Subscribes the user to an active plan: a trial, or an open invoice with its first payment
 * (paid from the wallet at once, or sent to the gateway after the commit). A never-paid live
 * subscription is canceled and replaced; any other live one answers `subscription_exists`.
 */
export async function createSubscription(ctx: ServiceContext, user: User, input: CreateSubscriptionInput): Promise<CreatedSubscription> {
  if (input.paymentType === 'credit_card' && !input.token?.trim()) {
    throw new ValidationError([{ field: 'token', message: 'is required for credit_card' }]);
  }
  const plan = await findSubscribablePlan(ctx, input.planId);
  if (input.paymentType !== 'wallet' && !GATEWAY_CURRENCIES.includes(plan.currency)) {
    throw new ValidationError([
      { field: 'payment_type', message: `the gateway charges ${GATEWAY_CURRENCIES.join(', ')} only; pay a ${plan.currency} plan from the wallet` },
    ]);
  }
  const quantity = quantityFor(plan, input.quantity);
  // Refused before a card is authorised or anything written; counted in the transaction below.
  const promo = input.promotionCode !== undefined ? await checkPromotionCode(ctx, { code: input.promotionCode, user, plan, quantity, at: ctx.clock.now() }) : null;
  const metadata: Record<string, unknown> = { ...input.metadata };
  const bank = input.paymentType === 'bank_transfer' ? ((metadata.bank as Bank | undefined) ?? 'bca') : null;
  if (bank) metadata.bank = bank;

  // A card given for a trial, or for a first period that costs nothing (free-first-period.ts),
  // is pre-authorised and saved before anything is written: a card that cannot be saved fails
  // the subscribe and leaves nothing behind (docs/billing.md).
  const subscriptionId = randomUUID();
  let cardCheck: CreatedSubscription['cardCheck'] = null;
  const forTrial = input.paymentType === 'credit_card' && (await trialAllowed(ctx, user, plan));
  const forFreePeriod = input.paymentType === 'credit_card' && !forTrial && promo !== null && firstPeriodIsFree(ctx, plan, quantity, promo, ctx.clock.now());
  if (forTrial || forFreePeriod) {
    await refuseIfLiveSubscription(ctx, user);
    const orderId = cardCheckOrderId(subscriptionId);
    const amount = firstPeriodAmount(ctx, plan, quantity);
    const check = await authorizeTrialCard(ctx, { orderId, amount, currency: plan.currency, token: input.token!, customer: customerDetails(user, input.customerDetails) });
    cardCheck = { ...check, orderId, amount, currency: plan.currency };
  }

  let created: { subscriptionId: string; paymentId: string | null; toCancel: string[] };
  try {
    created = await retryingTransaction(ctx.em, async (em) => {
      const tctx = { ...ctx, em };
      const at = ctx.clock.now();
      const owner = await em.findOneOrFail(User, user.id);
      const toCancel: string[] = [];
      const live = await em.findOne(Subscription, { liveUserId: owner.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (live) {
        await em.populate(live, ['plan', 'user']);
        if (!(await wasNeverPaid(tctx, live))) throw liveSubscriptionExists(live);
        toCancel.push(...(await endSubscriptionNow(tctx, live, 'replaced')));
        // The replaced subscription must leave the unique live slot before the new one takes it.
        await em.flush();
      }

      const trial = await trialAllowed(tctx, owner, plan);
      // The card was pre-authorised for a trial that another request has since taken.
      if (forTrial && !trial) throw new DomainError('subscription_exists', `The trial of ${plan.name} has already been used.`);
      const sub = em.create(Subscription, {
        id: subscriptionId,
        user: owner,
        plan,
        paymentType: input.paymentType,
        bank,
        metadata,
        customerDetails: customerDetails(owner, input.customerDetails),
        quantity,
        createdAt: at,
      } as Subscription);
      if (input.promotionCode !== undefined) {
        sub.discount = (await redeemPromotionCode(tctx, { code: input.promotionCode, user: owner, plan, quantity, at, subscription: sub })).discount;
      }
      if (cardCheck?.status === 'saved') rememberSavedCard(sub, cardCheck.card);
      if (forTrial && cardCheck?.status === 'pending') {
        // Waits for 3-D Secure: no trial and no access until the card is saved (confirm-trial-card.ts).
        // A free first period does not wait: it costs nothing, and the card is saved once 3-D Secure passes.
        startSubscription(sub, 'pending');
        await em.flush();
        return { subscriptionId: sub.id, paymentId: null, toCancel };
      }
      startSubscription(sub, trial ? 'trialing' : 'pending');
      if (trial) {
        beginTrial(tctx, sub, at);
        await em.flush();
        notify(tctx, owner, 'subscription_activated', subscriptionData(sub));
        return { subscriptionId: sub.id, paymentId: null, toCancel };
      }
      await em.flush();

      const periodEnd = cycleBoundary(at, plan.interval, plan.intervalUnit, 1);
      const discount = discountCoversNewPeriod(sub.discount, plan, at) ? sub.discount : null;
      const invoice = await createInvoice(tctx, {
        user: owner,
        subscription: sub,
        currency: plan.currency,
        billingReason: 'subscription_create',
        taxBehavior: plan.taxBehavior,
        issuedAt: at,
        dueAt: at,
        discount,
        lines: [
          {
            ...periodLine(plan, quantity, at, periodEnd),
            description: `${plan.name} (first ${plan.interval} ${plan.intervalUnit}${plan.interval === 1 ? '' : 's'})`,
            subject: { type: 'first_period', plan: plan.name, count: plan.interval, unit: plan.intervalUnit },
          },
        ],
      });
      countDiscountPeriod(sub, { discount, periodEnd });
      const payment = await openPayment(tctx, {
        user: owner,
        subscription: sub,
        invoice,
        paymentType: input.paymentType,
        amount: invoice.totalAmount,
        currency: plan.currency,
      });
      return { subscriptionId: sub.id, paymentId: payment.id, toCancel };
    });
  } catch (err) {
    if (cardCheck) await releaseCardAuthorization(ctx, cardCheck.orderId);
    if (isLiveUserViolation(err)) throw new DomainError('subscription_exists', 'You already have a live subscription.');
    throw err;
  }

  await cancelAtGateway(ctx, created.toCancel);
  // The card is saved: the hold on it has served its purpose.
  if (cardCheck?.status === 'saved') await releaseCardAuthorization(ctx, cardCheck.orderId);
  if (created.paymentId && input.paymentType !== 'wallet') {
    await submitPayment(ctx, created.paymentId, {
      bank: bank ?? undefined,
      cardToken: input.token,
      customer: customerDetails(user, input.customerDetails),
      onRejected: abandonSubscription,
    });
  }
  return {
    subscription: await loadSubscription(ctx.em, created.subscriptionId),
    payment: created.paymentId ? await loadPayment(ctx.em, created.paymentId) : null,
    cardCheck,
  };
}

/**
 * Checked before a card is pre-authorised, so that a customer who cannot subscribe gets no hold
 * on the card; the transaction checks again under its lock.
 */
async function refuseIfLiveSubscription(ctx: ServiceContext, user: User): Promise<void> {
  const live = await subscriptionInTheWay(ctx, user);
  if (live) throw liveSubscriptionExists(live);
}

/**
 * The user's live subscription that a new one may not replace: any live one but a never-paid one
 * (`pending`, or `past_due` with nothing settled), which a new subscribe cancels and replaces.
 * Read outside any transaction: a check made before anything is written (a card's hold, a
 * checkout link); createSubscription checks again under its lock.
 */
export async function subscriptionInTheWay(ctx: Pick<DataContext, 'em'>, user: User): Promise<Subscription | null> {
  const em = ctx.em.fork();
  const live = await em.findOne(Subscription, { liveUserId: user.id });
  return live && !(await wasNeverPaid({ em }, live)) ? live : null;
}

function liveSubscriptionExists(live: Subscription): DomainError {
  return new DomainError('subscription_exists', `You already have a ${live.status.replace(/_/g, ' ')} subscription (${live.id}); cancel it or change its plan.`);
}

/** The gateway refused the first payment: nothing stays live or payable (the voided invoice keeps its number). */
async function abandonSubscription(ctx: DataContext, payment: Payment): Promise<void> {
  const at = ctx.clock.now();
  if (payment.invoice) invoiceStates.applyIfAllowed(payment.invoice, 'void', at);
  const sub = payment.subscription;
  if (sub && subscriptionStates.applyIfAllowed(sub, 'cancel', at)) {
    sub.cancelReason = 'payment_rejected';
    sub.nextBillingDate = null;
  }
}
