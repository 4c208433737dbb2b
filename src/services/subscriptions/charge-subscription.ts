import { randomUUID } from 'node:crypto';
import { Invoice } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import type { PaymentType, Subscription } from '../../db/entities/subscription.js';
import type { EntityManager } from '@mikro-orm/core';
import type { User } from '../../db/entities/user.js';
import { DomainError, InvalidStateError, ValidationError } from '../../domain/errors.js';
import { subscriptionActions } from '../../domain/states/subscription-actions.js';
import type { Bank } from '../../gateway/types.js';
import type { ServiceContext } from '../context.js';
import { cancelAtGateway } from '../subscription-rules/end-subscription.js';
import { findOwnSubscription } from './find-subscription.js';
import { cancelOrAskGateway, resolveUnknownCharges } from './resolve-unknown-charges.js';
import { cancelInvoicePayments } from '../payments/cancel-invoice-payments.js';
import { loadPayment } from '../payments/find-payment.js';
import { openPayment } from '../gateway-events/open-payment.js';
import { submitPayment } from '../gateway-events/submit-payment.js';
import { retryingTransaction } from '../shared/retrying-transaction.js';

export interface ChargeSubscriptionInput {
  subscriptionId: string;
  /** Pay this time another way than the subscription's payment type. */
  paymentType?: PaymentType;
  /** A new card token (implies credit_card); it becomes the saved card once its charge succeeds. */
  token?: string;
  /** bank_transfer: the virtual-account bank of this payment (default: the subscription's, else bca). */
  bank?: Bank;
}

/**
 * `POST /payments/charge/`: a new payment of the subscription's oldest open invoice, with the
 * subscription's payment type or the one asked for, or a new card. Earlier pending orders of
 * that invoice are withdrawn and canceled at the gateway first (one it refuses to cancel may
 * have been paid: its status is applied, cancelOrAskGateway), so only the new one can be paid. NOTE: the customer is present, so a saved card is charged as a
 * customer-initiated transaction (docs/gateway.md); only renewals are merchant-initiated.
 */
export async function chargeSubscription(ctx: ServiceContext, user: User, input: ChargeSubscriptionInput): Promise<Payment> {
  const { subscriptionId, paymentType: askedType, token, bank } = input;
  if (token !== undefined && askedType !== undefined && askedType !== 'credit_card') {
    throw new ValidationError([{ field: 'token', message: 'a card token pays by credit_card; leave payment_type out or set it to credit_card' }]);
  }
  const current = await findOwnSubscription(ctx.em.fork(), user, subscriptionId);
  const paymentType: PaymentType = token !== undefined ? 'credit_card' : (askedType ?? current.paymentType);
  const cardToken = paymentType === 'credit_card' ? (token ?? current.cardToken) : null;
  await resolveUnknownCharges(ctx, current.id);
  // Checked before the earlier orders are canceled: none is canceled for a charge that cannot be made.
  await assertChargeable(ctx, user, subscriptionId, paymentType === 'credit_card' && token === undefined);
  // Earlier orders are withdrawn and canceled at the gateway before the new charge exists: one
  // the gateway refuses to cancel may have been paid, and its status decides (cancelOrAskGateway).
  const withdrawn = await retryingTransaction(ctx.em, async (em) => {
    const sub = await findOwnSubscription(em, user, subscriptionId, { lock: true });
    const invoice = await oldestOpenInvoice(em, sub);
    return invoice ? cancelInvoicePayments(em, { invoice }, ctx.clock.now()) : [];
  });
  await cancelOrAskGateway(ctx, withdrawn);

  const { paymentId, toCancel } = await retryingTransaction(ctx.em, async (em) => {
    const tctx = { ...ctx, em };
    const at = ctx.clock.now();
    const sub = await findOwnSubscription(em, user, subscriptionId, { lock: true });
    subscriptionActions.assert(sub, 'charge');
    const invoice = await oldestOpenInvoice(em, sub);
    if (!invoice) throw new DomainError('nothing_due', 'The subscription has no open invoice to pay.');
    if (paymentType === 'credit_card' && !(token ?? sub.cardToken)) throw noSavedCard();
    const cancel = await cancelInvoicePayments(em, { invoice }, at);
    const paymentId = randomUUID();
    // NOTE: paying a pending change's invoice another way (the wallet, a new card) pays that
    // change: the new payment takes the withdrawn one's place, so its settlement switches the
    // plan instead of crediting the money back to the wallet and leaving the change dangling.
    if (sub.pendingChange && (await em.count(Payment, { id: sub.pendingChange.payment_id, invoice })) > 0) {
      sub.pendingChange = { ...sub.pendingChange, payment_id: paymentId };
    }
    const payment = await openPayment(tctx, {
      id: paymentId,
      user: sub.user,
      subscription: sub,
      invoice,
      paymentType,
      amount: invoice.totalAmount,
      currency: invoice.currency,
    });
    return { paymentId: payment.id, toCancel: cancel };
  });

  await cancelAtGateway(ctx, toCancel);
  if (paymentType !== 'wallet') {
    await submitPayment(ctx, paymentId, {
      bank: bank ?? (current.bank as Bank | null) ?? undefined,
      cardToken,
      merchantInitiated: false,
      customer: current.customerDetails,
    });
  }
  return loadPayment(ctx.em, paymentId);
}

const noSavedCard = () => new InvalidStateError('The subscription has no saved card to charge; pay with a new card (token) or another payment_type.');

/** The checks the charge's transaction makes again, in its order, read once before any gateway call. */
async function assertChargeable(ctx: ServiceContext, user: User, subscriptionId: string, needsSavedCard: boolean): Promise<void> {
  const em = ctx.em.fork();
  const sub = await findOwnSubscription(em, user, subscriptionId);
  subscriptionActions.assert(sub, 'charge');
  if ((await em.count(Invoice, { subscription: sub, status: 'open' })) === 0) throw new DomainError('nothing_due', 'The subscription has no open invoice to pay.');
  if (needsSavedCard && !sub.cardToken) throw noSavedCard();
}

function oldestOpenInvoice(em: EntityManager, sub: Subscription): Promise<Invoice | null> {
  return em.findOne(Invoice, { subscription: sub, status: 'open' }, { orderBy: [{ issueDate: 'asc' }, { createdAt: 'asc' }] });
}
