import { LockMode } from '@mikro-orm/core';
import { Topup } from '../../db/entities/topup.js';
import { topupStates, type TopupEvent } from '../../domain/states/topup-states.js';
import type { DataContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { topupSummaryData } from '../notifications/payloads.js';
import { creditUnusableSettlement } from '../payments/credit-unusable-settlement.js';
import { postWalletEntry } from '../wallet/wallet-ledger.js';
import { applyTopupChargeback } from './apply-chargeback.js';
import { assertAmount, type EventOutcome } from './event-outcome.js';
import { isChargeback, isSuccess, UnknownOrderError, type GatewayEvent } from './gateway-event.js';
import { refundsBeforeDispute } from './natural-order.js';
import { refundTopupAtGateway, takeBackTopupRefunds } from './refund-topup-at-gateway.js';
import { isReversal, takeBackTopup } from './reverse-payment.js';

const TOPUP_FAILURES: Record<string, TopupEvent> = { deny: 'fail', failure: 'fail', cancel: 'fail', expire: 'expire' };

/** A top-up's event: its status, and the wallet it credits (locks: the top-up, then the wallet). */
export async function applyToTopup(ctx: DataContext, event: GatewayEvent): Promise<EventOutcome> {
  const topup = await ctx.em.findOne(Topup, { orderId: event.orderId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!topup) throw new UnknownOrderError(event.orderId);
  // The user is read, not changed: no lock (the wallet row is locked where the balance moves).
  await ctx.em.populate(topup, ['user']);
  const at = ctx.clock.now();
  topup.transactionId ??= event.transactionId;
  topup.outcomeUnknown = false;
  const data = topupSummaryData(topup);

  if (isSuccess(event)) return { changes: await succeed(ctx, topup, event, at) };
  if (isChargeback(event)) {
    // NOTE: a chargeback takes back money that arrived: a top-up still pending here (its
    // settlement's notification lost) is credited first, as the facts happened.
    // Refunds listed before the dispute's own entries are refunds (natural-order.ts): taken
    // from the wallet first, as their own notification would have.
    const credited = topupStates.can(topup, 'succeed') ? await succeed(ctx, topup, event, at) : [];
    const refundsFirst = refundsBeforeDispute(event);
    const refunded = refundsFirst && topup.status === 'success' ? await refundTopupAtGateway(ctx, topup, refundsFirst) : [];
    return { changes: [...credited, ...refunded, ...(await applyTopupChargeback(ctx, topup, event, at))] };
  }
  if (isReversal(event, topup.status)) {
    // NOTE: a reversal the message proves (settlement_time) may be heard before its settlement,
    // or instead of it: the top-up is credited first, as the facts happened, then taken back; the
    // late settlement then finds it reversed and credits nothing (natural-order.ts).
    const credited = topupStates.can(topup, 'succeed') ? await succeed(ctx, topup, { ...event, transactionStatus: 'settlement' }, at) : [];
    return { changes: [...credited, ...(await takeBackTopup(ctx, topup, event, at, 'reverse'))] };
  }
  if (event.transactionStatus === 'refund' || event.transactionStatus === 'partial_refund') {
    // NOTE: a refund, too, gives back money that arrived, as for payments (docs/gateway.md): a
    // top-up still pending here (its settlement's notification lost, sync asking now) is
    // credited first, then the refund taken back; the late settlement is then a duplicate.
    const credited = topupStates.can(topup, 'succeed') ? await succeed(ctx, topup, event, at) : [];
    return { changes: [...credited, ...(await refundTopupAtGateway(ctx, topup, event))] };
  }
  const move = TOPUP_FAILURES[event.transactionStatus];
  if (move && topupStates.applyIfAllowed(topup, move, at)) {
    notify(ctx, topup.user, move === 'expire' ? 'topup_expired' : 'topup_failed', data);
    return { changes: [`top-up ${topup.status}`] };
  }
  return { changes: [] };
}

/** The money arrived: the wallet is credited with the top-up, once. */
async function succeed(ctx: DataContext, topup: Topup, event: GatewayEvent, at: Date): Promise<string[]> {
  const data = topupSummaryData(topup);
  assertAmount(event, topup.amount);
  const wasCanceled = topup.status === 'failed' || topup.status === 'expired';
  // NOTE: a card capture heard after its top-up failed is older news: a capture is final only at
  // settlement, and the cancel that failed the top-up voided it at the gateway (capture -> cancel;
  // an order whose answer could not be recorded is canceled so). No money arrived.
  if (wasCanceled && event.transactionStatus === 'capture') return ['capture already voided at the gateway: nothing credited'];
  if (!topupStates.applyIfAllowed(topup, 'succeed', at)) return [];
  if (wasCanceled) {
    // The customer paid a top-up we had given up on: the money still reaches the wallet, loudly.
    const change = await creditUnusableSettlement(ctx, {
      user: topup.user,
      orderId: topup.orderId,
      amount: topup.amount,
      currency: topup.currency,
      reason: 'topup_canceled',
      source: 'topup',
      referenceId: topup.id,
    });
    // The top-up did succeed, whatever its order of arrival: told as any success is, too.
    notify(ctx, topup.user, 'topup_succeeded', data);
    return ['top-up success after it had ended', change, ...(await takeBackTopupRefunds(ctx, topup))];
  }
  await postWalletEntry(ctx, {
    user: topup.user,
    kind: 'credit',
    amount: topup.amount,
    currency: topup.currency,
    source: 'topup',
    referenceId: topup.id,
    description: `Top-up ${topup.orderId}`,
  });
  notify(ctx, topup.user, 'topup_succeeded', data);
  return ['top-up success', `wallet credited ${topup.amount}`, ...(await takeBackTopupRefunds(ctx, topup))];
}
