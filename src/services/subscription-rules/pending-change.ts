import type { PendingChange, Subscription } from '../../db/entities/subscription.js';
import type { DataContext } from '../context.js';
import { undoRedemption } from '../coupons/redeem.js';

/**
 * NOTE: the one way a pending change is forgotten without applying (replaced, withdrawn, its
 * payment failed or came too late, the subscription ended). The discount it would have set was
 * never the subscription's. A code redeemed with it is given back, so a code with a limit is not
 * used up by a change that never took place, unless `paid`: its payment settled and paid the
 * change's invoice at the discounted price before the change fell through (the subscription's
 * period was taken back meanwhile, or it renewed). That invoice stays paid, showing the
 * discount, and its money goes to the wallet at what was paid: the code was spent by money, as
 * any paid invoice spends its code, so it still counts. Returns what was pending.
 */
export async function forgetPendingChange(ctx: DataContext, sub: Subscription, paid = false): Promise<PendingChange | null> {
  const pending = sub.pendingChange;
  sub.pendingChange = null;
  sub.pendingChangePlan = null;
  if (pending?.redemption_id && !paid) await undoRedemption(ctx, pending.redemption_id);
  return pending;
}
