import type { Payment } from '../../db/entities/payment.js';
import { compare, isPositive } from '../../domain/money.js';
import { paymentStates, type PaymentEvent } from '../../domain/states/payment-states.js';
import type { DataContext } from '../context.js';
import { issueRefundCreditNotes } from '../credit-notes/issue-credit-note.js';
import { notify } from '../notifications/notify.js';
import { paymentData } from '../notifications/payloads.js';
import { lockSubscriptionThenPayment } from '../payments/lock-payment.js';
import { endWhatRefundsBeforeSettlementPaidBack } from '../refunds/refund-rules.js';
import { refundEvent } from '../refunds/refund-totals.js';
import { applyPaymentChargeback } from './apply-chargeback.js';
import { recordGatewayRefunds } from './apply-refund.js';
import { onPaymentFailed, onPaymentSettled } from './apply-to-subscription.js';
import { assertAmount, type EventOutcome } from './event-outcome.js';
import { isChargeback, isFailure, isSuccess, UnknownOrderError, type GatewayEvent } from './gateway-event.js';
import { isReversal, reversePayment } from './reverse-payment.js';
import { refundsBeforeDispute } from './natural-order.js';
import { saveCardFromVerifiedEvent } from './saved-card.js';
import { holdRedemptionAgain, releaseUnheldRedemption } from '../coupons/redemption-hold.js';

const FAILURE_EVENTS: Record<string, PaymentEvent> = { deny: 'fail', failure: 'fail', cancel: 'cancel', expire: 'expire' };

/** A subscription payment's event: the payment's status, then what it paid for (or refunded). */
export async function applyToPayment(ctx: DataContext, event: GatewayEvent): Promise<EventOutcome> {
  // The subscription is locked as well (its status and period change), before the payment.
  const payment = await lockSubscriptionThenPayment(ctx.em, { orderId: event.orderId }, {
    subscription: ['plan', 'user'],
    payment: ['invoice', 'user'],
  });
  if (!payment) throw new UnknownOrderError(event.orderId);
  const at = ctx.clock.now();
  const changes: string[] = [];
  payment.transactionId ??= event.transactionId;
  // NOTE: a stale notification (a late pending, expire or challenge after the money arrived, a
  // partial chargeback after the full one) must not overwrite what the gateway reported since;
  // settlements and refunds always count.
  // Whether the gateway had told us the order was waiting (a 3-D Secure page, a bank transfer):
  // its failure now is a later one, not the charge's own answer.
  const failsLater = payment.gatewayStatus === 'pending';
  const chargeback = isChargeback(event) && payment.status !== 'charged_back';
  // NOTE: a card capture we withdrew and canceled at the gateway is void there (capture ->
  // cancel): its charge answer, read after the cancel, is older news and buys nothing.
  if (isSuccess(event) && payment.paymentType === 'credit_card' && payment.gatewayStatus === 'cancel') {
    return { changes: ['capture already voided at the gateway (canceled): nothing paid'] };
  }
  // A refund made before a dispute may be heard after the chargeback: the gateway's status is the chargeback's.
  const laterRefund = event.transactionStatus.endsWith('refund') && !(payment.gatewayStatus ?? '').endsWith('chargeback');
  const ourCancelConfirmed = event.transactionStatus === 'cancel' && payment.status === 'canceled';
  const reversal = isFailure(event) && isReversal(event, payment.status, payment);
  // A settlement heard after the reversal that followed it is older news: the gateway holds the reversal.
  const stale = isSuccess(event) && (payment.status === 'reversed' || payment.status === 'charged_back');
  if (!stale && (payment.status === 'pending' || isSuccess(event) || laterRefund || chargeback || ourCancelConfirmed || reversal)) {
    payment.gatewayStatus = event.transactionStatus;
    if (event.fraudStatus) payment.fraudStatus = event.fraudStatus;
  }
  payment.outcomeUnknown = false;

  if (isSuccess(event)) {
    changes.push(...(await settle(ctx, payment, event, at)));
  } else if (isChargeback(event)) {
    // NOTE: a chargeback takes back money that arrived: a payment still pending here (its
    // settlement's notification lost) settles first, as the facts happened.
    // The dispute's own refunds[] entries are the chargeback's, never refunds; the entries
    // before them are refunds made before the dispute (natural-order.ts), recorded first as a
    // refund message records them, so a refund whose notification was lost is not lost too.
    if (paymentStates.can(payment, 'settle')) changes.push(...(await settle(ctx, payment, event, at)));
    const refundsFirst = refundsBeforeDispute(event);
    if (refundsFirst && (payment.status === 'settled' || payment.status === 'partially_refunded')) {
      changes.push(...(await recordGatewayRefunds(ctx, payment, refundsFirst)));
    }
    changes.push(...(await applyPaymentChargeback(ctx, payment, event, at)));
  } else if (event.transactionStatus === 'capture') {
    changes.push(`capture held with fraud status ${event.fraudStatus ?? 'none'}`);
  } else if (event.transactionStatus === 'pending') {
    if (payment.status === 'pending') {
      notify(ctx, payment.user, 'payment_pending', paymentData(payment));
      changes.push('payment pending notified');
    }
  } else if (reversal) {
    // NOTE: a reversal proven by the message itself (settlement_time) may be heard before its
    // settlement, or instead of it: the payment settles first, as the facts happened, and the
    // late settlement then finds it reversed (natural-order.ts).
    if (paymentStates.can(payment, 'settle')) changes.push(...(await settle(ctx, payment, { ...event, transactionStatus: 'settlement' }, at)));
    changes.push(...(await reversePayment(ctx, payment, event, at)));
  } else if (isFailure(event) && event.transactionStatus === 'cancel' && payment.cancelRequestedAt) {
    // NOTE: the cancel we asked for ourselves (another method chosen, the invoice replaced or
    // ended) is a change of mind, never a failure: heard before we recorded the withdrawal (the
    // hosted checkout cancels first, then pays another way), it withdraws the payment, and tells
    // the customer nothing and leaves the subscription as it is.
    if (paymentStates.applyIfAllowed(payment, 'withdraw', at)) changes.push('payment canceled: the cancel we asked for');
  } else if (isFailure(event)) {
    const move = FAILURE_EVENTS[event.transactionStatus];
    if (paymentStates.applyIfAllowed(payment, move, at)) {
      changes.push(`payment ${payment.status}`);
      changes.push(...(await onPaymentFailed(ctx, payment, at, failsLater ? event : null)));
      if (payment.subscription) changes.push(...(await releaseUnheldRedemption(ctx, payment.subscription)));
    }
  } else if (event.transactionStatus === 'refund' || event.transactionStatus === 'partial_refund') {
    // NOTE: a refund, too, gives back money that arrived: a payment still pending here (its
    // settlement's notification lost, sync asking now) settles first (docs/gateway.md).
    if (paymentStates.can(payment, 'settle')) changes.push(...(await settle(ctx, payment, event, at)));
    changes.push(...(await recordGatewayRefunds(ctx, payment, event)));
  } else {
    changes.push(`status ${event.transactionStatus} recorded`);
  }
  return { changes };
}

/** The money arrived: the payment settles and buys what it paid for. */
async function settle(ctx: DataContext, payment: Payment, event: GatewayEvent, at: Date): Promise<string[]> {
  const changes: string[] = [];
  const customerFee = assertAmount(event, payment.grossAmount);
  // A card's capture may be the success and its settlement the first event to itemise the fee.
  if (isPositive(customerFee) && compare(customerFee, payment.customerFee) !== 0) {
    payment.customerFee = customerFee;
    changes.push(`customer paid a fee of ${customerFee} at the gateway (Automatic Fee Imposition)`);
  }
  changes.push(...saveCardFromVerifiedEvent(payment, event));
  if (!paymentStates.applyIfAllowed(payment, 'settle', at)) return changes;
  changes.push(`payment settled`);
  changes.push(...(await onPaymentSettled(ctx, payment, at)));
  // Money arrived for a first invoice whose code was given back when an earlier order lapsed.
  if (payment.subscription && payment.invoice?.billingReason === 'subscription_create' && payment.invoice.status === 'paid') {
    changes.push(...(await holdRedemptionAgain(ctx, payment.subscription, 'paid')));
  }
  // NOTE: a refund notification can overtake the settlement's; refunds already recorded count now.
  if (isPositive(payment.refundedAmount)) {
    paymentStates.apply(payment, refundEvent(payment, payment.refundedAmount), at);
    changes.push(`payment ${payment.status} by refunds recorded before the settlement`);
    if (await endWhatRefundsBeforeSettlementPaidBack(ctx, payment)) {
      changes.push('subscription canceled: its payment was refunded in full at the gateway');
    }
    changes.push(...(await issueRefundCreditNotes(ctx, payment)));
  }
  return changes;
}
