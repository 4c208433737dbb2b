import type { Actor } from '../audit/actor.js';
import { changedFields, recordAuditEvent } from '../audit/record-audit-event.js';
import type { ServiceContext } from '../context.js';
import type { Payment } from '../../db/entities/payment.js';
import { Subscription } from '../../db/entities/subscription.js';
import { refundPaymentAsStaff, type RefundedPayment } from './refund-payment.js';

export interface StaffRefundRequest {
  amount?: string | number;
  /** Why, for the audit trail only: the customer never sees it. */
  reason: string;
  /** What the customer is told; kept with the refund. */
  description?: string | null;
  direct?: boolean;
  keepSubscription?: boolean;
}

/** The subscription's fields a refund may change, as the audit trail records them. */
function auditedSubscription(s: Subscription | null): Record<string, unknown> {
  if (!s) return {};
  return { status: s.status, cancel_at_period_end: s.cancelAtPeriodEnd, canceled_at: s.canceledAt?.toISOString() ?? null, cancel_reason: s.cancelReason };
}

/**
 * Support staff's refund, by the staff API or `billing-admin payments refund`: the refund of
 * refundPaymentAsStaff, then one audit event naming who refunded, why, and what changed. The
 * refund keeps the customer-facing description only. `found` is the payment as staff found it:
 * its status and refunded amount are the audit event's "before". What the refund implies is
 * recorded too: the subscription it ends (unless `keepSubscription`) gets its own
 * `subscription.cancel` event, with the same actor and reason (docs/audit.md).
 */
export async function refundByStaff(ctx: ServiceContext, actor: Actor, found: Payment, request: StaffRefundRequest): Promise<RefundedPayment> {
  const before = { status: found.status, refunded_amount: found.refundedAmount };
  const subscriptionId = found.subscription?.id ?? null;
  const subscriptionBefore = subscriptionId ? auditedSubscription(await ctx.em.fork().findOne(Subscription, subscriptionId)) : {};
  const refunded = await refundPaymentAsStaff(ctx, found.orderId, {
    amount: request.amount,
    reason: request.description ?? undefined,
    direct: request.direct,
    keepSubscription: request.keepSubscription === true,
  });
  const { payment, refund } = refunded;
  // One refund, one event: the call that made it records it; a retry of it (a lost answer, or the
  // same request sent again at once) made no new refund.
  if (refunded.retried) return refunded;
  await recordAuditEvent(ctx, actor, {
    action: 'payment.refund',
    target: { type: 'payment', id: payment.id },
    reason: request.reason,
    changes: {
      ...changedFields(before, { status: payment.status, refunded_amount: payment.refundedAmount }),
      refund: [null, { refund_key: refund.refundKey, amount: refund.amount, status: refund.status }],
    },
  });
  if (subscriptionId) {
    // Read anew: the refund ended the subscription in its own transaction.
    const changed = changedFields(subscriptionBefore, auditedSubscription(await ctx.em.fork().findOne(Subscription, subscriptionId)));
    if (Object.keys(changed).length > 0) {
      await recordAuditEvent(ctx, actor, {
        action: 'subscription.cancel',
        target: { type: 'subscription', id: subscriptionId },
        reason: request.reason,
        changes: { ...changed, implied_by: [null, `payment.refund ${payment.id}`] },
      });
    }
  }
  return refunded;
}

