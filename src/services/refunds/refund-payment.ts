import { Payment, Refund, type RefundMethod } from '../../db/entities/payment.js';
import { assertFullVoid, isUnsettledCapture, mustRefundByCancel, refundByCancel } from './refund-by-cancel.js';
import type { User } from '../../db/entities/user.js';
import { DomainError, InvalidStateError, NotFoundError, ValidationError } from '../../domain/errors.js';
import { compare, isPositive, parseAmountInput } from '../../domain/money.js';
import { paymentStates } from '../../domain/states/payment-states.js';
import { refundStates } from '../../domain/states/refund-states.js';
import type { DataContext, ServiceContext } from '../context.js';
import { postWalletEntry } from '../wallet/wallet-ledger.js';
import { settleRefundTotals } from './refund-totals.js';
import { loadPayment } from '../payments/find-payment.js';
import { lockSubscriptionThenPayment, type PaymentKey } from '../payments/lock-payment.js';
import { WALLET_REFUNDED_TYPES } from '../payments/payment-types.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import { cancelAtGateway } from '../subscription-rules/end-subscription.js';
import { refundLimit, type RefundBound } from './refund-rules.js';
import { acceptRefund } from './accept-refund.js';
import { classifyRefundFailure, type GatewayRefundAnswer, type GatewayRefundOutcome } from './gateway-refund-answer.js';

export interface RefundPaymentInput {
  /** A JSON number or decimal string; defaults to all the caller may refund (refund-rules.ts). */
  amount?: unknown;
  reason?: string;
  /** Use the gateway's direct refund (ignored for refunds to the wallet). */
  direct?: boolean;
}

export interface RefundedPayment {
  payment: Payment;
  refund: Refund;
  /** This call drove again a refund an earlier call made (its answer still unresolved): no new refund. */
  retried: boolean;
}

async function lockPayment(ctx: DataContext, where: PaymentKey): Promise<Payment> {
  // Its subscription is locked first: ending it (endWhatRefundPaysBack) must not lock it after the payment.
  const payment = await lockSubscriptionThenPayment(ctx.em, where);
  if (!payment) throw new NotFoundError('Payment');
  await ctx.em.populate(payment, ['invoice', 'user', 'subscription']);
  return payment;
}

/**
 * A customer's refund of their settled or partially refunded payment: at most the unused share
 * of the time it paid for (by default all of that), and the subscription it paid for ends now.
 */
export async function refundPayment(ctx: ServiceContext, user: User, id: string, input: RefundPaymentInput): Promise<RefundedPayment> {
  return refund(ctx, { id, user: user.id }, input, 'customer', false);
}

export interface StaffRefundInput extends RefundPaymentInput {
  /** Refund without ending the subscription the payment paid for. */
  keepSubscription?: boolean;
}

/** Support staff's refund (billing-admin payments refund), bounded only by what is refundable. */
export async function refundPaymentAsStaff(ctx: ServiceContext, orderId: string, input: StaffRefundInput): Promise<RefundedPayment> {
  return refund(ctx, { orderId }, input, 'staff', input.keepSubscription === true);
}

/**
 * Refunds a payment within its limit (refund-rules.ts). Payment types the gateway cannot refund
 * go to the user's wallet at once; the others are recorded `pending`, sent to the gateway after
 * the commit, and take effect only when it accepts them (accept-refund.ts): by its answer, or,
 * when the answer is lost, by its refund notification or payments sync (both match on
 * refund_key). The refund comes back `pending` then; a refusal throws `refund_refused`.
 */
async function refund(
  ctx: ServiceContext,
  where: { id: string; user: string } | { orderId: string },
  input: RefundPaymentInput,
  bound: RefundBound,
  keepSubscription: boolean,
): Promise<RefundedPayment> {
  const reason = input.reason?.trim() || null;
  const seen = await ctx.em.fork().findOne(Payment, where);
  const unsettledCapture = seen ? await isUnsettledCapture(ctx, seen) : false;

  const recorded = await retryingTransaction(ctx.em, async (em) => {
    const tctx = { ...ctx, em };
    const payment = await lockPayment(tctx, where);
    const toWallet = WALLET_REFUNDED_TYPES.includes(payment.paymentType);
    if (!paymentStates.can(payment, 'refund_partially')) {
      throw new InvalidStateError(`Only a settled payment can be refunded; this one is ${payment.status.replace(/_/g, ' ')}.`);
    }
    const refunds = await em.find(Refund, { payment }, { orderBy: { createdAt: 'asc' } });
    // A refund whose gateway answer was lost is retried under its own refund_key, never a new one
    // (a new key would be a second refund at the gateway).
    const unresolved = refunds.find((r) => r.status === 'pending' && r.destination === 'gateway');
    if (unresolved) {
      if (input.amount !== undefined && input.amount !== null && compare(parseAmountInput(input.amount, payment.currency), unresolved.amount) !== 0) {
        throw new InvalidStateError(`Refund ${unresolved.refundKey} of ${unresolved.amount} is still unresolved at the gateway; retry it with that amount, or wait for payments sync.`);
      }
      return { refundId: unresolved.id, paymentId: payment.id, refundKey: unresolved.refundKey, orderId: payment.orderId, amount: unresolved.amount, toWallet: false, toCancel: [] as string[], direct: unresolved.direct, method: unresolved.method, retried: true };
    }
    const limit = await refundLimit(tctx, payment, refunds, bound);
    if (!isPositive(limit.limit)) throw new InvalidStateError('Nothing of this payment is left to refund.');
    const amount = input.amount === undefined || input.amount === null ? limit.limit : parseAmountInput(input.amount, payment.currency);
    if (compare(amount, limit.limit) > 0) {
      throw new ValidationError([{ field: 'amount', message: `may not exceed the ${limit.limit} ${payment.currency} that remains refundable` }]);
    }
    const byCancel = !toWallet && unsettledCapture && mustRefundByCancel(payment);
    if (byCancel) assertFullVoid(payment, amount);
    const refund = em.create(Refund, {
      payment,
      refundKey: `${payment.orderId}-r${refunds.length + 1}`,
      amount,
      status: 'pending',
      destination: toWallet ? 'wallet' : 'gateway',
      direct: !toWallet && !byCancel && input.direct === true,
      method: toWallet ? 'wallet' : byCancel ? 'cancel' : input.direct === true ? 'direct_refund' : 'refund',
      reason,
      keepSubscription,
      createdAt: ctx.clock.now(),
    });
    await em.flush();
    let toCancel: string[] = [];
    if (toWallet) {
      ({ toCancel } = await acceptRefund(tctx, payment, refund));
      await postWalletEntry(tctx, {
        user: payment.user,
        kind: 'credit',
        amount,
        currency: payment.currency,
        source: 'refund',
        referenceId: refund.id,
        description: `Refund ${refund.refundKey} of payment ${payment.orderId}`,
      });
      await settleRefundTotals(tctx, payment, [...refunds, refund]);
    }
    return { refundId: refund.id, paymentId: payment.id, refundKey: refund.refundKey, orderId: payment.orderId, amount, toWallet, toCancel, direct: refund.direct, method: refund.method, retried: false };
  });

  await cancelAtGateway(ctx, recorded.toCancel);
  if (!recorded.toWallet) await refundAtGateway(ctx, recorded, recorded.direct, reason);
  const refund = await ctx.em.fork().findOneOrFail(Refund, recorded.refundId);
  return { payment: await loadPayment(ctx.em, recorded.paymentId), refund, retried: recorded.retried };
}

export interface RecordedRefund {
  refundId: string;
  paymentId: string;
  refundKey: string;
  orderId: string;
  amount: string;
  method?: RefundMethod;
}

/**
 * Sends a recorded refund to the gateway under its refund_key and settles it by the answer; also
 * used by `payments sync` to send again a refund whose answer was lost (same key, so at most
 * once). Returns `pending` when the answer was lost (a timeout, a 5xx): the refund notification,
 * a status query or sync settles it then. Throws `refund_refused` when the gateway said no, and
 * the gateway's error when the refund never reached it.
 */
export async function refundAtGateway(ctx: ServiceContext, recorded: RecordedRefund, direct: boolean, reason: string | null): Promise<GatewayRefundOutcome> {
  if (recorded.method === 'cancel') {
    return refundByCancel(ctx, recorded, (answer) => settleByAnswer(ctx, recorded, answer), () => refundAtGateway(ctx, { ...recorded, method: 'refund' }, direct, reason));
  }
  const request = { orderId: recorded.orderId, refundKey: recorded.refundKey, amount: recorded.amount, reason: reason ?? undefined };
  let answer: GatewayRefundAnswer;
  try {
    const result = direct ? await ctx.gateway.directRefund(request) : await ctx.gateway.refund(request);
    // A direct refund the bank denied answers 202 and refunds nothing.
    answer = result.accepted ? { kind: 'accepted' } : { kind: 'refused', statusCode: result.statusCode, message: String(result.raw['status_message'] ?? '') };
  } catch (err) {
    answer = classifyRefundFailure(err);
  }
  return settleByAnswer(ctx, recorded, answer);
}

/** Applies the gateway's answer to a recorded refund (accept-refund.ts), then answers or throws as refundAtGateway says. */
async function settleByAnswer(ctx: ServiceContext, recorded: RecordedRefund, answer: GatewayRefundAnswer): Promise<GatewayRefundOutcome> {
  if (answer.kind === 'unknown') return 'pending';
  const toCancel = await retryingTransaction(ctx.em, async (em) => {
    // The payment is locked before its refund: the refund notification may be confirming the same refund.
    const payment = await lockSubscriptionThenPayment(em, { id: recorded.paymentId });
    if (!payment) throw new NotFoundError('Payment');
    await em.populate(payment, ['invoice', 'user', 'subscription']);
    const refund = await em.findOneOrFail(Refund, recorded.refundId);
    if (answer.kind === 'accepted') {
      if (recorded.method === 'cancel') payment.gatewayStatus = 'cancel';
      const accepted = await acceptRefund({ ...ctx, em }, payment, refund);
      await settleRefundTotals({ ...ctx, em }, payment, await em.find(Refund, { payment }));
      return accepted.toCancel;
    }
    if (refundStates.applyIfAllowed(refund, 'fail', ctx.clock.now()) && answer.kind === 'refused') {
      refund.gatewayStatusCode = answer.statusCode;
      refund.gatewayMessage = answer.message.slice(0, 255);
    }
    return [];
  });
  if (answer.kind === 'accepted') {
    await cancelAtGateway(ctx, toCancel);
    return 'succeeded';
  }
  if (answer.kind === 'refused') {
    throw new DomainError('refund_refused', `The gateway refused the refund: ${answer.statusCode} ${answer.message}`.trim());
  }
  throw answer.error;
}
