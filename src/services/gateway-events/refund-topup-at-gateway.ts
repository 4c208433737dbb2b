import { WalletTransaction } from '../../db/entities/wallet.js';
import type { Topup } from '../../db/entities/topup.js';
import { add, compare, isDecimalText, isPositive, subtract, ZERO } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { topupSummaryData } from '../notifications/payloads.js';
import { postWalletEntry } from '../wallet/wallet-ledger.js';
import type { GatewayEvent } from './gateway-event.js';

const REFERENCE_PREFIX = 'gateway-refund:';

/**
 * A top-up refunded at the gateway (its dashboard; the service offers no top-up refund of its
 * own): the money went back to the customer, so it leaves the wallet too. NOTE: the gateway's
 * cumulative `refund_amount` is the truth, as for payments: each notification debits only what
 * the earlier ones did not, and a stale one with a lower total debits nothing. Like a reversal,
 * the debit may take the balance below zero (the customer already spent the money), which
 * `wallet verify` shows under `negative_balances`.
 */
export async function refundTopupAtGateway(ctx: DataContext, topup: Topup, event: GatewayEvent): Promise<string[]> {
  if (event.refundAmount === null || !isDecimalText(event.refundAmount)) return [];
  const truth = compare(event.refundAmount, topup.amount) > 0 ? topup.amount : event.refundAmount;
  if (compare(truth, topup.refundedAmount) > 0) topup.refundedAmount = truth;
  // NOTE: a refund can overtake its settlement's notification: kept on the top-up, it is taken
  // back from the wallet when the settlement credits it (takeBackTopupRefunds), never lost.
  if (topup.status !== 'success') return [`top-up refund of ${topup.refundedAmount} recorded before the settlement`];
  return takeBackTopupRefunds(ctx, topup);
}

/**
 * Debits the wallet for what the gateway refunded of a credited top-up and the earlier debits
 * did not cover: after each refund notification, and after a settlement that arrives late.
 */
export async function takeBackTopupRefunds(ctx: DataContext, topup: Topup): Promise<string[]> {
  const truth = topup.refundedAmount;
  if (!isPositive(truth)) return [];
  const earlier = await ctx.em.find(WalletTransaction, { source: 'topup', referenceId: { $like: `${REFERENCE_PREFIX}${topup.id}:%` } });
  const debited = earlier.reduce((sum, e) => add(sum, e.amount), ZERO);
  const missing = subtract(truth, debited);
  if (!isPositive(missing)) return [];
  const entry = await postWalletEntry(ctx, {
    user: topup.user,
    kind: 'debit',
    amount: missing,
    currency: topup.currency,
    source: 'topup',
    referenceId: `${REFERENCE_PREFIX}${topup.id}:${truth}`,
    description: `Top-up ${topup.orderId} refunded at the gateway (${truth} of ${topup.amount} in all)`,
    allowNegative: true,
  });
  notify(ctx, topup.user, 'payment_refunded', {
    ...topupSummaryData(topup),
    refunded_amount: truth,
    destination: 'gateway',
    balance_after: entry.balanceAfter,
  });
  return [`top-up refunded ${truth} at the gateway`, `wallet debited ${missing}`];
}
