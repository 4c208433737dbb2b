import type { Payment, Refund } from '../../db/entities/payment.js';
import { refundStates, type RefundEvent } from '../../domain/states/refund-states.js';
import type { DataContext } from '../context.js';
import { endWhatRefundPaysBack } from './refund-rules.js';

/*
 * NOTE: a refund takes effect when the gateway accepts it (docs/gateway.md, 'Refunds the
 * gateway refuses, or whose answer is lost'). A refund of ours is
 * recorded `pending` and holds its amount (refund-rules.ts refundLimit), but nothing else moves
 * until then: whichever confirms it first (the gateway's answer, its refund or cancel
 * notification, payments sync) takes it out of the payment's funds and ends the subscription
 * it paid back, here and only here, exactly once (the state move happens once, under the
 * payment's lock). A refusal leaves everything as it was.
 */

export interface AcceptedRefund {
  /** Whether this call moved the refund to `succeeded` (false: it already was, or it is final otherwise). */
  accepted: boolean;
  /** Order ids of the ended subscription's pending payments, to cancel at the gateway after the commit. */
  toCancel: string[];
}

/**
 * Marks a refund of ours succeeded and applies what it pays back. The caller holds the
 * subscription's and the payment's locks and settles the payment's totals afterwards
 * (settleRefundTotals), which issues the credit note.
 */
export async function acceptRefund(ctx: DataContext, payment: Payment, refund: Refund, how: Extract<RefundEvent, 'succeed' | 'confirm_at_gateway'> = 'succeed'): Promise<AcceptedRefund> {
  if (!refundStates.applyIfAllowed(refund, how, ctx.clock.now())) return { accepted: false, toCancel: [] };
  const toCancel = await endWhatRefundPaysBack(ctx, payment, refund.amount, refund.keepSubscription);
  return { accepted: true, toCancel };
}
