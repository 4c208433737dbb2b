import { PeriodFund } from '../../db/entities/period-fund.js';
import { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { compare } from '../../domain/money.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { subscriptionData } from '../notifications/payloads.js';

/*
 * NOTE (docs/billing.md, 'Money rules'): a wallet made negative by a reversal (or a refund or
 * chargeback of the top-up that filled it) is a debt. The wallet payments that money made bought nothing that is
 * still paid for: the subscription whose running period they fund falls `past_due` at once
 * (access ends; the access version moves with the row). The debt stays in the wallet, not on an
 * invoice, so it is owed once: the next credit (a top-up) pays it first, as any credit to a
 * negative balance does, and when the balance is whole again the subscription is active again
 * for what is left of the period it had paid.
 */

/** The cancel_reason of a subscription held `past_due` by its wallet's debt. */
export const WALLET_DEBT_REASON = 'wallet_debt';

/** Called by the ledger whenever a posting leaves the balance below zero or brings it back to zero or more. */
export async function onWalletDebtMoved(ctx: DataContext, user: User, before: string, after: string): Promise<void> {
  if (compare(after, '0') < 0) await holdWhatTheDebtPaidFor(ctx, user);
  else if (compare(before, '0') < 0) await releaseWhatTheDebtHeld(ctx, user);
}

async function holdWhatTheDebtPaidFor(ctx: DataContext, user: User): Promise<void> {
  const at = ctx.clock.now();
  const funds = await ctx.em.find(
    PeriodFund,
    { subscription: { user, status: 'active' }, payment: { paymentType: 'wallet' }, periodEnd: { $gt: at } },
    { populate: ['subscription', 'subscription.user', 'subscription.plan'] },
  );
  for (const sub of new Set(funds.map((f) => f.subscription))) {
    if (!subscriptionStates.applyIfAllowed(sub, 'mark_past_due', at)) continue;
    sub.cancelReason = WALLET_DEBT_REASON;
    notify(ctx, sub.user, 'subscription_past_due', subscriptionData(sub));
  }
}

async function releaseWhatTheDebtHeld(ctx: DataContext, user: User): Promise<void> {
  const at = ctx.clock.now();
  const held = await ctx.em.find(
    Subscription,
    { user, status: 'past_due', cancelReason: WALLET_DEBT_REASON, currentPeriodEnd: { $gt: at } },
    { populate: ['user', 'plan'] },
  );
  for (const sub of held) {
    subscriptionStates.apply(sub, 'activate', at);
    sub.cancelReason = null;
    notify(ctx, sub.user, 'subscription_activated', subscriptionData(sub));
  }
}
