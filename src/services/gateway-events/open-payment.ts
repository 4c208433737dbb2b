import type { Invoice } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import type { PaymentType, Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { isPositive } from '../../domain/money.js';
import { LIVE_SUBSCRIPTION_STATUSES } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';
import { postWalletEntry } from '../wallet/wallet-ledger.js';
import { applyGatewayEvent } from './apply-gateway-event.js';
import type { GatewayEvent } from './gateway-event.js';
import { newSubscriptionOrderId } from '../payments/order-id.js';
import { isUsageInvoice } from '../subscription-rules/usage-invoice.js';

export interface OpenPaymentInput {
  /** The payment's id when the caller must name it before it exists (a pending plan change). */
  id?: string;
  user: User;
  /** The invoice's subscription; the payment names it unless the invoice is a usage invoice (its lines loaded) or the subscription ended. */
  subscription: Subscription;
  invoice: Invoice;
  paymentType: PaymentType;
  amount: string;
  currency: string;
}

/**
 * Records a pending payment of an invoice inside the caller's transaction. A wallet payment is
 * debited at once and settled through applyGatewayEvent, so activation follows the same rules
 * as a gateway settlement; without the funds it throws `insufficient_funds` and the caller's
 * transaction writes nothing. Gateway payments are sent with submitPayment after the commit.
 *
 * NOTE: an invoice that asks nothing (a discount of 100 %, or an amount off of at least the
 * price) is paid at once whatever payment type was asked: no gateway takes an order of 0 and
 * the wallet has no entry of 0. Its payment is recorded as a wallet payment (the kind that never
 * reaches the gateway) with no ledger entry, and settles through the same applyGatewayEvent,
 * so a first invoice activates the subscription and a renewal advances it as any payment would.
 */
export async function openPayment(ctx: DataContext, input: OpenPaymentInput): Promise<Payment> {
  const nothingOwed = !isPositive(input.amount);
  const payment = ctx.em.create(Payment, {
    ...(input.id ? { id: input.id } : {}),
    orderId: newSubscriptionOrderId(),
    user: input.user,
    // A usage invoice's payment names no subscription, however it is made (isUsageInvoice), nor
    // does a payment made after its subscription ended: either pays its invoice and nothing else
    // (settlement-purchase.ts), never reviving, renewing or changing a subscription.
    subscription: isUsageInvoice(input.invoice) || !LIVE_SUBSCRIPTION_STATUSES.includes(input.subscription.status) ? null : input.subscription,
    invoice: input.invoice,
    status: 'pending',
    paymentType: nothingOwed ? 'wallet' : input.paymentType,
    grossAmount: input.amount,
    currency: input.currency,
    paymentDetails: {},
    createdAt: ctx.clock.now(),
  });
  await ctx.em.flush();
  if (nothingOwed) {
    await applyGatewayEvent(ctx, walletSettlement(payment, null));
    return payment;
  }
  if (input.paymentType !== 'wallet') return payment;

  const entry = await postWalletEntry(ctx, {
    user: input.user,
    kind: 'debit',
    amount: input.amount,
    currency: input.currency,
    source: 'payment',
    referenceId: payment.id,
    description: `Payment ${payment.orderId} of invoice ${input.invoice.number}`,
  });
  payment.paymentDetails = { wallet_transaction_id: entry.id };
  await applyGatewayEvent(ctx, walletSettlement(payment, entry.id));
  return payment;
}

function walletSettlement(payment: Payment, walletTransactionId: string | null): GatewayEvent {
  return {
    orderId: payment.orderId,
    transactionStatus: 'settlement',
    fraudStatus: null,
    statusCode: '200',
    grossAmount: payment.grossAmount,
    transactionId: null,
    paymentType: 'wallet',
    refundAmount: null,
    refunds: [],
    raw: {
      order_id: payment.orderId,
      transaction_status: 'settlement',
      payment_type: 'wallet',
      ...(walletTransactionId ? { wallet_transaction_id: walletTransactionId } : { nothing_owed: true }),
    },
  };
}
