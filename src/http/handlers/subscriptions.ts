import { cancelSubscription } from '../../services/subscriptions/cancel-subscription.js';
import { changeSubscriptionPlan } from '../../services/subscriptions/change-subscription-plan.js';
import { createSubscription } from '../../services/subscriptions/create-subscription.js';
import { getActiveSubscriptionAnswer, getSubscription } from '../../services/subscriptions/get-subscription.js';
import { listSubscriptions } from '../../services/subscriptions/list-subscriptions.js';
import { pauseSubscription } from '../../services/subscriptions/pause-subscription.js';
import { resumeSubscription } from '../../services/subscriptions/resume-subscription.js';
import { syncSubscription } from '../../services/subscriptions/sync-subscription.js';
import { undoCancelSubscription } from '../../services/subscriptions/undo-cancel-subscription.js';
import { requireUser, requireUserId, type OperationHandlers } from '../operations.js';
import { envelope, pageRequest } from '../pagination.js';
import { serializePayment, serializeSubscription } from '../serializers.js';

export const subscriptionHandlers: OperationHandlers = {
  async listSubscriptions(req) {
    const page = pageRequest(req.query);
    const { status, payment_type, ordering } = req.query;
    const result = await listSubscriptions(req.services, requireUser(req), { status, paymentType: payment_type, ordering }, page);
    return { status: 200, body: envelope(req.koa, result, page, serializeSubscription) };
  },

  async createSubscription(req) {
    const { body } = req;
    const created = await createSubscription(req.services, requireUser(req), {
      planId: body.plan_id,
      paymentType: body.payment_type,
      token: body.token,
      customerDetails: body.customer_details,
      metadata: body.metadata,
      quantity: body.quantity,
      promotionCode: body.promotion_code,
    });
    return {
      status: 201,
      body: {
        subscription: serializeSubscription(created.subscription),
        payment: created.payment ? serializePayment(created.payment) : null,
        card_authorization: created.cardCheck
          ? {
              order_id: created.cardCheck.orderId,
              status: created.cardCheck.status,
              amount: created.cardCheck.amount,
              currency: created.cardCheck.currency,
              redirect_url: created.cardCheck.status === 'pending' ? created.cardCheck.redirectUrl : null,
              masked_card: created.cardCheck.maskedCard,
            }
          : null,
      },
    };
  },

  async getActiveSubscription(req) {
    const answer = await getActiveSubscriptionAnswer(req.services, requireUserId(req));
    // Its access ends then: the same rows give a 404 from that instant.
    return { status: 200, body: serializeSubscription(answer.subscription), freshUntil: answer.accessEndsAt };
  },

  async getSubscription(req) {
    return { status: 200, body: serializeSubscription(await getSubscription(req.services, requireUser(req), req.path.id)) };
  },

  async cancelSubscription(req) {
    const sub = await cancelSubscription(req.services, requireUser(req), req.path.id, { reason: req.body?.reason, immediate: req.body?.immediate });
    return { status: 200, body: serializeSubscription(sub) };
  },

  async undoCancelSubscription(req) {
    return { status: 200, body: serializeSubscription(await undoCancelSubscription(req.services, requireUser(req), req.path.id)) };
  },

  async pauseSubscription(req) {
    return { status: 200, body: serializeSubscription(await pauseSubscription(req.services, requireUser(req), req.path.id)) };
  },

  async resumeSubscription(req) {
    return { status: 200, body: serializeSubscription(await resumeSubscription(req.services, requireUser(req), req.path.id)) };
  },

  async changeSubscriptionPlan(req) {
    const changed = await changeSubscriptionPlan(req.services, requireUser(req), req.path.id, {
      planId: req.body.plan_id,
      immediate: req.body.immediate,
      promotionCode: req.body.promotion_code,
    });
    return {
      status: 200,
      body: { subscription: serializeSubscription(changed.subscription), payment: changed.payment ? serializePayment(changed.payment) : null },
    };
  },

  async syncSubscription(req) {
    return { status: 200, body: serializeSubscription(await syncSubscription(req.services, requireUser(req), req.path.id)) };
  },
};
