import { randomUUID } from 'node:crypto';
import { Invoice } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import { Plan } from '../../db/entities/plan.js';
import type { Subscription } from '../../db/entities/subscription.js';
import { add, isPositive, subtract, type Money } from '../../domain/money.js';
import type { PlanChangeTerms } from '../../domain/plan-change-pricing.js';
import { invoiceStates } from '../../domain/states/invoice-states.js';
import { paymentStates } from '../../domain/states/payment-states.js';
import { subscriptionActions } from '../../domain/states/subscription-actions.js';
import { cancelInvoicePayments } from '../payments/cancel-invoice-payments.js';
import { creditUnusableSettlement } from '../payments/credit-unusable-settlement.js';
import { issueWalletCreditNotes } from '../credit-notes/issue-credit-note.js';
import type { DataContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { subscriptionData } from '../notifications/payloads.js';
import { postWalletEntry } from '../wallet/wallet-ledger.js';
import { fundPeriod, moveFundsToNewPeriod } from './period-funds.js';
import { forgetPendingChange } from './pending-change.js';
import type { InvoiceLineInput } from '../invoices/create-invoice.js';
import { usageToBillAgain } from './end-subscription.js';
import { issueUsageInvoice } from './usage-invoice.js';

/*
 * NOTE: a change that costs money takes effect when it is paid (docs/billing.md, 'Money rules'). These are the
 * steps shared by change-plan (a change paid at once or owing nothing) and by the settlement of
 * a change's payment (applyGatewayEvent): switching the plan, and dropping a change whose
 * payment failed or was replaced.
 */

/**
 * Switches the subscription to `plan` as priced by `terms` at `at`: the running funds pay for
 * the new period up to its cost (with `payment`, when one was needed), any excess credit goes
 * to the wallet, and a change across intervals starts a new period. The usage so far is billed
 * under the old plan on a usage-only invoice of its own, at the moment the change applies
 * (never on the change's invoice, which is what the preview showed), for the use case to
 * collect (subscriptions/collect-usage-invoices.ts).
 */
export async function switchPlan(ctx: DataContext, sub: Subscription, plan: Plan, terms: PlanChangeTerms, at: Date, payment: Payment | null): Promise<Money> {
  const oldPlan = sub.plan;
  const paid = payment ? subtract(payment.grossAmount, payment.refundedAmount) : '0.00';
  const { credited, parts } = await moveFundsToNewPeriod(ctx, sub, at, subtract(terms.charge, paid), at, terms.periodEnd);
  if (payment) fundPeriod(ctx, { subscription: sub, payment, amount: paid, start: at, end: terms.periodEnd });
  if (isPositive(credited)) {
    const description = `Unused time on ${oldPlan.name} after moving to ${plan.name}`;
    const entry = await postWalletEntry(ctx, {
      user: sub.user,
      kind: 'credit',
      amount: credited,
      currency: plan.currency,
      source: 'proration',
      // NOTE: one entry per switch, never per moment: two switches in the same millisecond (a
      // downgrade right after a paid upgrade) each credit what they free; a reference made of the
      // time turned the second into the first entry again, and the customer lost that credit.
      referenceId: `plan-change:${sub.id}:${randomUUID()}`,
      description,
    });
    // The subject lets the credit note render these words in its document's language.
    const subject = { type: 'unused_time', plan: oldPlan.name, to: plan.name };
    await issueWalletCreditNotes(ctx, entry, 'proration_credit', parts.map((p) => ({ payment: p.payment, amount: p.unused, description, subject })));
  }
  sub.plan = plan;
  // A plan not priced per unit has one unit (units asked for at the period's end go with the old plan).
  if (!plan.perUnit) {
    sub.quantity = 1;
    sub.pendingQuantity = null;
  }
  sub.pendingPlan = null;
  sub.pendingChangePlan = null;
  sub.pendingChange = null;
  const billAgain = await voidReplacedRenewals(ctx, sub, terms.periodEnd, at);
  // The usage the replaced renewals billed is billed here again, as they priced it.
  await issueUsageInvoice(ctx, sub, oldPlan, ctx.clock.now(), billAgain);
  if (terms.resetsPeriod) {
    sub.billingAnchor = terms.periodStart;
    sub.currentPeriodStart = terms.periodStart;
    sub.currentPeriodEnd = terms.periodEnd;
    sub.nextBillingDate = terms.periodEnd;
  }
  // `quantity`: the units the change leaves, dated by this record (MRR counts them from now on).
  notify(ctx, sub.user, 'subscription_plan_changed', { ...subscriptionData(sub), quantity: sub.quantity, old_plan_name: oldPlan.name, proration: terms.net, credited });
  return credited;
}

/**
 * NOTE: a change's period replaces the renewal invoices it overlaps (a change made after the
 * period ended, while its renewal invoice is open, starts a new period at once): they are voided
 * and their pending payments withdrawn, else dunning would later cancel a subscription whose
 * period is paid. The orders go to the gateway's cancel after the commit
 * (cancelWithdrawnOrders).
 */
async function voidReplacedRenewals(ctx: DataContext, sub: Subscription, periodEnd: Date, at: Date): Promise<InvoiceLineInput[]> {
  const replaced = await ctx.em.find(Invoice, { subscription: sub, status: 'open', billingReason: 'subscription_cycle', periodStart: { $lt: periodEnd } }, { populate: ['lines'] });
  const billAgain: InvoiceLineInput[] = [];
  for (const invoice of replaced) {
    await cancelInvoicePayments(ctx.em, { invoice }, at);
    invoiceStates.apply(invoice, 'void', at);
    billAgain.push(...usageToBillAgain(invoice.lines.getItems()));
  }
  return billAgain;
}

/**
 * The payment of a pending change settled: the change applies as it was priced. Returns false
 * when the payment no longer belongs to the subscription's pending change (replaced, canceled,
 * or priced against a period that has since renewed); its money is then credited to the wallet.
 */
export async function applyPaidPlanChange(ctx: DataContext, payment: Payment): Promise<string[]> {
  const sub = payment.subscription!;
  const pending = sub.pendingChange;
  const current = pending && pending.payment_id === payment.id && sub.pendingChangePlan && subscriptionActions.can(sub, 'change_plan')
    && pending.prior_period_end === (sub.currentPeriodEnd?.toISOString() ?? null);
  if (!current) {
    // Paid too late for its change (the period it was priced against was taken back or renewed
    // since): the change is over, but its invoice is paid, the code it redeemed spent.
    if (pending?.payment_id === payment.id) await forgetPendingChange(ctx, sub, true);
    return creditUnusedChangePayment(ctx, payment);
  }
  const plan = await ctx.em.findOneOrFail(Plan, sub.pendingChangePlan!.id);
  const at = new Date(pending.requested_at);
  const periodStart = new Date(pending.period_start);
  const terms: PlanChangeTerms = {
    credit: pending.credit,
    charge: pending.charge,
    net: payment.grossAmount,
    periodStart,
    periodEnd: new Date(pending.period_end),
    resetsPeriod: pending.resets_period,
  };
  // A change of units is paid the same way: the running funds carry over, the payment adds its units.
  if (pending.quantity !== undefined) sub.quantity = pending.quantity;
  // The discount from the change on becomes the subscription's now (a change asked for before it
  // was kept here set it when asked, and has none).
  if (pending.discount !== undefined) sub.discount = pending.discount;
  await switchPlan(ctx, sub, plan, terms, at, payment);
  return [pending.quantity !== undefined ? `quantity changed to ${pending.quantity}` : `plan changed to ${plan.slug}`];
}

/** NOTE: no payment is kept silently: money for a change that will not happen goes to the wallet. */
async function creditUnusedChangePayment(ctx: DataContext, payment: Payment): Promise<string[]> {
  const amount = subtract(payment.grossAmount, add(payment.refundedAmount, payment.creditedAmount));
  if (!isPositive(amount)) return [];
  return [
    await creditUnusableSettlement(ctx, {
      user: payment.user,
      orderId: payment.orderId,
      amount,
      currency: payment.currency,
      reason: 'plan_change_dropped',
      source: 'refund',
      referenceId: `unused-change:${payment.id}`,
      payment,
    }),
  ];
}

/**
 * Drops the subscription's pending change: its payment is canceled (when still pending) and its
 * invoice voided. Returns the order ids to cancel at the gateway after the commit.
 */
export async function dropPendingChange(ctx: DataContext, sub: Subscription): Promise<string[]> {
  const pending = await forgetPendingChange(ctx, sub);
  if (!pending) return [];
  const at = ctx.clock.now();
  const payment = await ctx.em.findOne(Payment, pending.payment_id, { populate: ['invoice'] });
  if (!payment) return [];
  const orderIds: string[] = [];
  if (paymentStates.applyIfAllowed(payment, 'withdraw', at) && payment.paymentType !== 'wallet') orderIds.push(payment.orderId);
  if (payment.invoice) invoiceStates.applyIfAllowed(payment.invoice, 'void', at);
  return orderIds;
}

/**
 * A change's payment failed, expired or was canceled: the change is dropped and the
 * subscription stays as it was (it is not past due: its own period is paid).
 */
export async function onChangePaymentFailed(ctx: DataContext, payment: Payment): Promise<string[]> {
  const sub = payment.subscription!;
  if (payment.invoice) invoiceStates.applyIfAllowed(payment.invoice, 'void', ctx.clock.now());
  if (sub.pendingChange?.payment_id !== payment.id) return ['plan change payment failed: nothing pending'];
  await forgetPendingChange(ctx, sub);
  return ['pending plan change dropped'];
}

/**
 * True for a payment made for a plan change (its invoice is a `subscription_update`). A usage
 * invoice's payment (also a `subscription_update`) has no subscription: never one (collect-usage-invoices.ts).
 */
export function isChangePayment(payment: Payment): boolean {
  return (payment.invoice as Invoice | null)?.billingReason === 'subscription_update';
}
