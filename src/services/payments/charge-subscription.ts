import { Invoice } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import type { User } from '../../db/entities/user.js';
import { DomainError, InvalidStateError } from '../../domain/errors.js';
import { paymentStates } from '../../domain/states/payment-states.js';
import { subscriptionActions } from '../../domain/states/subscription-actions.js';
import type { Bank } from '../../gateway/types.js';
import type { ServiceContext } from '../context.js';
import { cancelAtGateway } from '../subscriptions/end-subscription.js';
import { findOwnSubscription } from '../subscriptions/find-subscription.js';
import { loadPayment } from './find-payment.js';
import { openPayment } from './open-payment.js';
import { submitPayment } from './submit-payment.js';
import { retryingTransaction } from '../shared/retrying-transaction.js';

/**
 * `POST /payments/charge/`: a new payment of the subscription's oldest open invoice, with the
 * subscription's payment type. Earlier pending payments of that invoice are canceled (here at
 * once, at the gateway after the commit), so only the new one can be paid.
 */
export async function chargeSubscription(ctx: ServiceContext, user: User, subscriptionId: string): Promise<Payment> {
  const current = await findOwnSubscription(ctx.em.fork(), user, subscriptionId);

  const { paymentId, toCancel } = await retryingTransaction(ctx.em, async (em) => {
    const tctx = { ...ctx, em };
    const at = ctx.clock.now();
    const sub = await findOwnSubscription(em, user, subscriptionId, { lock: true });
    subscriptionActions.assert(sub, 'charge');
    const invoice = await em.findOne(Invoice, { subscription: sub, status: 'open' }, { orderBy: [{ issueDate: 'asc' }, { createdAt: 'asc' }] });
    if (!invoice) throw new DomainError('nothing_due', 'The subscription has no open invoice to pay.');
    if (sub.paymentType === 'credit_card' && !sub.cardToken) {
      throw new InvalidStateError('The subscription has no saved card to charge; complete the pending card payment or subscribe again.');
    }
    const cancel: string[] = [];
    for (const earlier of await em.find(Payment, { invoice, status: 'pending' })) {
      paymentStates.apply(earlier, 'cancel', at);
      if (earlier.paymentType !== 'wallet') cancel.push(earlier.orderId);
    }
    const payment = await openPayment(tctx, {
      user: sub.user,
      subscription: sub,
      invoice,
      paymentType: sub.paymentType,
      amount: invoice.totalAmount,
      currency: invoice.currency,
    });
    return { paymentId: payment.id, toCancel: cancel };
  });

  await cancelAtGateway(ctx, toCancel);
  if (current.paymentType !== 'wallet') {
    await submitPayment(ctx, paymentId, {
      bank: (current.bank as Bank | null) ?? undefined,
      cardToken: current.cardToken,
      merchantInitiated: current.paymentType === 'credit_card',
      customer: current.customerDetails,
    });
  }
  return loadPayment(ctx.em, paymentId);
}
