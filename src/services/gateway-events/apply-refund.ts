import { Payment, Refund } from '../../db/entities/payment.js';
import { add, compare, isPositive, money, subtract } from '../../domain/money.js';
import { succeededTotal } from '../../domain/refund-sum.js';
import type { DataContext } from '../context.js';
import { acceptRefund } from '../refunds/accept-refund.js';
import { endWhatGatewayRefundPaysBack } from '../refunds/refund-rules.js';
import { settleRefundTotals } from '../refunds/refund-totals.js';
import { REFUND_OVERLAP_REFERENCE } from '../wallet/take-back-references.js';
import type { GatewayEvent } from './gateway-event.js';
import { takeBackWalletCredits } from './reverse-payment.js';

/**
 * Refund notifications. NOTE: the gateway's cumulative `refund_amount` is the truth for what it
 * refunded (docs/gateway.md). Refunds it lists with a refund_key (ours, from
 * refundPayment, or a dashboard refund that carries one) are recorded once by that key; refunds
 * without a key cannot be told apart from one notification to the next, so they are never
 * added one by one: the part of the cumulative amount that no keyed refund explains is held by
 * one gateway refund per payment (gatewayRefundKey), recomputed on every notification. A
 * stale notification (a lower cumulative amount, out of order) never lowers what was recorded.
 * NOTE: the sums below are taken at different moments on purpose: what keyed refunds explain
 * grows as pending ones are confirmed, and what was made at the gateway is compared before and
 * after this notification.
 */
export async function recordGatewayRefunds(ctx: DataContext, payment: Payment, event: GatewayEvent): Promise<string[]> {
  const changes: string[] = [];
  const known = await ctx.em.find(Refund, { payment }, { orderBy: { createdAt: 'asc' } });
  const recordedBefore = payment.refundedAmount;
  const madeAtGatewayBefore = madeAtGateway(known);
  for (const r of event.refunds) {
    if (!r.refundKey) continue;
    const existing = known.find((k) => k.refundKey === r.refundKey);
    if (existing) {
      if ((await acceptRefund(ctx, payment, existing, 'confirm_at_gateway')).accepted) changes.push(`refund ${existing.refundKey} confirmed`);
      continue;
    }
    // What the payment has left to give back: any more is the customer's imposed fee (below).
    const room = subtract(payment.grossAmount, succeededTotal(known));
    const amount = compare(money(r.amount), room) > 0 ? room : money(r.amount);
    if (!isPositive(amount)) {
      changes.push(`refund ${r.refundKey} gave back only the customer's imposed fee: not recorded here`);
      continue;
    }
    known.push(gatewayRefund(ctx, payment, r.refundKey, amount));
    changes.push(`refund ${r.refundKey} recorded${amount === money(r.amount) ? '' : ` (${amount} of it; the rest was the customer's imposed fee)`}`);
  }
  // Only refund messages come here: every entry they list is a refund (natural-order.ts).
  const listed = event.refunds;
  const reported = event.refundAmount ?? (listed.length > 0 ? add(...listed.map((r) => money(r.amount))) : null);
  if (reported !== null) {
    // NOTE: with Automatic Fee Imposition the gateway's gross is ours plus the customer's fee, and
    // a dashboard refund may give back part of that fee too: money this service never billed or
    // held. The payment records at most its own gross refunded, as a top-up records at most its
    // amount (long seed 302912243, path 761:0:6:5:4:5:10:4:4:4:5: 22,500 refunded by us, then
    // 28,000 in the dashboard, of a 50,000 payment with a 1,000 fee: 50,500 recorded before).
    const billed = compare(money(reported), payment.grossAmount) > 0 ? payment.grossAmount : money(reported);
    if (compare(billed, money(reported)) !== 0) changes.push(`the gateway also refunded ${subtract(money(reported), billed)} of the customer's imposed fee, not recorded here`);
    const truth = compare(billed, recordedBefore) > 0 ? billed : recordedBefore;
    const unkeyedKey = gatewayRefundKey(payment);
    const explained = () => succeededTotal(known, (k) => k.refundKey !== unkeyedKey);
    // Our own refunds still waiting for an answer are the likeliest explanation of the gap.
    for (const pending of known.filter((k) => k.status === 'pending' && k.destination === 'gateway')) {
      if (compare(pending.amount, subtract(truth, explained())) > 0) continue;
      await acceptRefund(ctx, payment, pending);
      changes.push(`refund ${pending.refundKey} confirmed by the refunded total`);
    }
    const unexplained = subtract(truth, explained());
    const held = known.find((k) => k.refundKey === unkeyedKey);
    if (isPositive(unexplained)) {
      if (!held) {
        known.push(gatewayRefund(ctx, payment, unkeyedKey, unexplained));
        changes.push(`refund of ${unexplained} without a key recorded`);
      } else if (compare(held.amount, unexplained) !== 0) {
        held.amount = unexplained;
        changes.push(`refunds without a key now ${unexplained}`);
      }
    } else if (held) {
      // Keyed refunds now explain what it held: it was one of them, reported without its key before.
      known.splice(known.indexOf(held), 1);
      ctx.em.remove(held);
      changes.push('refunds without a key matched to keyed ones');
    }
  }
  // Refunds made at the gateway (not through refundPayment, which withdraws its own) give back
  // time the payment paid for: taken out of its funds, so no later credit pays it out again.
  const newlyAtGateway = subtract(madeAtGateway(known), madeAtGatewayBefore);
  if (isPositive(newlyAtGateway)) {
    const total = succeededTotal(known);
    if (await endWhatGatewayRefundPaysBack(ctx, payment, newlyAtGateway, compare(total, payment.grossAmount) >= 0)) {
      changes.push('subscription canceled: its payment was refunded in full at the gateway');
    }
  }
  changes.push(...(await takeBackWhatTheWalletGotTwice(ctx, payment, succeededTotal(known))));
  changes.push(...(await settleRefundTotals(ctx, payment, known)));
  return changes;
}

/**
 * NOTE: our own refunds are held within the payment by their limit (refund-rules.ts), but a
 * refund made at the gateway (a dashboard refund) is a fact we can only record: when it pays out
 * to the card what a wallet credit of this payment (a downgrade's proration, an unusable
 * settlement) already gave back, that part is taken back from the wallet by the one take-back
 * rule (takeBackWalletCredits). Its credit note already exists (the wallet credit's), so the
 * refund's note covers only the rest (issueRefundCreditNotes).
 */
function takeBackWhatTheWalletGotTwice(ctx: DataContext, payment: Payment, refunded: string): Promise<string[]> {
  return takeBackWalletCredits(ctx, payment, add(refunded, payment.chargebackAmount), {
    // One entry per refunded total: a later, larger refund takes back only what is new.
    referenceId: `${REFUND_OVERLAP_REFERENCE}${payment.id}:${refunded}`,
    description: `Refund of payment ${payment.orderId} made at the gateway paid out what its wallet credit had already given back: taken back`,
  });
}

const GATEWAY_REFUND_REASON = 'refund made at the gateway';

function madeAtGateway(refunds: Refund[]): string {
  return succeededTotal(refunds, (r) => r.reason === GATEWAY_REFUND_REASON);
}

/** The one refund row per payment that holds what the gateway refunded without a refund_key. */
export function gatewayRefundKey(payment: Pick<Payment, 'orderId'>): string {
  return `${payment.orderId}-gw`;
}

function gatewayRefund(ctx: DataContext, payment: Payment, refundKey: string, amount: string): Refund {
  return ctx.em.create(Refund, {
    payment,
    refundKey,
    amount,
    status: 'succeeded',
    destination: 'gateway',
    direct: false,
    reason: GATEWAY_REFUND_REASON,
    createdAt: ctx.clock.now(),
  });
}
