import type { Bank } from '../../gateway/types.js';
import type { ServiceContext } from '../context.js';
import { submitPayment } from '../gateway-events/submit-payment.js';
import { onChangePaymentFailed } from '../subscription-rules/plan-change.js';
import { loadSubscription } from './find-subscription.js';

/**
 * After a plan or quantity change committed with a payment: sends it to the gateway with the
 * subscription's own means (its bank, its saved card as a merchant-initiated charge). A wallet
 * payment was settled in the transaction; a refused one drops the change it was for.
 */
export async function submitChangePayment(ctx: ServiceContext, subscriptionId: string, paymentId: string): Promise<void> {
  const sub = await loadSubscription(ctx.em, subscriptionId);
  if (sub.paymentType === 'wallet') return;
  await submitPayment(ctx, paymentId, {
    bank: (sub.bank as Bank | null) ?? undefined,
    cardToken: sub.cardToken,
    merchantInitiated: sub.paymentType === 'credit_card',
    customer: sub.customerDetails,
    onRejected: async (t, payment) => {
      await onChangePaymentFailed(t, payment);
    },
  });
}
