import type { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { subscriptionData } from '../notifications/payloads.js';
import { findOwnSubscription, loadSubscription } from './find-subscription.js';
import { retryingTransaction } from '../common/retrying-transaction.js';

/** Pauses an active subscription (`invalid_state` otherwise); access stops until it is resumed. */
export async function pauseSubscription(ctx: DataContext, user: User, id: string): Promise<Subscription> {
  await retryingTransaction(ctx.em, async (em) => {
    const sub = await findOwnSubscription(em, user, id, { lock: true });
    subscriptionStates.apply(sub, 'pause', ctx.clock.now());
    notify({ ...ctx, em }, sub.user, 'subscription_paused', subscriptionData(sub));
  });
  return loadSubscription(ctx.em, id);
}
