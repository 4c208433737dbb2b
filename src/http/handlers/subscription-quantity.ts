import { changeSubscriptionQuantity } from '../../services/subscriptions/change-subscription-quantity.js';
import { requireUser, type OperationHandlers } from '../operations.js';
import { serializePayment, serializeSubscription } from '../serializers.js';

/** Seats: POST /subscriptions/{id}/change-quantity/ (docs/billing.md, 'Money rules'). */
export const subscriptionQuantityHandlers: OperationHandlers = {
  async changeSubscriptionQuantity(req) {
    const changed = await changeSubscriptionQuantity(req.services, requireUser(req), req.path.id, {
      quantity: req.body.quantity,
      immediate: req.body.immediate,
    });
    return {
      status: 200,
      body: {
        subscription: serializeSubscription(changed.subscription),
        payment: changed.payment ? serializePayment(changed.payment) : null,
        credit_note_id: changed.creditNote?.id ?? null,
      },
    };
  },
};
