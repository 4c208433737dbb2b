import type { Payment } from '../../db/entities/payment.js';
import { Plan } from '../../db/entities/plan.js';
import type { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { InvalidStateError } from '../../domain/errors.js';
import { compare, isPositive, multiplyAndRound, negate, subtract } from '../../domain/money.js';
import { invoiceStates } from '../../domain/states/invoice-states.js';
import { subscriptionActions } from '../../domain/states/subscription-actions.js';
import type { Bank } from '../../gateway/types.js';
import type { DataContext, ServiceContext } from '../context.js';
import { createInvoice } from '../invoices/create-invoice.js';
import { notify } from '../notifications/notify.js';
import { subscriptionData } from '../payments/apply-gateway-event.js';
import { loadPayment } from '../payments/find-payment.js';
import { openPayment } from '../payments/open-payment.js';
import { submitPayment } from '../payments/submit-payment.js';
import { findSubscribablePlan } from '../plans/get-plan.js';
import { postWalletEntry } from '../wallet/wallet-ledger.js';
import { findOwnSubscription, loadSubscription } from './find-subscription.js';
import { retryingTransaction } from '../shared/retrying-transaction.js';

export interface ChangePlanInput {
  planId: string;
  /** True (default) switches now with proration; false schedules the switch for the next renewal. */
  immediate?: boolean;
}

export interface ChangedPlan {
  subscription: Subscription;
  /** The proration payment, or null (scheduled change, wallet credit, or nothing to charge). */
  payment: Payment | null;
}

export interface Proration {
  /** What the unused time of the old plan was worth. */
  credit: string;
  /** What the same time on the new plan costs. */
  charge: string;
  /** charge − credit: positive is owed now, negative goes to the wallet. */
  net: string;
}

/**
 * NOTE: proration by the unused fraction of the current period, in milliseconds:
 * net = new price × unused/total − old price × unused/total, each rounded to what the currency
 * can be charged in. Outside a running period nothing is prorated.
 */
export function prorate(sub: Subscription, oldPlan: Plan, newPlan: Plan, at: Date): Proration | null {
  if (!sub.currentPeriodStart || !sub.currentPeriodEnd) return null;
  const total = sub.currentPeriodEnd.getTime() - sub.currentPeriodStart.getTime();
  const unused = Math.min(total, Math.max(0, sub.currentPeriodEnd.getTime() - at.getTime()));
  if (total <= 0 || unused <= 0) return null;
  const credit = multiplyAndRound(oldPlan.price, unused, total, oldPlan.currency);
  const charge = multiplyAndRound(newPlan.price, unused, total, newPlan.currency);
  return { credit, charge, net: subtract(charge, credit) };
}

/**
 * Moves a subscription to another plan in the same currency: now, with proration (an invoice
 * and payment for a positive amount, a wallet credit for a negative one), or at the next
 * renewal as `pending_plan`.
 */
export async function changeSubscriptionPlan(ctx: ServiceContext, user: User, id: string, input: ChangePlanInput): Promise<ChangedPlan> {
  const immediate = input.immediate ?? true;
  const newPlan = await findSubscribablePlan(ctx, input.planId);

  const outcome = await retryingTransaction(ctx.em, async (em) => {
    const tctx = { ...ctx, em };
    const at = ctx.clock.now();
    const sub = await findOwnSubscription(em, user, id, { lock: true });
    subscriptionActions.assert(sub, 'change_plan');
    const oldPlan = sub.plan;
    if (oldPlan.id === newPlan.id) throw new InvalidStateError(`The subscription is already on ${oldPlan.slug}.`);
    if (oldPlan.currency !== newPlan.currency) {
      throw new InvalidStateError(`${newPlan.slug} is priced in ${newPlan.currency}, the subscription in ${oldPlan.currency}.`);
    }
    const plan = await em.findOneOrFail(Plan, newPlan.id);
    if (!immediate) {
      sub.pendingPlan = plan;
      notify(tctx, sub.user, 'subscription_plan_changed', { ...subscriptionData(sub), old_plan_name: oldPlan.name, plan_name: plan.name, scheduled: true });
      return { paymentId: null, oldPlanId: oldPlan.id };
    }

    let paymentId: string | null = null;
    const proration = sub.status === 'active' ? prorate(sub, oldPlan, plan, at) : null;
    if (proration && isPositive(proration.net)) {
      if (sub.paymentType === 'credit_card' && !sub.cardToken) {
        throw new InvalidStateError('The subscription has no saved card to charge the proration to.');
      }
      const invoice = await createInvoice(tctx, {
        user: sub.user,
        subscription: sub,
        currency: plan.currency,
        billingReason: 'subscription_update',
        issuedAt: at,
        dueAt: at,
        periodStart: at,
        periodEnd: sub.currentPeriodEnd,
        lines: [
          { description: `Unused time on ${oldPlan.name}`, kind: 'proration', unitAmount: negate(proration.credit), periodStart: at, periodEnd: sub.currentPeriodEnd },
          { description: `Remaining time on ${plan.name}`, kind: 'proration', unitAmount: proration.charge, periodStart: at, periodEnd: sub.currentPeriodEnd },
        ],
      });
      const payment = await openPayment(tctx, {
        user: sub.user,
        subscription: sub,
        invoice,
        paymentType: sub.paymentType,
        amount: invoice.totalAmount,
        currency: plan.currency,
      });
      paymentId = payment.id;
    } else if (proration && compare(proration.net, '0') < 0) {
      await postWalletEntry(tctx, {
        user: sub.user,
        kind: 'credit',
        amount: negate(proration.net),
        currency: plan.currency,
        source: 'proration',
        referenceId: `plan-change:${sub.id}:${at.getTime()}`,
        description: `Unused time on ${oldPlan.name} after moving to ${plan.name}`,
      });
    }
    sub.plan = plan;
    sub.pendingPlan = null;
    notify(tctx, sub.user, 'subscription_plan_changed', { ...subscriptionData(sub), old_plan_name: oldPlan.name, proration: proration?.net ?? null });
    return { paymentId, oldPlanId: oldPlan.id };
  });

  if (outcome.paymentId) {
    const sub = await loadSubscription(ctx.em, id);
    if (sub.paymentType !== 'wallet') {
      await submitPayment(ctx, outcome.paymentId, {
        bank: (sub.bank as Bank | null) ?? undefined,
        cardToken: sub.cardToken,
        merchantInitiated: sub.paymentType === 'credit_card',
        customer: sub.customerDetails,
        onRejected: (t, payment) => revertPlanChange(t, payment, outcome.oldPlanId),
      });
    }
  }
  return {
    subscription: await loadSubscription(ctx.em, id),
    payment: outcome.paymentId ? await loadPayment(ctx.em, outcome.paymentId) : null,
  };
}

/** The gateway refused the proration charge: the subscription goes back to its old plan. */
async function revertPlanChange(ctx: DataContext, payment: Payment, oldPlanId: string): Promise<void> {
  if (payment.invoice) invoiceStates.applyIfAllowed(payment.invoice, 'void', ctx.clock.now());
  if (payment.subscription) payment.subscription.plan = ctx.em.getReference(Plan, oldPlanId);
}
