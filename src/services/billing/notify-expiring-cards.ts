import { Subscription } from '../../db/entities/subscription.js';
import type { DataContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { retryingTransaction } from '../common/retrying-transaction.js';

/** Subscriptions whose renewals charge a saved card. */
const RENEWING = ['active', 'trialing', 'past_due'] as const;

/**
 * NOTE: a saved card that stops working (saved_token_id_expired_at) before the next renewal
 * would make that renewal fail without warning: the customer is told in advance, once per card
 * (a new card resets it), by the billing run. Returns how many were told (would be, in a dry run).
 */
export async function notifyExpiringCards(ctx: DataContext, at: Date, dryRun: boolean): Promise<number> {
  // Inside the caller's transaction when there is one (a dry run's, which must see its own rehearsal).
  const due = await ctx.em.fork({ keepTransactionContext: true }).find(
    Subscription,
    {
      status: { $in: [...RENEWING] },
      paymentType: 'credit_card',
      cardToken: { $ne: null },
      cardTokenExpiresAt: { $ne: null },
      nextBillingDate: { $ne: null },
    },
    { fields: ['id', 'cardToken', 'cardTokenExpiresAt', 'nextBillingDate', 'cardExpiryNotifiedToken'] },
  );
  const candidates = due.filter((s) => s.cardTokenExpiresAt!.getTime() <= s.nextBillingDate!.getTime() && s.cardExpiryNotifiedToken !== s.cardToken);
  if (dryRun) return candidates.length;
  let told = 0;
  for (const c of candidates) {
    told += await retryingTransaction(ctx.em, async (em) => {
      // Checked again on the row itself: a concurrent run, or a new card meanwhile.
      const sub = await em.findOne(Subscription, { id: c.id }, { populate: ['plan', 'user'], refresh: true });
      if (!sub?.cardToken || !sub.cardTokenExpiresAt || !sub.nextBillingDate) return 0;
      if (sub.cardExpiryNotifiedToken === sub.cardToken || sub.cardTokenExpiresAt.getTime() > sub.nextBillingDate.getTime()) return 0;
      sub.cardExpiryNotifiedToken = sub.cardToken;
      notify({ ...ctx, em }, sub.user, 'card_expiring', {
        subscription_id: sub.id,
        plan_name: sub.plan.name,
        card_expires_at: sub.cardTokenExpiresAt.toISOString(),
        next_billing_date: sub.nextBillingDate.toISOString(),
      });
      return 1;
    });
  }
  return told;
}
