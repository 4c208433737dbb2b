import { chargeSubscription } from '../../services/subscriptions/charge-subscription.js';
import { checkPaymentStatus } from '../../services/payments/check-payment-status.js';
import { findOwnPayment } from '../../services/payments/find-payment.js';
import { listPaymentFields } from '../../services/payments/list-payments.js';
import { refundPayment } from '../../services/refunds/refund-payment.js';
import { requireUser, requireUserId, type OperationHandlers } from '../operations.js';
import { envelope, pageRequest } from '../pagination.js';
import { serializePayment, serializeRefund } from '../serializers.js';

export const paymentHandlers: OperationHandlers = {
  async listPayments(req) {
    const page = pageRequest(req.query);
    const { status, payment_type, ordering } = req.query;
    const result = await listPaymentFields(req.services, requireUserId(req), { status, paymentType: payment_type, ordering }, page);
    // Nothing in a page of payments depends on the time: only a change to the rows changes it.
    return { status: 200, body: envelope(req.koa, result, page, serializePayment), freshUntil: Infinity };
  },

  async getPayment(req) {
    return { status: 200, body: serializePayment(await findOwnPayment(req.services.em, requireUser(req), req.path.id)) };
  },

  async chargeSubscription(req) {
    const payment = await chargeSubscription(req.services, requireUser(req), {
      subscriptionId: req.body.subscription_id,
      invoiceId: req.body.invoice_id,
      paymentType: req.body.payment_type,
      token: req.body.token,
      bank: req.body.metadata?.bank,
    });
    return { status: 201, body: { payment: serializePayment(payment) } };
  },

  async refundPayment(req) {
    const refunded = await refundPayment(req.services, requireUser(req), req.path.id, {
      amount: req.body?.amount,
      reason: req.body?.reason,
      direct: req.body?.direct,
    });
    const body = { payment: serializePayment(refunded.payment), refund: serializeRefund(refunded.refund) };
    // A refund whose answer was lost is pending until the gateway confirms it (docs/gateway.md, 'Refunds the gateway refuses, or whose answer is lost').
    if (refunded.refund.status === 'pending') return { status: 202, body };
    return { status: 200, body };
  },

  async checkPaymentStatus(req) {
    return { status: 200, body: await checkPaymentStatus(req.services, requireUser(req), req.path.id) };
  },
};
