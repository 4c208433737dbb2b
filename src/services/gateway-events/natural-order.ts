import { compare, isDecimalText, isPositive, money, add, type Money } from '../../domain/money.js';
import type { GatewayEvent, GatewayEntry } from './gateway-event-shape.js';

/*
 * Order never decides the end state (docs/gateway.md, "Facts out of order"). The gateway's
 * messages about one order can arrive in any order: a reversal before the settlement it
 * reverses, a full chargeback before the partial one it follows, a status answer that sums up
 * several steps nobody told us about. Instead of trusting the order of arrival, each message is
 * read for the history it proves, and the facts it proves are applied in the order they
 * happened, each at most once (the state machines and the cumulative totals make every step
 * idempotent):
 *
 *   - money had arrived before a `deny` or `cancel` that carries `settlement_time` (or a paid
 *     `payment_amounts` entry): that message is a reversal, whatever we heard before it. It
 *     settles the payment first (if its settlement was lost or is still on its way), then
 *     takes the money back; the late settlement then finds the payment reversed and buys
 *     nothing.
 *   - money had arrived before any refund or chargeback status (those settle first, too).
 *   - a chargeback notification lists every step of the dispute in `refunds[]`: the partial
 *     chargebacks that came before the one it announces are applied first, each with its
 *     credit note and its notice, so newest-first delivery ends as natural order does. The
 *     entries listed before the dispute's are refunds made before it (their own notifications
 *     perhaps lost): they are recorded first, as a refund message would record them.
 *
 * This module only reads: it says what a message proves. apply-to-payment.ts and
 * apply-to-topup.ts apply it; dedupKey names the fact so that a key is never taken by a
 * message that was applied as something else.
 */

/** The field a sync adds to a status answer when we hold the order as paid (settledHere). */
export const SETTLED_HERE = 'settled_here_at';

/**
 * A status answer about an order we hold as paid, with that fact added for the pipeline: a
 * `deny` or `cancel` is then a reversal even when the answer does not carry settlement_time,
 * and its deduplication key is not the one a failure of the unpaid order took.
 */
export function withSettledHere(payload: Record<string, unknown>, paidAt: Date): Record<string, unknown> {
  return { ...payload, [SETTLED_HERE]: paidAt.toISOString() };
}

/** Whether the message proves that the order's money had arrived before this status. */
export function provesSettlement(event: GatewayEvent): boolean {
  // Our own record, added by a sync to the status answer of a payment we hold as paid (never
  // believed from a pushed notification): the settlement was applied here, whatever the answer omits.
  if (event.verified && typeof event.raw[SETTLED_HERE] === 'string') return true;
  return gatewaySaysSettled(event);
}

/** Whether the gateway's own fields say the order's money had arrived (settlement_time, a paid payment_amounts entry). */
export function gatewaySaysSettled(event: GatewayEvent): boolean {
  const raw = event.raw;
  if (typeof raw['settlement_time'] === 'string' && raw['settlement_time'] !== '') return true;
  // A BCA/BNI/BRI/CIMB virtual account lists what was paid into it.
  const paid = raw['payment_amounts'];
  return Array.isArray(paid) && paid.some((p) => p !== null && typeof p === 'object' && typeof (p as Record<string, unknown>)['paid_at'] === 'string');
}

/** A `deny` or `cancel` that the message itself proves came after a settlement: the gateway took the money back. */
export function isProvenReversal(event: GatewayEvent): boolean {
  return (event.transactionStatus === 'deny' || event.transactionStatus === 'cancel') && provesSettlement(event);
}

/** The gateway's entries in the order they were made (refund_chargeback_id, then created_at, then as listed). */
function inOrder(entries: readonly GatewayEntry[]): GatewayEntry[] {
  return entries
    .map((e, i) => ({ e, i }))
    .sort((a, b) => {
      const [ia, ib] = [a.e.id ?? null, b.e.id ?? null];
      if (ia !== null && ib !== null && ia !== ib) return ia - ib;
      const [ca, cb] = [a.e.createdAt ?? null, b.e.createdAt ?? null];
      if (ca !== null && cb !== null && ca !== cb) return ca < cb ? -1 : 1;
      return a.i - b.i;
    })
    .map(({ e }) => e);
}

/**
 * What a chargeback message proves: the running totals charged back, step by step, the last
 * being the total it reports (`refund_amount`), and the refunds made before the dispute. Every
 * `refunds[]` entry that belongs to the dispute is the dispute's, whatever its `reason` or id
 * says, so a chargeback is never also counted as a refund; but refunds made before the dispute
 * are listed too, and they always come first (a disputed payment takes no more refunds). So the
 * dispute's steps are the latest entries that add up to the reported total, and the entries
 * before them are refunds; when no latest entries add up to it (a payload that lists nothing, or
 * something else), the reported total is one step and no refund is read from the message.
 * Each step keeps the issuer's free-text reason (chargebackReasons).
 */
export function readDispute(event: GatewayEvent): { steps: Money[]; refundsBefore: GatewayEntry[]; reasons: (string | null)[] } {
  const reported = event.refundAmount !== null && isDecimalText(event.refundAmount) ? money(event.refundAmount) : null;
  const entries = inOrder(event.refunds);
  const total = reported ?? (entries.length > 0 ? add(...entries.map((e) => money(e.amount))) : null);
  if (total === null || !isPositive(total)) return { steps: [], refundsBefore: [], reasons: [] };
  let sum = money(0);
  for (let i = entries.length - 1; i >= 0; i--) {
    sum = add(sum, money(entries[i]!.amount));
    const cmp = compare(sum, total);
    if (cmp > 0) break;
    if (cmp === 0) {
      const steps: Money[] = [];
      let running = money(0);
      for (const e of entries.slice(i)) {
        running = add(running, money(e.amount));
        steps.push(running);
      }
      return { steps, refundsBefore: entries.slice(0, i), reasons: entries.slice(i).map((e) => e.reason ?? messageText(event)) };
    }
  }
  return { steps: [total], refundsBefore: [], reasons: [entries.at(-1)?.reason ?? messageText(event)] };
}

/** The running totals charged back, step by step, that a chargeback message proves (readDispute). */
export function chargebackSteps(event: GatewayEvent): Money[] {
  return readDispute(event).steps;
}

/** The message's own free text (`status_message`), for a step whose entry gives no reason. */
function messageText(event: GatewayEvent): string | null {
  const text = event.raw.status_message;
  return typeof text === 'string' && text.trim() !== '' ? text.trim() : null;
}

/**
 * The issuer's free-text reason for each step of chargebackSteps: its `refunds[]` entry's
 * `reason`, else the message's `status_message`; null when the gateway wrote none. Kept as the
 * credit note's memo (docs/gateway.md, "Chargebacks").
 */
export function chargebackReasons(event: GatewayEvent): (string | null)[] {
  return readDispute(event).reasons;
}

/**
 * The refunds made before the dispute that a chargeback message lists, as the refund message
 * that would have told them: cumulative (`refund_amount` is their total, so a late refund
 * notification with the same total is a repeat) and with each entry's refund_key, so they are
 * recorded by the same code as any refund message. Null when the message lists none.
 */
export function refundsBeforeDispute(event: GatewayEvent): GatewayEvent | null {
  const before = readDispute(event).refundsBefore;
  if (before.length === 0) return null;
  return { ...event, transactionStatus: 'partial_refund', refundAmount: add(...before.map((e) => money(e.amount))), refunds: before };
}
