import { GatewayError } from '../../gateway/errors.js';

/*
 * NOTE: what the gateway's answer to a refund (or a refund by cancel) means
 * (docs/gateway.md, 'Refunds the gateway refuses'): a
 * 4xx-class status_code, whatever the HTTP status, is a refusal (412, 414 "insufficient
 * balance", a closed refund window; a direct refund "denied by the bank" answers 202); a
 * timeout, a dropped connection or a 5xx leaves the outcome unknown; a refund that never
 * reached the gateway, or that it refused for our own credentials, was not made and is not the
 * customer's refusal either.
 */

export type GatewayRefundAnswer =
  | { kind: 'accepted' }
  | { kind: 'refused'; statusCode: string; message: string }
  | { kind: 'unknown' }
  | { kind: 'not_made'; error: GatewayError };

/** What a caller learns: the refund took effect, or waits for the gateway's confirmation. */
export type GatewayRefundOutcome = 'succeeded' | 'pending';

const MERCHANT_SIDE = new Set(['unauthorized', 'unavailable', 'timeout', 'bad_response']);

export function classifyRefundFailure(err: unknown): GatewayRefundAnswer {
  if (!(err instanceof GatewayError)) throw err;
  if (err.outcomeUnknown) return { kind: 'unknown' };
  if (MERCHANT_SIDE.has(err.kind) || err.statusCode === null) return { kind: 'not_made', error: err };
  return { kind: 'refused', statusCode: err.statusCode, message: err.messages[0] ?? '' };
}
