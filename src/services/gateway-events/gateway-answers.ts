import type { GatewayTransaction } from '../../gateway/types.js';
import type { DataContext } from '../context.js';
import { lockSubscriptionThenPayment } from '../payments/lock-payment.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import { eventFromTransaction, isSuccess } from './gateway-event.js';
import { recordAndApplyGatewayEvent, type NotificationOutcome } from './process-notification.js';
import { rememberSavedCard, savedCardOf } from './saved-card.js';

/*
 * The entry points for what the gateway ANSWERED about a subscription payment (the webhook's is
 * receive-gateway-notification.ts): a charge answer (submitPayment) and a status answer (sync,
 * reconciliation). Each keeps what the answer says beyond its status, then goes through the same
 * pipeline as a notification, logged with its source.
 */

/** A charge answer. Logged like a notification (source `charge`): the gateway's own notification of the same status is then a duplicate, whichever of the two arrives first. */
export async function applyChargeAnswer(ctx: DataContext, paymentId: string, tx: GatewayTransaction): Promise<NotificationOutcome> {
  await storeGatewayAnswer(ctx, paymentId, tx);
  return recordAndApplyGatewayEvent(ctx, { event: eventFromTransaction(tx), source: 'charge' });
}

/** A status answer (source `sync`). A charge that timed out may have reached the gateway: its instructions arrive only now. */
export async function applyStatusAnswer(ctx: DataContext, paymentId: string, tx: GatewayTransaction): Promise<NotificationOutcome> {
  await storeGatewayAnswer(ctx, paymentId, tx, { onlyIfMissing: true });
  return recordAndApplyGatewayEvent(ctx, { event: eventFromTransaction(tx), source: 'sync' });
}

/**
 * Keeps what a gateway answer tells about a payment beyond its status: the transaction id, the
 * payment instructions and their expiry, and a card saved for renewals. `onlyIfMissing` keeps
 * instructions already stored (a status answer carries less than the charge answer did).
 */
async function storeGatewayAnswer(ctx: DataContext, paymentId: string, tx: GatewayTransaction, opts: { onlyIfMissing?: boolean } = {}): Promise<void> {
  await retryingTransaction(ctx.em, async (em) => {
    // Its subscription first: a card the answer saves is written there.
    const locked = await lockSubscriptionThenPayment(em, { id: paymentId });
    if (!locked) throw new Error(`payment ${paymentId} vanished`);
    await em.populate(locked, ['subscription']);
    locked.transactionId ??= tx.transactionId;
    // The gateway has answered about this payment: whatever happened to the charge is known now.
    locked.outcomeUnknown = false;
    if (!opts.onlyIfMissing || Object.keys(locked.paymentDetails).length === 0) {
      locked.paymentDetails = { ...tx.paymentDetails };
      locked.expiresAt = tx.expiryTime;
    }
    // A card captured without 3-D Secure: its answer is the first successful card event.
    const card = savedCardOf(tx.raw);
    if (card && isSuccess(eventFromTransaction(tx)) && locked.subscription && locked.paymentType === 'credit_card') rememberSavedCard(locked.subscription, card);
  });
}
