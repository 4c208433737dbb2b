import { Payment, Refund } from '../../db/entities/payment.js';
import type { Topup } from '../../db/entities/topup.js';
import { WalletTransaction } from '../../db/entities/wallet.js';
import { add, compare, isPositive, minimum, subtract, ZERO, type Money } from '../../domain/money.js';
import { invoiceStates } from '../../domain/states/invoice-states.js';
import { paymentStates } from '../../domain/states/payment-states.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import { topupStates } from '../../domain/states/topup-states.js';
import type { DataContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { paymentSummaryData, subscriptionData, topupSummaryData } from '../notifications/payloads.js';
import { settleRefundTotals } from '../refunds/refund-totals.js';
import { withdrawFunds } from '../subscription-rules/period-funds.js';
import { acceptRefund } from '../refunds/accept-refund.js';
import { REVERSAL_REFERENCE, TOPUP_CHARGEBACK_REFERENCE } from '../wallet/take-back-references.js';
import { postWalletEntry } from '../wallet/wallet-ledger.js';
import type { GatewayEvent } from './gateway-event.js';
import { gatewaySaysSettled, isProvenReversal } from './natural-order.js';

/*
 * Money the gateway takes back after a settlement (docs/gateway.md): a
 * `deny` or `cancel` after `settlement` is a reversal (Permata VA, Mandiri bill and Indomaret
 * settlements can flip to deny minutes later; a card capture can be voided before it settles),
 * and a `chargeback` is the card's issuer taking back all that was left after a dispute. The
 * payment becomes `reversed` or `charged_back`, what it paid for is owed again, and the customer
 * is told. The one home of that undoing and of the wallet arithmetic it needs; a partial
 * chargeback (apply-chargeback.ts) takes back through the same functions.
 */

/** A reversal or a chargeback of all that is left: the state machines' move and what the customer is told. */
export type TakeBack = 'reverse' | 'charge_back';

/**
 * Whether the event takes back money this payment or top-up already counted as received. A
 * `cancel` of a payment we had withdrawn ourselves is the echo of our own cancel request, which
 * can arrive after a late settlement: the money stays where the settlement put it (a settled
 * transfer cannot be canceled at the gateway, so the cancel it confirms came first there). Not
 * so for a card: our cancel of a capture voids it, and the money goes back to the card.
 */
export function isReversal(event: GatewayEvent, status: string, withdrawn: { cancelRequestedAt: Date | null; paymentType: string } | null = null): boolean {
  // Unless the gateway itself says the money had arrived before its cancel (our own record of a
  // settlement here does not: the cancel it confirms came first there).
  if (event.transactionStatus === 'cancel' && withdrawn?.cancelRequestedAt && withdrawn.paymentType !== 'credit_card' && !gatewaySaysSettled(event)) return false;
  if (event.transactionStatus !== 'deny' && event.transactionStatus !== 'cancel') return false;
  if (HELD.includes(status)) return true;
  // Money the message itself proves had arrived (natural-order.ts): a reversal heard before its
  // settlement, or instead of it, is still a reversal; the caller settles first.
  return NOT_PAID_YET.includes(status) && isProvenReversal(event);
}

/** Statuses of money we count as received (payments and top-ups). */
const HELD = ['settled', 'partially_refunded', 'refunded', 'success'];
/** Statuses a settlement may still move on from (payments and top-ups). */
const NOT_PAID_YET = ['pending', 'failed', 'canceled', 'expired'];

/** What the gateway still holds of a payment: its gross less what was refunded and charged back. */
export function heldOfPayment(payment: Pick<Payment, 'grossAmount' | 'refundedAmount' | 'chargebackAmount'>): Money {
  return subtract(payment.grossAmount, add(payment.refundedAmount, payment.chargebackAmount));
}

/**
 * Reverses a settled payment inside applyGatewayEvent's transaction (subscription and payment
 * locked there). A `cancel` that confirms our own void (a refund by cancel of an unsettled card
 * capture, refund-by-cancel.ts) is that refund succeeding, not a reversal.
 */
export async function reversePayment(
  ctx: DataContext,
  payment: Payment,
  event: GatewayEvent,
  at: Date,
): Promise<string[]> {
  if (event.transactionStatus === 'cancel') {
    const refunds = await ctx.em.find(Refund, { payment });
    const ownVoid = refunds.find((r) => r.method === 'cancel' && r.status !== 'failed');
    if (ownVoid) {
      await acceptRefund(ctx, payment, ownVoid);
      return [`refund ${ownVoid.refundKey} confirmed by the gateway's cancel`, ...(await settleRefundTotals(ctx, payment, refunds))];
    }
  }
  return takeBackPayment(ctx, payment, event, at, 'reverse');
}

/**
 * What taking a settled payment's money back undoes: the payment `reversed` or `charged_back`
 * (a chargeback records all that was left as charged back), its wallet credits taken back, its
 * invoice open again and due at once for dunning, the subscription `past_due`.
 */
export async function takeBackPayment(ctx: DataContext, payment: Payment, event: GatewayEvent, at: Date, move: TakeBack): Promise<string[]> {
  const held = heldOfPayment(payment);
  if (!paymentStates.applyIfAllowed(payment, move, at)) return [];
  const what = `${event.transactionStatus} after settlement`;
  const changes: string[] = [];
  if (move === 'reverse') {
    // Dated by our clock for tax corrections (docs/tax.md): updated_at moves with later changes.
    payment.reversedAt = at;
    changes.push(`payment reversed by the gateway (${what})`);
    notify(ctx, payment.user, 'payment_reversed', { ...paymentSummaryData(payment), gateway_status: event.transactionStatus });
  } else {
    // The first chargeback's date, kept when a partial one came earlier (docs/tax.md, tax corrections).
    payment.chargedBackAt ??= at;
    payment.chargebackAmount = add(payment.chargebackAmount, held);
    changes.push(`payment charged back: ${held} taken by the card's issuer, ${payment.chargebackAmount} in all`);
    notify(ctx, payment.user, 'payment_charged_back', { ...paymentSummaryData(payment), chargeback_amount: payment.chargebackAmount, fully_charged_back: true });
  }
  // Nothing of it is left with us: every wallet credit it made was money the gateway paid out again.
  changes.push(
    ...(await takeBackWalletCredits(ctx, payment, payment.grossAmount, {
      referenceId: `${REVERSAL_REFERENCE}${payment.id}`,
      description: `Payment ${payment.orderId} taken back by the gateway (${what}): its wallet credit taken back`,
    })),
    ...(await takeBackWalletRefunds(ctx, payment, what)),
  );
  // What it still paid for is unpaid again: a plan change or a refund must not count its unused
  // share as money in hand (a repayment funds the period anew).
  await withdrawFunds(ctx, payment, payment.grossAmount, at);

  const invoice = payment.invoice;
  if (invoice && !(await anotherPaymentPays(ctx, payment, invoice)) && invoiceStates.applyIfAllowed(invoice, 'reopen', at)) {
    // NOTE: due now: the next billing run takes it through dunning (retries, then cancellation).
    invoice.nextRetryAt = at;
    changes.push(`invoice ${invoice.number} open again`);
    const sub = payment.subscription;
    if (sub) {
      const was = sub.status;
      if (subscriptionStates.applyIfAllowed(sub, 'mark_past_due', at) && was !== 'past_due') {
        notify(ctx, sub.user, 'subscription_past_due', subscriptionData(sub));
        changes.push(`subscription ${was} -> past_due`);
      }
    }
  }
  return changes;
}

/**
 * NOTE: a payment the gateway cannot refund (a bank transfer, a Mandiri bill) is refunded to the
 * wallet; when the gateway then takes the payment itself back (a reversal), those refunds were
 * paid out of money we no longer have: they leave the wallet again, even below zero.
 */
async function takeBackWalletRefunds(ctx: DataContext, payment: Payment, what: string): Promise<string[]> {
  const toWallet = await ctx.em.find(Refund, { payment, destination: 'wallet', status: 'succeeded' });
  const amount = add(ZERO, ...toWallet.map((r) => r.amount));
  if (!isPositive(amount)) return [];
  const posted = await postWalletEntry(ctx, {
    user: payment.user,
    kind: 'debit',
    amount,
    currency: payment.currency,
    source: 'payment',
    referenceId: `${REVERSAL_REFERENCE}${payment.id}:refunds`,
    description: `Payment ${payment.orderId} taken back by the gateway (${what}): its refunds to the wallet taken back`,
    allowNegative: true,
  });
  return [`wallet debited ${amount} refunded to it from payment ${payment.orderId} (balance now ${posted.balanceAfter})`];
}

/**
 * Another settled payment of the same invoice still pays it (a duplicate payment made good), but
 * not one whose money all went elsewhere: credited to the wallet because the invoice was already
 * paid (concurrent charges), or refunded.
 */
async function anotherPaymentPays(ctx: DataContext, payment: Payment, invoice: NonNullable<Payment['invoice']>): Promise<boolean> {
  const others = await ctx.em.find(Payment, { invoice, id: { $ne: payment.id }, status: { $in: ['settled', 'partially_refunded'] } });
  // What it still holds for the invoice: neither credited to the wallet, refunded, nor charged back.
  return others.some((p) => isPositive(subtract(heldOfPayment(p), p.creditedAmount)));
}

/**
 * NOTE: money out never exceeds money in, per payment. Once the gateway has paid out `paidOut`
 * of it to the card (refunds and chargebacks; the whole gross in a reversal), the wallet credits
 * it made beyond what is left (a settlement nobody could use credited whole, proration credits
 * from its funds: `creditedAmount`) would be money from nowhere: that part is taken back, even
 * below zero like a top-up's reversal, and the payment's credited amount falls by as much.
 * `entry.referenceId` names what was paid out, so the same fact never debits twice.
 */
export async function takeBackWalletCredits(
  ctx: DataContext,
  payment: Payment,
  paidOut: Money,
  entry: { referenceId: string; description: string },
): Promise<string[]> {
  const beyond = subtract(add(paidOut, payment.creditedAmount), payment.grossAmount);
  if (!isPositive(beyond) || !isPositive(payment.creditedAmount)) return [];
  const amount = minimum(beyond, payment.creditedAmount);
  const posted = await postWalletEntry(ctx, {
    user: payment.user,
    kind: 'debit',
    amount,
    currency: payment.currency,
    source: 'payment',
    referenceId: entry.referenceId,
    description: entry.description,
    allowNegative: true,
  });
  payment.creditedAmount = subtract(payment.creditedAmount, amount);
  return [`wallet debited ${amount} of what payment ${payment.orderId} credited to it (balance now ${posted.balanceAfter})`];
}

/** What the partial chargebacks of a top-up took from the wallet so far. */
export async function chargedBackOfTopup(ctx: DataContext, topup: Topup): Promise<Money> {
  const debits = await ctx.em.find(WalletTransaction, { source: 'topup', kind: 'debit', referenceId: { $like: `${TOPUP_CHARGEBACK_REFERENCE}${topup.id}:%` } });
  return add(ZERO, ...debits.map((d) => d.amount));
}

/**
 * Takes a credited top-up's money back from the wallet, even below zero (the customer may have
 * spent it; `wallet verify` shows such balances): a reversal or a chargeback takes what the
 * refunds and partial chargebacks left, and the customer is told.
 */
export async function takeBackTopup(ctx: DataContext, topup: Topup, event: GatewayEvent, at: Date, move: TakeBack): Promise<string[]> {
  const chargedBack = await chargedBackOfTopup(ctx, topup);
  const held = subtract(topup.amount, add(topup.refundedAmount, chargedBack));
  if (!topupStates.applyIfAllowed(topup, move, at)) return [];
  const how = move === 'reverse' ? 'reversed by the gateway' : "charged back by the card's issuer";
  const debit = isPositive(held)
    ? await debitTopup(ctx, topup, held, `${REVERSAL_REFERENCE}${topup.id}`, `Top-up ${topup.orderId} ${how} (${event.transactionStatus} after settlement)`)
    : null;
  const balance = debit ? { balance_after: debit.balanceAfter } : {};
  if (move === 'reverse') notify(ctx, topup.user, 'payment_reversed', { ...topupSummaryData(topup), ...balance });
  else notify(ctx, topup.user, 'payment_charged_back', { ...topupSummaryData(topup), chargeback_amount: add(chargedBack, debit?.amount ?? ZERO), fully_charged_back: true, ...balance });
  const negative = debit && compare(debit.balanceAfter, ZERO) < 0 ? ` (balance now ${debit.balanceAfter})` : '';
  return [`top-up ${topup.status}`, ...(debit ? [`wallet debited ${debit.amount}${negative}`] : [])];
}

/** A debit of a top-up's money from the wallet, allowed below zero (the only source that may go there, verify-wallets.ts). */
export function debitTopup(ctx: DataContext, topup: Topup, amount: Money, referenceId: string, description: string): Promise<WalletTransaction> {
  return postWalletEntry(ctx, { user: topup.user, kind: 'debit', amount, currency: topup.currency, source: 'topup', referenceId, description, allowNegative: true });
}
