import type { Subscription, SubscriptionStatus } from '../../db/entities/subscription.js';
import { StateMachine } from './state-machine.js';

/** Statuses in which a user "has" a subscription: at most one of these per user. */
export const LIVE_SUBSCRIPTION_STATUSES: readonly SubscriptionStatus[] = ['pending', 'trialing', 'active', 'paused', 'past_due'];

/** Statuses that grant access: active or trialing. */
export const ACCESS_GRANTING_STATUSES: readonly SubscriptionStatus[] = ['active', 'trialing'];

export type SubscriptionEvent = 'activate' | 'start_trial' | 'mark_past_due' | 'pause' | 'resume' | 'cancel' | 'expire';

export const subscriptionStates = new StateMachine<SubscriptionStatus, SubscriptionEvent, Subscription>(
  'subscription',
  {
    // A settlement activates from any state. A settlement for a canceled or
    // expired subscription is credited to the wallet instead (credit-unusable-settlement.ts).
    activate: { from: ['pending', 'trialing', 'active', 'past_due', 'paused', 'canceled', 'expired'], to: 'active' },
    // A trial subscribed with a card starts once the card is saved (after 3-D Secure).
    start_trial: { from: ['pending'], to: 'trialing' },
    // NOTE: a failed payment never resurrects a canceled, expired or paused subscription.
    mark_past_due: { from: ['pending', 'trialing', 'active', 'past_due'], to: 'past_due' },
    pause: { from: ['active'], to: 'paused', stamp: (s, at) => (s.pausedAt = at) },
    resume: { from: ['paused'], to: 'active', stamp: (s) => (s.pausedAt = null) },
    cancel: {
      from: ['pending', 'trialing', 'active', 'paused', 'past_due'],
      to: 'canceled',
      stamp: (s, at) => {
        s.canceledAt = at;
        s.cancelAtPeriodEnd = false;
      },
    },
    expire: { from: ['active', 'past_due'], to: 'expired' },
  },
  (s, _from, to) => {
    // Keep the one-live-subscription-per-user index in step with the status.
    s.liveUserId = LIVE_SUBSCRIPTION_STATUSES.includes(to) ? s.user.id : null;
  },
);

/** Sets the initial status of a new subscription (the table's "none →" rows). */
export function startSubscription(s: Subscription, status: 'pending' | 'trialing' | 'active'): void {
  s.status = status;
  s.liveUserId = s.user.id;
}
