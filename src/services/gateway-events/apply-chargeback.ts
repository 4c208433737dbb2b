import type { Payment } from '../../db/entities/payment.js';
import type { Topup } from '../../db/entities/topup.js';
import { add, compare, isPositive, subtract, type Money } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { issueChargebackCreditNotes } from '../credit-notes/issue-credit-note.js';
import { notify } from '../notifications/notify.js';
import { paymentSummaryData, topupSummaryData } from '../notifications/payloads.js';
import { withdrawFunds } from '../subscription-rules/period-funds.js';
import type { GatewayEvent } from './gateway-event.js';
import { chargebackReasons, chargebackSteps } from './natural-order.js';
import { forgetDisputedCard } from './saved-card.js';
import { chargedBackOfTopup, debitTopup, heldOfPayment, takeBackPayment, takeBackTopup, takeBackWalletCredits } from './reverse-payment.js';
import { CHARGEBACK_OVERLAP_REFERENCE, TOPUP_CHARGEBACK_REFERENCE } from '../wallet/take-back-references.js';

/*
 * Chargebacks (docs/gateway.md, "Chargebacks"): the card's issuer takes money back after a
 * dispute. A `chargeback` takes all that was left and is a reversal with its own status
 * (reverse-payment.ts). A `partial_chargeback` takes part: the payment records the total
 * (`chargeback_amount`), a credit note documents it, the customer is told, and no refund
 * figure, status, subscription or invoice changes. A message is a chargeback by its status
 * alone; the steps it proves (chargebackSteps) are applied in the order they happened, so a
 * full chargeback heard before the partial one still records the partial one first.
 * NOTE: each step's total is the truth, as for refunds: a step takes only what the earlier ones
 * did not, and a stale or repeated one (a lower total, a partial after the full one) takes
 * nothing. A total that reaches what the refunds left takes it all: money out never exceeds
 * money in.
 */

/**
 * What one step of a chargeback, with running total `total` (null: none reported), takes of
 * money of which `left` is still ours and `earlier` was charged back before: `all` of it (the
 * last step of a `chargeback`, or a total that reaches `left`), a `part` raising the total to
 * `total`, or null (nothing above `earlier`: a repeated or stale step).
 */
function whatIsTaken(total: Money | null, full: boolean, left: Money, earlier: Money): { all: true } | { all: false; total: Money; more: Money } | null {
  if (full || (total !== null && compare(total, left) >= 0)) return { all: true };
  if (total === null) return null;
  const more = subtract(total, earlier);
  return isPositive(more) ? { all: false, total, more } : null;
}

/** One step of a chargeback: its running total, whether it takes all that is left, and the issuer's free-text reason. */
interface Step {
  total: Money | null;
  full: boolean;
  reason: string | null;
}

/** The chargeback's steps, each with whether it takes all that is left (the last one of a full `chargeback`). */
function stepsOf(event: GatewayEvent): Step[] {
  const steps = chargebackSteps(event);
  const reasons = chargebackReasons(event);
  const full = event.transactionStatus === 'chargeback';
  if (steps.length === 0) return [{ total: null, full, reason: null }];
  return steps.map((total, i) => ({ total, full: full && i === steps.length - 1, reason: reasons[i] ?? null }));
}

/** A subscription payment's chargeback, inside applyGatewayEvent's transaction (subscription and payment locked). */
export async function applyPaymentChargeback(ctx: DataContext, payment: Payment, event: GatewayEvent, at: Date): Promise<string[]> {
  const changes: string[] = [];
  for (const step of stepsOf(event)) changes.push(...(await applyPaymentChargebackStep(ctx, payment, event, step, at)));
  if (changes.length > 0) changes.push(...forgetDisputedCard(ctx, payment, event));
  return changes;
}

async function applyPaymentChargebackStep(ctx: DataContext, payment: Payment, event: GatewayEvent, step: Step, at: Date): Promise<string[]> {
  // Only money we still hold can be taken: a payment reversed, refunded or charged back already is left alone.
  if (payment.status !== 'settled' && payment.status !== 'partially_refunded') return [];
  const taken = whatIsTaken(step.total, step.full, subtract(payment.grossAmount, payment.refundedAmount), payment.chargebackAmount);
  if (taken === null) return [];
  if (taken.all) return takeBackPayment(ctx, payment, event, at, 'charge_back');

  payment.chargebackAmount = taken.total;
  // The first chargeback's date by our clock (docs/tax.md, tax corrections).
  payment.chargedBackAt ??= at;
  // The time that money paid for is no longer paid: a later plan change must not credit it.
  await withdrawFunds(ctx, payment, taken.more, at);
  const changes = [`partial chargeback of ${taken.more}, ${taken.total} in all (${heldOfPayment(payment)} left)`];
  changes.push(
    ...(await takeBackWalletCredits(ctx, payment, add(payment.refundedAmount, taken.total), {
      referenceId: `${CHARGEBACK_OVERLAP_REFERENCE}${payment.id}:${taken.total}`,
      description: `Partial chargeback of payment ${payment.orderId} (${taken.total} in all) paid out what its wallet credit had already given back: taken back`,
    })),
  );
  changes.push(...(await issueChargebackCreditNotes(ctx, payment, step.reason)));
  notify(ctx, payment.user, 'payment_charged_back', { ...paymentSummaryData(payment), chargeback_amount: taken.total, fully_charged_back: false });
  return changes;
}

/** A credited top-up's chargeback: what the issuer took leaves the wallet too, even below zero (locks: the top-up, then the wallet). */
export async function applyTopupChargeback(ctx: DataContext, topup: Topup, event: GatewayEvent, at: Date): Promise<string[]> {
  const changes: string[] = [];
  for (const step of stepsOf(event)) changes.push(...(await applyTopupChargebackStep(ctx, topup, event, step, at)));
  return changes;
}

async function applyTopupChargebackStep(ctx: DataContext, topup: Topup, event: GatewayEvent, step: Step, at: Date): Promise<string[]> {
  if (topup.status !== 'success') return [];
  const taken = whatIsTaken(step.total, step.full, subtract(topup.amount, topup.refundedAmount), await chargedBackOfTopup(ctx, topup));
  if (taken === null) return [];
  if (taken.all) return takeBackTopup(ctx, topup, event, at, 'charge_back');

  const entry = await debitTopup(
    ctx,
    topup,
    taken.more,
    `${TOPUP_CHARGEBACK_REFERENCE}${topup.id}:${taken.total}`,
    `Top-up ${topup.orderId} partly charged back by the card's issuer (${taken.total} of ${topup.amount} in all)`,
  );
  notify(ctx, topup.user, 'payment_charged_back', { ...topupSummaryData(topup), chargeback_amount: taken.total, fully_charged_back: false, balance_after: entry.balanceAfter });
  return [`top-up partly charged back, ${taken.total} in all`, `wallet debited ${taken.more} (balance now ${entry.balanceAfter})`];
}
