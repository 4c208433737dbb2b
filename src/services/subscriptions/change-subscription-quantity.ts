import { randomUUID } from 'node:crypto';
import { CreditNote } from '../../db/entities/credit-note.js';
import type { Payment } from '../../db/entities/payment.js';
import type { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { discountCovers } from '../../domain/discount.js';
import { DomainError, InvalidStateError, ValidationError } from '../../domain/errors.js';
import { add, compare, isPositive, multiplyAndRound, subtract, type Money } from '../../domain/money.js';
import { invoiceStates } from '../../domain/states/invoice-states.js';
import { subscriptionActions } from '../../domain/states/subscription-actions.js';
import { proratedPrice } from '../../domain/unused-share.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import type { DataContext, ServiceContext } from '../context.js';
import { issueWalletCreditNotes } from '../credit-notes/issue-credit-note.js';
import { openPayment } from '../gateway-events/open-payment.js';
import { changeInvoicePeriod, createInvoice, priceInvoice } from '../invoices/create-invoice.js';
import { notify } from '../notifications/notify.js';
import { subscriptionData } from '../notifications/payloads.js';
import { loadPayment } from '../payments/find-payment.js';
import { cancelAtGateway } from '../subscription-rules/end-subscription.js';
import { moveFundsToNewPeriod, unusedCredit } from '../subscription-rules/period-funds.js';
import { dropPendingChange } from '../subscription-rules/plan-change.js';
import { cancelWithdrawnOrders } from '../subscription-rules/withdrawn-orders.js';
import { postWalletEntry } from '../wallet/wallet-ledger.js';
import { MAX_QUANTITY } from './create-subscription.js';
import { findOwnSubscription, loadSubscription } from './find-subscription.js';
import { resolveOwnUnknownCharges } from './resolve-unknown-charges.js';
import { submitChangePayment } from './submit-change-payment.js';

/*
 * Seats (docs/billing.md, 'Money rules'): the units of a per-unit plan change like a plan does.
 * More units cost the prorated difference now and take effect when it is paid (the plan
 * change's `pending_change`, carrying the new quantity: a wallet or saved card settles at once);
 * fewer units wait for the period's end (`pending_quantity`, applied by the renewal) or, asked
 * for now, give back the unused share of what was paid for them to the wallet.
 */

export interface ChangeQuantityInput {
  quantity: number;
  /** Fewer units only: true takes them away now with a wallet credit, false at the period's end. */
  immediate?: boolean;
  /**
   * The amount a page showed (what more units cost, or what fewer now credit): when pricing now
   * gives another, nothing is changed or charged (QuantityChangeMoved) and the page shows the new one.
   */
  shown?: Money;
}

/** Raised when a change priced on a page no longer costs (or credits) what was shown. */
export class QuantityChangeMoved extends DomainError {
  constructor() {
    super('conflict', 'The price of this change is no longer the one shown; preview it again.');
    this.name = 'QuantityChangeMoved';
  }
}

export interface ChangedQuantity {
  subscription: Subscription;
  /** The payment of the prorated difference for more units, or null. */
  payment: Payment | null;
  /** The credit note of an immediate decrease's wallet credit, or null. */
  creditNote: CreditNote | null;
}

function assertQuantity(quantity: number): void {
  if (!Number.isInteger(quantity) || quantity < 1 || quantity > MAX_QUANTITY) {
    throw new ValidationError([{ field: 'quantity', message: `must be a whole number from 1 to ${MAX_QUANTITY}` }]);
  }
}

/** Whether the subscription's units may change (invalid_state otherwise). */
function assertChangeable(sub: Subscription): void {
  if (!sub.plan.perUnit) throw new InvalidStateError(`${sub.plan.name} is not priced per unit: its quantity cannot change.`);
  if (!subscriptionActions.can(sub, 'change_plan')) {
    throw new InvalidStateError(`Cannot change the quantity of a subscription that is ${sub.status.replace(/_/g, ' ')}.`);
  }
}

/** The pending change of units waiting for its payment, if the subscription's pending change is one. */
const isQuantityChange = (sub: Subscription): boolean => sub.pendingChange?.quantity !== undefined;

export interface QuantityChangePreview {
  /** What more units cost now (PPN and the discount included); null when nothing is charged now. */
  amountDue: Money | null;
  /** What an immediate decrease credits to the wallet; null for an increase or a trial. */
  credit: Money | null;
}

/** What a change to `quantity` now would charge or credit, priced as changeSubscriptionQuantity prices it. */
export async function previewQuantityChange(ctx: DataContext, user: User, id: string, quantity: number): Promise<QuantityChangePreview> {
  assertQuantity(quantity);
  const sub = await findOwnSubscription(ctx.em, user, id);
  assertChangeable(sub);
  const at = ctx.clock.now();
  if (sub.status === 'trialing' || quantity === sub.quantity) return { amountDue: null, credit: null };
  if (quantity > sub.quantity) {
    const { amount } = seatCharge(sub, quantity - sub.quantity, at);
    if (!isPositive(amount)) return { amountDue: null, credit: null };
    const pricing = priceInvoice(ctx.config, {
      currency: sub.plan.currency,
      taxBehavior: sub.plan.taxBehavior,
      discount: discountCovers(sub.discount, sub.plan, at) ? sub.discount : null,
      lines: [{ description: '', kind: 'proration', unitAmount: amount, discounted: true }],
    });
    return { amountDue: pricing.tax.total, credit: null };
  }
  return { amountDue: null, credit: givenUpShare(await unusedCredit(ctx, sub, at), sub.quantity - quantity, sub.quantity, sub.plan.currency) };
}

/**
 * What `added` units cost for what is left of the running period at `at`, rounded once
 * (proratedPrice): the change's invoice states it as one line of that amount, the units in its words.
 */
function seatCharge(sub: Subscription, added: number, at: Date): { amount: Money; periodStart: Date; periodEnd: Date } {
  const start = sub.currentPeriodStart;
  const end = sub.currentPeriodEnd;
  if (!start || !end || end.getTime() <= at.getTime()) throw new InvalidStateError('The subscription has no running period to add units to; try again after its renewal.');
  return { amount: proratedPrice(sub.plan.price, added, start, end, at, sub.plan.currency), periodStart: start, periodEnd: end };
}

/** The share of the unused money `unused` (paid for `of` units) that belongs to `givenUp` of them. */
function givenUpShare(unused: Money, givenUp: number, of: number, currency: string): Money {
  return multiplyAndRound(unused, givenUp, of, currency);
}

/**
 * Changes the units of a per-unit subscription (active or trialing). More units: a trial takes
 * them at once for nothing; otherwise the prorated difference is invoiced (the discount that
 * covers the subscription's price applies, PPN on what is left) and the units are added when it
 * is paid. Fewer: `pending_quantity` for the renewal, or now with the unused share of what was
 * paid for them credited to the wallet with a credit note. The current quantity withdraws a
 * pending change of units; a new change replaces one.
 */
export async function changeSubscriptionQuantity(ctx: ServiceContext, user: User, id: string, input: ChangeQuantityInput): Promise<ChangedQuantity> {
  assertQuantity(input.quantity);
  await resolveOwnUnknownCharges(ctx, user, id);
  const outcome = await retryingTransaction(ctx.em, async (em) => {
    const tctx = { ...ctx, em };
    const at = ctx.clock.now();
    const sub = await findOwnSubscription(em, user, id, { lock: true });
    assertChangeable(sub);
    const wanted = input.quantity;
    const old = sub.quantity;
    // NOTE: a new change of units replaces one waiting for its payment (its payment withdrawn).
    const toCancel = isQuantityChange(sub) ? await dropPendingChange(tctx, sub) : [];
    const none = { paymentId: null as string | null, creditNoteId: null as string | null, toCancel };
    if (wanted === old) {
      sub.pendingQuantity = null;
      return none;
    }
    if (sub.status === 'trialing') {
      // A trial costs nothing and buys nothing to credit: the units change, the trial runs on.
      sub.quantity = wanted;
      sub.pendingQuantity = null;
      notifyChange(tctx, sub, old, { proration: null });
      return none;
    }
    if (wanted < old && !(input.immediate ?? false)) {
      sub.pendingQuantity = wanted;
      notifyChange(tctx, sub, old, { scheduled: true, quantity: wanted });
      return none;
    }
    // A plan change waiting for its payment was priced on the running funds and units as they
    // are: changing them now would leave it wrongly priced, so one waits for the other.
    if (sub.pendingChange !== null) throw new InvalidStateError('A plan change is waiting for its payment; withdraw it or let it settle before changing the units now.');
    if (wanted < old) return { ...none, creditNoteId: await removeUnitsNow(tctx, sub, wanted, at, input.shown) };
    if (sub.paymentType === 'credit_card' && !sub.cardToken) throw new InvalidStateError('The subscription has no saved card to charge the added units to.');
    sub.pendingQuantity = null;
    return { ...none, paymentId: await billAddedUnits(tctx, sub, wanted, at, input.shown) };
  });

  await cancelAtGateway(ctx, outcome.toCancel);
  await cancelWithdrawnOrders(ctx, { subscriptionId: id });
  if (outcome.paymentId) await submitChangePayment(ctx, id, outcome.paymentId);
  return {
    subscription: await loadSubscription(ctx.em, id),
    payment: outcome.paymentId ? await loadPayment(ctx.em, outcome.paymentId) : null,
    creditNote: outcome.creditNoteId ? await ctx.em.findOneOrFail(CreditNote, outcome.creditNoteId) : null,
  };
}

/** `quantity` is the units the change leaves (a scheduled one's `extra` names those it will leave). */
function notifyChange(ctx: DataContext, sub: Subscription, old: number, extra: Record<string, unknown>): void {
  notify(ctx, sub.user, 'subscription_plan_changed', { ...subscriptionData(sub), quantity: sub.quantity, old_plan_name: sub.plan.name, old_quantity: old, ...extra });
}

/**
 * Invoices the added units for the rest of the period and opens its payment as the
 * subscription's pending change: when it settles (inside openPayment for a wallet) the plan
 * change's settlement (applyPaidPlanChange) carries the running funds over, funds the rest of
 * the period with the payment and sets the quantity.
 */
async function billAddedUnits(ctx: DataContext, sub: Subscription, wanted: number, at: Date, shown: Money | undefined): Promise<string | null> {
  const plan = sub.plan;
  const added = wanted - sub.quantity;
  const { amount, periodStart, periodEnd } = seatCharge(sub, added, at);
  const invoice = await createInvoice(ctx, {
    user: sub.user,
    subscription: sub,
    currency: plan.currency,
    billingReason: 'subscription_update',
    taxBehavior: plan.taxBehavior,
    issuedAt: at,
    dueAt: at,
    ...(await changeInvoicePeriod(ctx, sub, at, periodEnd)),
    discount: discountCovers(sub.discount, plan, at) ? sub.discount : null,
    lines: [{
      description: `Remaining time on ${plan.name} for ${added} more unit${added === 1 ? '' : 's'}`,
      subject: { type: 'remaining_time', plan: plan.name, units: added },
      kind: 'proration',
      unitAmount: amount,
      periodStart: at,
      periodEnd,
      discounted: true,
    }],
  });
  if (shown !== undefined && compare(shown, invoice.totalAmount) !== 0) throw new QuantityChangeMoved();
  if (!isPositive(invoice.totalAmount)) {
    // Nothing to pay (a discount covering all of it, or the period's last instant): the units are added now.
    const old = sub.quantity;
    sub.quantity = wanted;
    invoiceStates.applyIfAllowed(invoice, 'pay', at);
    notifyChange(ctx, sub, old, { proration: invoice.totalAmount });
    return null;
  }
  const credit = await unusedCredit(ctx, sub, at);
  const paymentId = randomUUID();
  sub.pendingChangePlan = plan;
  sub.pendingChange = {
    payment_id: paymentId,
    requested_at: at.toISOString(),
    period_start: periodStart.toISOString(),
    period_end: periodEnd.toISOString(),
    resets_period: false,
    // Priced so that the settlement carries every running fund over and credits nothing:
    // what the period costs after the change is what is unused of it plus this payment.
    credit,
    charge: add(credit, invoice.totalAmount),
    prior_period_end: periodEnd.toISOString(),
    quantity: wanted,
  };
  await openPayment(ctx, { id: paymentId, user: sub.user, subscription: sub, invoice, paymentType: sub.paymentType, amount: invoice.totalAmount, currency: plan.currency });
  return paymentId;
}

/**
 * Takes units away now: the running funds are closed at `at`; the share of their unused part
 * that paid for the units given up goes to the wallet (a credit note per payment it came from),
 * the rest keeps paying for the period. Returns the first credit note's id, or null.
 */
async function removeUnitsNow(ctx: DataContext, sub: Subscription, wanted: number, at: Date, shown: Money | undefined): Promise<string | null> {
  const plan = sub.plan;
  const old = sub.quantity;
  const unused = await unusedCredit(ctx, sub, at);
  const giveBack = givenUpShare(unused, old - wanted, old, plan.currency);
  if (shown !== undefined && compare(shown, giveBack) !== 0) throw new QuantityChangeMoved();
  let noteId: string | null = null;
  let credited: Money = '0.00';
  if (isPositive(giveBack) && sub.currentPeriodEnd) {
    const moved = await moveFundsToNewPeriod(ctx, sub, at, subtract(unused, giveBack), at, sub.currentPeriodEnd);
    credited = moved.credited;
    if (isPositive(credited)) {
      const description = `Unused time on ${plan.name} for ${old - wanted} unit${old - wanted === 1 ? '' : 's'} given up`;
      const entry = await postWalletEntry(ctx, {
        user: sub.user,
        kind: 'credit',
        amount: credited,
        currency: plan.currency,
        source: 'proration',
        referenceId: `quantity-change:${sub.id}:${randomUUID()}`,
        description,
      });
      const subject = { type: 'unused_time', plan: plan.name, to: plan.name };
      const notes = await issueWalletCreditNotes(ctx, entry, 'proration_credit', moved.parts.map((p) => ({ payment: p.payment, amount: p.unused, description, subject })));
      noteId = notes[0]?.id ?? null;
    }
  }
  sub.quantity = wanted;
  sub.pendingQuantity = null;
  notifyChange(ctx, sub, old, { proration: null, credited });
  return noteId;
}
