import type { Payment } from '../../db/entities/payment.js';
import type { Topup } from '../../db/entities/topup.js';
import { add, compare, isDecimalText, isPositive, money, subtract, type Money } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { issueChargebackCreditNotes } from '../credit-notes/issue-credit-note.js';
import { notify } from '../notifications/notify.js';
import { paymentSummaryData, topupSummaryData } from '../notifications/payloads.js';
import { withdrawFunds } from '../subscription-rules/period-funds.js';
import type { GatewayEvent } from './gateway-event.js';
import { chargedBackOfTopup, debitTopup, heldOfPayment, takeBackPayment, takeBackTopup, takeBackWalletCredits } from './reverse-payment.js';
import { CHARGEBACK_OVERLAP_REFERENCE, TOPUP_CHARGEBACK_REFERENCE } from '../wallet/take-back-references.js';

/*
 * Chargebacks (DECISIONS.md §9, MIDTRANS.md §7.3): the card's issuer takes money back after a
 * dispute. A `chargeback` takes all that was left and is a reversal with its own status
 * (reverse-payment.ts). A `partial_chargeback` takes part: the notification carries the total
 * charged back so far in `refund_amount`; the payment records it (`chargeback_amount`), a credit
 * note documents it, the customer is told, and the subscription and invoice stay as they are.
 * NOTE: the reported total is the truth, as for refunds: each notification takes only what the
 * earlier ones did not, and a stale or repeated one (a lower total, a partial after the full
 * one) takes nothing. A total that reaches what the refunds left takes it all: money out never
 * exceeds money in.
 */


/**
 * What a chargeback event takes of money of which `left` is still ours and `earlier` was charged
 * back before: `all` of it (a `chargeback`, or a partial one whose total reaches `left`), a
 * `part` raising the total to `total`, or null (no total reported, or none above `earlier`: a
 * repeated or stale notification).
 */
function whatIsTaken(event: GatewayEvent, left: Money, earlier: Money): { all: true } | { all: false; total: Money; more: Money } | null {
  const reported = event.refundAmount !== null && isDecimalText(event.refundAmount) ? money(event.refundAmount) : null;
  if (event.transactionStatus === 'chargeback' || (reported !== null && compare(reported, left) >= 0)) return { all: true };
  if (reported === null) return null;
  const more = subtract(reported, earlier);
  return isPositive(more) ? { all: false, total: reported, more } : null;
}

/** A subscription payment's chargeback, inside applyGatewayEvent's transaction (subscription and payment locked). */
export async function applyPaymentChargeback(ctx: DataContext, payment: Payment, event: GatewayEvent, at: Date): Promise<string[]> {
  // Only money we still hold can be taken: a payment reversed, refunded or charged back already is left alone.
  if (payment.status !== 'settled' && payment.status !== 'partially_refunded') return [];
  const taken = whatIsTaken(event, subtract(payment.grossAmount, payment.refundedAmount), payment.chargebackAmount);
  if (taken === null) return [];
  if (taken.all) return takeBackPayment(ctx, payment, event, at, 'charge_back');

  payment.chargebackAmount = taken.total;
  // The time that money paid for is no longer paid: a later plan change must not credit it.
  await withdrawFunds(ctx, payment, taken.more, at);
  const changes = [`partial chargeback of ${taken.more}, ${taken.total} in all (${heldOfPayment(payment)} left)`];
  changes.push(
    ...(await takeBackWalletCredits(ctx, payment, add(payment.refundedAmount, taken.total), {
      referenceId: `${CHARGEBACK_OVERLAP_REFERENCE}${payment.id}:${taken.total}`,
      description: `Partial chargeback of payment ${payment.orderId} (${taken.total} in all) paid out what its wallet credit had already given back: taken back`,
    })),
  );
  changes.push(...(await issueChargebackCreditNotes(ctx, payment)));
  notify(ctx, payment.user, 'payment_charged_back', { ...paymentSummaryData(payment), chargeback_amount: taken.total, fully_charged_back: false });
  return changes;
}

/** A credited top-up's chargeback: what the issuer took leaves the wallet too, even below zero (locks: the top-up, then the wallet). */
export async function applyTopupChargeback(ctx: DataContext, topup: Topup, event: GatewayEvent, at: Date): Promise<string[]> {
  if (topup.status !== 'success') return [];
  const taken = whatIsTaken(event, subtract(topup.amount, topup.refundedAmount), await chargedBackOfTopup(ctx, topup));
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
