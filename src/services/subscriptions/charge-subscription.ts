import { randomUUID } from 'node:crypto';
import { Invoice } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import type { PaymentType, Subscription } from '../../db/entities/subscription.js';
import type { EntityManager } from '@mikro-orm/core';
import type { User } from '../../db/entities/user.js';
import { DomainError, InvalidStateError, NotFoundError, ValidationError } from '../../domain/errors.js';
import { subscriptionActions } from '../../domain/states/subscription-actions.js';
import type { Bank } from '../../gateway/types.js';
import type { ServiceContext } from '../context.js';
import { findOwnSubscription } from './find-subscription.js';
import { cancelOrAskGateway, resolveUnknownCharges } from './resolve-unknown-charges.js';
import { cancelInvoicePayments } from '../payments/cancel-invoice-payments.js';
import { loadPayment } from '../payments/find-payment.js';
import { lockSubscriptionThenPayment } from '../payments/lock-payment.js';
import { paymentStates } from '../../domain/states/payment-states.js';
import { openPayment } from '../gateway-events/open-payment.js';
import { submitPayment } from '../gateway-events/submit-payment.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import { holdRedemptionAgain } from '../coupons/redemption-hold.js';

export interface ChargeSubscriptionInput {
  /** The subscription whose oldest open invoice is paid (or the named invoice's subscription). */
  subscriptionId?: string;
  /** Pays this open invoice, whatever became of its subscription. */
  invoiceId?: string;
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
  const { paymentType: askedType, token, bank } = input;
  if (token !== undefined && askedType !== undefined && askedType !== 'credit_card') {
    throw new ValidationError([{ field: 'token', message: 'a card token pays by credit_card; leave payment_type out or set it to credit_card' }]);
  }
  const subscriptionId = await subscriptionToCharge(ctx.em.fork(), user, input);
  const current = await findOwnSubscription(ctx.em.fork(), user, subscriptionId);
  const paymentType: PaymentType = token !== undefined ? 'credit_card' : (askedType ?? current.paymentType);
  const cardToken = paymentType === 'credit_card' ? (token ?? current.cardToken) : null;
  await resolveUnknownCharges(ctx, current.id);

  const { paymentId, toCancel } = await retryingTransaction(ctx.em, async (em) => {
    const tctx = { ...ctx, em };
    const at = ctx.clock.now();
    const sub = await findOwnSubscription(em, user, subscriptionId, { lock: true });
    const invoice = input.invoiceId ? await namedOpenInvoice(em, sub, input.invoiceId) : await oldestOpenInvoice(em, sub);
    // NOTE: an open invoice stays payable whatever became of its subscription (a usage-only
    // invoice outlives a cancellation): an ended subscription refuses only when nothing is open.
    if (!invoice && !subscriptionActions.can(sub, 'charge')) subscriptionActions.assert(sub, 'charge');
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
    // Paying again a first invoice whose code was given back when its earlier order lapsed.
    if (invoice.billingReason === 'subscription_create') await holdRedemptionAgain(tctx, sub, 'pays_again');
    return { paymentId: payment.id, toCancel: cancel };
  });

  // The earlier orders are canceled at the gateway before the new one is sent: one the gateway
  // refuses to cancel may have been paid, and its status decides (cancelOrAskGateway). When it
  // paid the invoice, the new payment is withdrawn unsent: nothing is charged twice.
  await cancelOrAskGateway(ctx, toCancel);
  if (paymentType !== 'wallet' && toCancel.length > 0 && (await withdrawIfPaidMeanwhile(ctx, paymentId))) {
    throw new DomainError('nothing_due', 'An earlier payment of this invoice was paid at the gateway; nothing is due.');
  }
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

const noSavedCard = (): InvalidStateError => new InvalidStateError('The subscription has no saved card to charge; pay with a new card (token) or another payment_type.');

/** Withdraws the new, unsent payment when its invoice is no longer open (an earlier order paid it); whether it did. */
async function withdrawIfPaidMeanwhile(ctx: ServiceContext, paymentId: string): Promise<boolean> {
  return retryingTransaction(ctx.em, async (em) => {
    const payment = await lockSubscriptionThenPayment(em, { id: paymentId }, { payment: ['invoice'] });
    if (!payment || payment.invoice?.status === 'open') return false;
    paymentStates.applyIfAllowed(payment, 'withdraw', ctx.clock.now());
    return true;
  });
}

/** The subscription the charge is for: the one named, or the named invoice's (both named: they must agree). */
async function subscriptionToCharge(em: EntityManager, user: User, input: ChargeSubscriptionInput): Promise<string> {
  if (!input.invoiceId) {
    if (input.subscriptionId === undefined) throw new ValidationError([{ field: 'subscription_id', message: 'name the subscription (subscription_id) or the invoice (invoice_id) to pay' }]);
    return input.subscriptionId;
  }
  // Another user's invoice is not found, never forbidden.
  const invoice = await em.findOne(Invoice, { id: input.invoiceId, user: user.id }, { fields: ['subscription'] });
  if (!invoice) throw new NotFoundError('Invoice');
  if (!invoice.subscription) throw new DomainError('nothing_due', `The invoice ${input.invoiceId} has nothing to charge here.`);
  if (input.subscriptionId !== undefined && input.subscriptionId !== invoice.subscription.id) {
    throw new ValidationError([{ field: 'invoice_id', message: 'the invoice is not one of this subscription\'s; name either, or both of one subscription' }]);
  }
  return invoice.subscription.id;
}

/** The named invoice, read under the subscription's lock: answers nothing_due once it is paid or void. */
async function namedOpenInvoice(em: EntityManager, sub: Subscription, invoiceId: string): Promise<Invoice> {
  const invoice = await em.findOneOrFail(Invoice, { id: invoiceId, subscription: sub }, { populate: ['lines'] });
  if (invoice.status !== 'open') throw new DomainError('nothing_due', `The invoice ${invoice.number} is ${invoice.status}: nothing is due on it.`);
  return invoice;
}

function oldestOpenInvoice(em: EntityManager, sub: Subscription): Promise<Invoice | null> {
  return em.findOne(Invoice, { subscription: sub, status: 'open' }, { orderBy: [{ issueDate: 'asc' }, { createdAt: 'asc' }], populate: ['lines'] }); // lines: openPayment tells a usage invoice
}
