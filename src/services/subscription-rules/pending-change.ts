import type { PendingChange, Subscription } from '../../db/entities/subscription.js';
import type { DataContext } from '../context.js';
import { undoRedemption } from '../coupons/redeem.js';

/**
 * NOTE: the one way a pending change is forgotten without applying (replaced, withdrawn, its
 * payment failed or came too late, the subscription ended). Nothing of it stays: the discount it
 * would have set was never the subscription's, and a code redeemed with it is given back, so a
 * code with a limit is not used up by a change that never took place. Returns what was pending.
 */
export async function forgetPendingChange(ctx: DataContext, sub: Subscription): Promise<PendingChange | null> {
  const pending = sub.pendingChange;
  sub.pendingChange = null;
  sub.pendingChangePlan = null;
  if (pending?.redemption_id) await undoRedemption(ctx, pending.redemption_id);
  return pending;
}
