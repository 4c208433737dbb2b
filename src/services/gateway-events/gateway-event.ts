import { DomainError } from '../../domain/errors.js';
import type { GatewayTransaction } from '../../gateway/types.js';
import { isProvenReversal } from './natural-order.js';
import type { GatewayEntry, GatewayEvent } from './gateway-event-shape.js';

/**
 * Raised for an order this service never made (no payment or top-up with that order_id, or
 * neither prefix): the merchant account may be shared, so the webhook logs it `ignored` and
 * acknowledges it (docs/gateway.md) instead of making the gateway retry for hours.
 */
export class UnknownOrderError extends DomainError {
  constructor(orderId: string) {
    super('conflict', `Order ${orderId || '(none)'} was not made by this service.`);
  }
}

export type { GatewayEntry, GatewayEvent } from './gateway-event-shape.js';

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : typeof v === 'number' ? String(v) : null);

/** Reads an event from a gateway payload (webhook body or status answer). Missing fields are null. */
export function eventFromPayload(payload: Record<string, unknown>, opts: { verified?: boolean } = {}): GatewayEvent {
  const refunds = Array.isArray(payload.refunds)
    ? (payload.refunds as Record<string, unknown>[])
        .filter((r) => r && typeof r === 'object' && str(r.refund_amount) !== null)
        .map((r) => ({
          refundKey: str(r.refund_key),
          amount: str(r.refund_amount)!,
          id: typeof r.refund_chargeback_id === 'number' && Number.isSafeInteger(r.refund_chargeback_id) ? r.refund_chargeback_id : null,
          createdAt: str(r.created_at),
          reason: typeof r.reason === 'string' && r.reason.trim() !== '' ? r.reason.trim().slice(0, 500) : null,
        }))
    : [];
  return {
    orderId: str(payload.order_id) ?? '',
    transactionStatus: (str(payload.transaction_status) ?? '').toLowerCase(),
    fraudStatus: str(payload.fraud_status)?.toLowerCase() ?? null,
    statusCode: str(payload.status_code),
    grossAmount: str(payload.gross_amount),
    transactionId: str(payload.transaction_id),
    paymentType: str(payload.payment_type),
    refundAmount: str(payload.refund_amount),
    refunds,
    raw: payload,
    verified: opts.verified ?? false,
  };
}

export function eventFromTransaction(tx: GatewayTransaction): GatewayEvent {
  return eventFromPayload({ ...tx.raw, order_id: tx.orderId, transaction_status: tx.transactionStatus }, { verified: true });
}

/**
 * The deduplication key (docs/gateway.md, "Facts out of order"): `(order_id, transaction_status)`,
 * refined with the fraud status for captures (a challenged capture later accepted is a second
 * capture), with the cumulative refund amount for refunds and chargebacks (each partial one
 * raises it), and, for a `deny` or `cancel`, with whether money had arrived before it. NOTE: a
 * key names the fact as it is applied: a reversal is not the failure of an unpaid order, so a
 * `deny` first applied as a failure never hides the reversal that a later message proves.
 */
export function dedupKey(event: GatewayEvent): string {
  const parts = [event.orderId, event.transactionStatus];
  if (event.transactionStatus === 'capture') parts.push(event.fraudStatus ?? '');
  if (CUMULATIVE_STATUSES.includes(event.transactionStatus)) parts.push(event.refundAmount ?? '');
  if (isProvenReversal(event)) parts.push('after_settlement');
  return parts.join('|');
}

const CUMULATIVE_STATUSES = ['refund', 'partial_refund', 'chargeback', 'partial_chargeback'];

/** Money arrived: a settlement, or a card capture the fraud check accepted. */
export function isSuccess(event: GatewayEvent): boolean {
  return event.transactionStatus === 'settlement' || (event.transactionStatus === 'capture' && event.fraudStatus === 'accept');
}

export function isFailure(event: GatewayEvent): boolean {
  return ['deny', 'cancel', 'expire', 'failure'].includes(event.transactionStatus);
}

/** The cardholder's bank took money back after a dispute: all that was left, or part of it. Told by the status alone (docs/gateway.md, "Chargebacks"). */
export function isChargeback(event: GatewayEvent): boolean {
  return event.transactionStatus === 'chargeback' || event.transactionStatus === 'partial_chargeback';
}
