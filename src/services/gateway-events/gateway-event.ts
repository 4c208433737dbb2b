import { DomainError } from '../../domain/errors.js';
import type { GatewayTransaction } from '../../gateway/types.js';

/**
 * Raised for an order this service never made (no payment or top-up with that order_id, or
 * neither prefix): the merchant account may be shared, so the webhook logs it `ignored` and
 * acknowledges it (DECISIONS.md §5) instead of making the gateway retry for hours.
 */
export class UnknownOrderError extends DomainError {
  constructor(orderId: string) {
    super('conflict', `Order ${orderId || '(none)'} was not made by this service.`);
  }
}

/**
 * What the gateway said happened to one order, from a webhook payload, a status query (sync)
 * or a charge answer. Strings are kept exactly as received.
 */
export interface GatewayEvent {
  orderId: string;
  transactionStatus: string;
  fraudStatus: string | null;
  statusCode: string | null;
  grossAmount: string | null;
  transactionId: string | null;
  paymentType: string | null;
  /** Cumulative refunded amount after this event (refund notifications); the cumulative charged-back amount in chargeback ones (DECISIONS §9). */
  refundAmount: string | null;
  /**
   * Individual refunds as the gateway lists them (`refunds[]`), which also lists chargebacks
   * (`chargeback`: an entry whose reason is `chargeback`, as the simulator writes them; MIDTRANS.md
   * gives no sample).
   */
  refunds: { refundKey: string | null; amount: string; chargeback: boolean }[];
  raw: Record<string, unknown>;
  /**
   * True when the payload came from our own authenticated call to the gateway (a charge or
   * status answer), so fields the notification signature does not cover (saved_token_id) can be
   * believed.
   */
  verified?: boolean;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : typeof v === 'number' ? String(v) : null);

/** Reads an event from a gateway payload (webhook body or status answer). Missing fields are null. */
export function eventFromPayload(payload: Record<string, unknown>, opts: { verified?: boolean } = {}): GatewayEvent {
  const refunds = Array.isArray(payload.refunds)
    ? (payload.refunds as Record<string, unknown>[])
        .filter((r) => r && typeof r === 'object' && str(r.refund_amount) !== null)
        .map((r) => ({ refundKey: str(r.refund_key), amount: str(r.refund_amount)!, chargeback: str(r.reason) === 'chargeback' }))
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
 * The deduplication key of DECISIONS §5: `(order_id, transaction_status)`, refined with the
 * fraud status for captures (a challenged capture later accepted is a second capture) and with
 * the cumulative refund amount for refunds and chargebacks (each partial one raises it).
 */
export function dedupKey(event: GatewayEvent): string {
  const parts = [event.orderId, event.transactionStatus];
  if (event.transactionStatus === 'capture') parts.push(event.fraudStatus ?? '');
  if (CUMULATIVE_STATUSES.includes(event.transactionStatus)) parts.push(event.refundAmount ?? '');
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

/** The cardholder's bank took money back (MIDTRANS.md §7.3): all that was left, or part of it. */
export function isChargeback(event: GatewayEvent): boolean {
  return event.transactionStatus === 'chargeback' || event.transactionStatus === 'partial_chargeback';
}
