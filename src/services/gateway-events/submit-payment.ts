import { Payment } from '../../db/entities/payment.js';
import { paymentStates } from '../../domain/states/payment-states.js';
import { GatewayError, merchantSideFailure } from '../../gateway/errors.js';
import type { Bank, ChargeRequest, GatewayPaymentType, GatewayTransaction } from '../../gateway/types.js';
import type { DataContext, ServiceContext } from '../context.js';
import { lockSubscriptionThenPayment } from '../payments/lock-payment.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import { cancelAtGateway } from '../subscription-rules/end-subscription.js';
import { applyChargeAnswer } from './gateway-answers.js';
import { recordOrCancel } from './cancel-unrecorded-order.js';
import { releaseUnheldRedemption } from '../coupons/redemption-hold.js';

export interface SubmitPaymentOptions {
  bank?: Bank;
  /** credit_card: the customer's one-time token, or the subscription's saved token for later charges. */
  cardToken?: string | null;
  /** credit_card: charged without the customer present (a saved token; no 3-D Secure). */
  merchantInitiated?: boolean;
  customer?: Record<string, string>;
  /** How long the payment stays payable at the gateway (custom_expiry); the gateway's default otherwise. */
  expiryMinutes?: number;
  /**
   * Undoes what the payment was for when the gateway refuses the charge; runs in the
   * transaction that marks the payment failed.
   */
  onRejected?: (ctx: DataContext, payment: Payment) => Promise<void>;
}

function customerOf(details: Record<string, string> | undefined): ChargeRequest['customer'] {
  if (!details) return undefined;
  return { firstName: details.first_name, lastName: details.last_name, email: details.email, phone: details.phone };
}

/**
 * Sends a committed pending payment to the gateway (side effects only after the commit)
 * and applies the answer like a notification. A clear refusal fails the payment and runs
 * `onRejected`; an unknown outcome (timeout) keeps it pending with `outcomeUnknown` so that a
 * sync settles it. Either way the gateway error is rethrown for the caller to answer 502/503.
 */
export async function submitPayment(ctx: ServiceContext, paymentId: string, opts: SubmitPaymentOptions): Promise<void> {
  const payment = await ctx.em.fork().findOneOrFail(Payment, paymentId, { populate: ['invoice', 'subscription'] });
  // Paid inside openPayment (the wallet, or an invoice that asks nothing): never the gateway's.
  if (payment.paymentType === 'wallet') return;
  let tx: GatewayTransaction;
  try {
    tx = await ctx.gateway.charge({
      orderId: payment.orderId,
      grossAmount: payment.grossAmount,
      currency: payment.currency,
      paymentType: payment.paymentType as GatewayPaymentType,
      bank: payment.paymentType === 'bank_transfer' ? (opts.bank ?? 'bca') : undefined,
      cardToken: opts.cardToken ?? undefined,
      // NOTE: the card is saved on the first charge so that renewals can be charged without the customer.
      saveCard: payment.paymentType === 'credit_card' ? true : undefined,
      merchantInitiated: opts.merchantInitiated,
      customer: customerOf(opts.customer),
      expiryMinutes: opts.expiryMinutes,
      items: payment.invoice
        ? [{ id: payment.invoice.number, name: `Invoice ${payment.invoice.number}`, price: payment.grossAmount, quantity: 1 }]
        : undefined,
    });
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    // A charge whose outcome is unknown may have made an order: one whose failure cannot be
    // recorded either is canceled, as for an answer that could not be recorded.
    const record = () => retryingTransaction(ctx.em, async (em) => {
      const locked = await lockSubscriptionThenPayment(em, { id: paymentId });
      if (!locked) throw new Error(`payment ${paymentId} vanished`);
      await em.populate(locked, ['invoice', 'subscription', 'subscription.plan', 'subscription.user', 'user']);
      if (err.outcomeUnknown) {
        locked.outcomeUnknown = true;
        return;
      }
      if (paymentStates.applyIfAllowed(locked, 'fail', ctx.clock.now())) {
        locked.failureReason = merchantSideFailure(err);
        await opts.onRejected?.({ ...ctx, em }, locked);
        if (locked.subscription) await releaseUnheldRedemption({ ...ctx, em }, locked.subscription);
      }
    });
    if (err.outcomeUnknown) await recordOrCancel(ctx, payment.orderId, record);
    else await record();
    throw err;
  }

  // An answer that cannot be recorded (a full disk) is an error for the client: its order is
  // canceled at the gateway first, so that trying again never pays twice.
  await recordOrCancel(ctx, payment.orderId, () => applyChargeAnswer(ctx, paymentId, tx));
  await cancelIfWithdrawnMeanwhile(ctx, paymentId, tx);
}

/**
 * NOTE: a concurrent charge of the same invoice can withdraw this payment while its charge is on
 * the way; that charge's cancel then found no order at the gateway. The order the gateway has
 * just made would stay payable, so it is canceled here: every order we stop waiting for is
 * canceled at the gateway. A charge answered settled is left to the settlement
 * rules (an unusable settlement credits the wallet).
 */
async function cancelIfWithdrawnMeanwhile(ctx: ServiceContext, paymentId: string, tx: GatewayTransaction): Promise<void> {
  if (tx.transactionStatus !== 'pending') return;
  const payment = await ctx.em.fork().findOneOrFail(Payment, paymentId);
  if (payment.status === 'canceled' && payment.cancelRequestedAt) await cancelAtGateway(ctx, [payment.orderId]);
}
