import type { Subscription, SubscriptionStatus } from '../../db/entities/subscription.js';
import { InvalidStateError } from '../errors.js';

/**
 * Actions that leave a subscription's status as it is but are allowed only in some statuses
 * (a plan change, for one, only while active or trialing). They live beside the status machine so
 * that every entry point checks the same table and answers the same `invalid_state`.
 */
const ACTIONS = {
  // NOTE: `immediate: false` only makes sense while a period is running: it sets cancel_at_period_end.
  cancel_at_period_end: ['active', 'trialing'],
  // A cancel set for the period end can be taken back in any live status that may carry it (a
  // subscription paused or gone past due after the cancel was set still has its period).
  undo_cancel: ['active', 'trialing', 'paused', 'past_due'],
  change_plan: ['active', 'trialing'],
  // A live subscription with an open invoice may be charged again; a canceled or expired one may not.
  charge: ['pending', 'trialing', 'active', 'paused', 'past_due'],
} as const satisfies Record<string, readonly SubscriptionStatus[]>;

export type SubscriptionAction = keyof typeof ACTIONS;

export const subscriptionActions = {
  can(sub: Pick<Subscription, 'status'>, action: SubscriptionAction): boolean {
    return (ACTIONS[action] as readonly SubscriptionStatus[]).includes(sub.status);
  },
  /** Throws `invalid_state` unless the action is allowed in the subscription's status. */
  assert(sub: Pick<Subscription, 'status'>, action: SubscriptionAction): void {
    if (!this.can(sub, action)) {
      throw new InvalidStateError(`Cannot ${action.replace(/_/g, ' ')} a subscription that is ${sub.status.replace(/_/g, ' ')}.`);
    }
  },
};
