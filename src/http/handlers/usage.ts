import { getStaffSubscription } from '../../services/staff-queries/staff-lookups.js';
import { getSubscription } from '../../services/subscriptions/get-subscription.js';
import { currentUsage, type CurrentUsage } from '../../services/usage/current-usage.js';
import { requireUser, type OperationHandlers, type Schemas } from '../operations.js';

function serializeUsage(usage: CurrentUsage): Schemas['SubscriptionUsage'] {
  return {
    subscription: usage.subscription.id,
    currency: usage.currency,
    from: usage.from?.toISOString() ?? null,
    to: usage.to?.toISOString() ?? null,
    charges: usage.charges.map((c) => ({
      metric: c.metric.code,
      metric_name: c.metric.name,
      aggregation: c.metric.aggregation,
      model: c.charge.model,
      units: c.units,
      amount: c.amount,
    })),
    amount: usage.amount,
  };
}

/** What the coming invoice will bill (docs/usage.md): the customer's own subscription, and any for staff. */
export const usageHandlers: OperationHandlers = {
  async getSubscriptionUsage(req) {
    const sub = await getSubscription(req.services, requireUser(req), req.path.id);
    return { status: 200, body: serializeUsage(await currentUsage(req.services, sub)) };
  },

  async adminGetSubscriptionUsage(req) {
    const sub = await getStaffSubscription(req.services, req.path.id);
    return { status: 200, body: serializeUsage(await currentUsage(req.services, sub)) };
  },
};
