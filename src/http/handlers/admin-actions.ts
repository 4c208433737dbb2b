import type { Subscription } from '../../db/entities/subscription.js';
import { User } from '../../db/entities/user.js';
import { InvalidStateError } from '../../domain/errors.js';
import { recordAuditEvent, changedFields } from '../../services/audit/record-audit-event.js';
import { closeDeliveryChannels, createDeliveryChannels } from '../../services/delivery/channels.js';
import { redeliverNotifications } from '../../services/delivery/redeliver-notifications.js';
import { REPLAYABLE_STATUSES } from '../../services/gateway-events/process-notification.js';
import { replayWebhookLogs } from '../../services/gateway-events/replay-webhook-logs.js';
import { refundByStaff } from '../../services/refunds/staff-refund.js';
import { findUserByRef, getStaffPayment, getStaffSubscription, getStaffWebhookLog } from '../../services/staff-queries/index.js';
import { cancelSubscription } from '../../services/subscriptions/cancel-subscription.js';
import { loadSubscription } from '../../services/subscriptions/find-subscription.js';
import { pauseSubscription } from '../../services/subscriptions/pause-subscription.js';
import { resumeSubscription } from '../../services/subscriptions/resume-subscription.js';
import { syncSubscription } from '../../services/subscriptions/sync-subscription.js';
import { undoCancelSubscription } from '../../services/subscriptions/undo-cancel-subscription.js';
import { adjustWallet } from '../../services/wallet/adjust-wallet.js';
import { staffActor } from '../auth/staff-gate.js';
import { ownedRecord, ownersOf, serializeAdminNotification, serializeAdminRefund } from '../admin-serializers.js';
import type { OperationHandlers, OperationId, OperationRequest } from '../operations.js';
import { serializePayment, serializeSubscription, serializeWallet, serializeWalletTransaction, serializeWebhookLog } from '../serializers.js';

/** The subscription fields a staff action may change, as the audit trail records them. */
const SUBSCRIPTION_AUDITED = ['status', 'cancel_at_period_end', 'canceled_at', 'cancel_reason', 'paused_at', 'current_period_end', 'next_billing_date'] as const;

function auditedSubscription(s: Subscription): Record<string, unknown> {
  const wire = serializeSubscription(s);
  return Object.fromEntries(SUBSCRIPTION_AUDITED.map((f) => [f, wire[f]]));
}

/**
 * A staff action on a subscription: the same rule the customer's own request runs, applied as
 * its owner, then one audit event with the fields it changed and the staff member's reason.
 */
async function actOnSubscription<K extends OperationId>(
  req: OperationRequest<K>,
  id: string,
  reason: string,
  action: string,
  run: (owner: User) => Promise<Subscription>,
) {
  const em = req.services.em;
  const subscription = await getStaffSubscription(req.services, id);
  const before = auditedSubscription(subscription);
  await run(await em.findOneOrFail(User, subscription.user.id));
  // Read anew: the rule may have worked on its own entity manager.
  const after = await loadSubscription(em.fork(), subscription.id);
  await recordAuditEvent(req.services, staffActor(req.koa), {
    action,
    target: { type: 'subscription', id: subscription.id },
    reason,
    changes: changedFields(before, auditedSubscription(after)),
  });
  return { status: 200 as const, body: await ownedRecord(em, after, serializeSubscription) };
}

/** Staff actions, each with a required reason and one audit event. */
export const adminActionHandlers: OperationHandlers = {
  async adminCancelSubscription(req) {
    const immediate = !req.body.at_period_end;
    return actOnSubscription(req, req.path.id, req.body.reason, 'subscription.cancel', (owner) =>
      cancelSubscription(req.services, owner, req.path.id, { immediate }),
    );
  },

  async adminPauseSubscription(req) {
    return actOnSubscription(req, req.path.id, req.body.reason, 'subscription.pause', (owner) => pauseSubscription(req.services, owner, req.path.id));
  },

  async adminResumeSubscription(req) {
    return actOnSubscription(req, req.path.id, req.body.reason, 'subscription.resume', (owner) => resumeSubscription(req.services, owner, req.path.id));
  },

  async adminUndoCancelSubscription(req) {
    return actOnSubscription(req, req.path.id, req.body.reason, 'subscription.undo_cancel', (owner) => undoCancelSubscription(req.services, owner, req.path.id));
  },

  async adminSyncSubscription(req) {
    return actOnSubscription(req, req.path.id, req.body.reason, 'subscription.sync', (owner) => syncSubscription(req.services, owner, req.path.id));
  },

  async adminRefundPayment(req) {
    const found = await getStaffPayment(req.services, req.path.id);
    const refunded = await refundByStaff(req.services, staffActor(req.koa), found, {
      amount: req.body.amount,
      reason: req.body.reason,
      description: req.body.description,
      direct: req.body.direct,
      keepSubscription: req.body.keep_subscription,
    });
    const payment = refunded.payment;
    const owner = await ownersOf(req.services.em, [payment]);
    const subscription = payment.subscription ? await loadSubscription(req.services.em.fork(), payment.subscription.id) : null;
    const body = {
      payment: { ...serializePayment(payment), user: owner(payment) },
      refund: serializeAdminRefund(refunded.refund, payment, owner(payment)),
      subscription: subscription ? serializeSubscription(subscription) : null,
    };
    // A refund whose answer was lost is pending until the gateway confirms it (docs/gateway.md, 'Refunds the gateway refuses, or whose answer is lost').
    return refunded.refund.status === 'pending' ? { status: 202, body } : { status: 200, body };
  },

  async adminAdjustWallet(req) {
    const user = await findUserByRef(req.services, req.path.user);
    const { wallet, entry, alreadyApplied } = await adjustWallet(req.services, {
      user,
      amount: req.body.amount,
      reason: req.body.reason,
      description: req.body.description,
      reference: req.body.reference,
      actor: staffActor(req.koa),
    });
    return { status: 200, body: { already_applied: alreadyApplied, wallet: serializeWallet(wallet), transaction: serializeWalletTransaction(entry) } };
  },

  async adminResendNotification(req) {
    const channels = createDeliveryChannels(req.services.config);
    try {
      const { entries, before } = await redeliverNotifications({ ...req.services, channels }, [req.path.id]);
      const entry = entries[0];
      const was = before.get(entry.id);
      await recordAuditEvent(req.services, staffActor(req.koa), {
        action: 'notification.resend',
        target: { type: 'notification', id: entry.id },
        reason: req.body.reason,
        changes: { status: [was?.status ?? null, entry.status], attempts: [was?.attempts ?? null, entry.attempts] },
      });
      return { status: 200, body: await ownedRecord(req.services.em, entry, serializeAdminNotification) };
    } finally {
      closeDeliveryChannels(channels);
    }
  },

  async adminReplayWebhookLog(req) {
    const log = await getStaffWebhookLog(req.services, req.path.id);
    if (!REPLAYABLE_STATUSES.includes(log.status)) {
      throw new InvalidStateError(`This log is ${log.status}; only ${REPLAYABLE_STATUSES.join(', ')} logs can be replayed.`);
    }
    const [item] = await replayWebhookLogs(req.services, { ids: [log.id] });
    await recordAuditEvent(req.services, staffActor(req.koa), {
      action: 'webhook_log.replay',
      target: { type: 'webhook_log', id: log.id },
      reason: req.body.reason,
      changes: { status: [item.previousStatus, item.log.status] },
    });
    return {
      status: 200,
      body: { log: serializeWebhookLog(item.log), previous_status: item.previousStatus, result: String(item.result), changes: item.changes, error: item.error },
    };
  },
};
