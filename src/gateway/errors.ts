import type { Failure } from '../domain/failure.js';

export type GatewayErrorKind =
  | 'validation'
  | 'duplicate_order'
  | 'not_found'
  | 'cannot_modify'
  | 'refund_rejected'
  | 'denied_token'
  | 'unauthorized'
  | 'unavailable'
  | 'timeout'
  | 'bad_response';

export type GatewayOperation = 'charge' | 'status' | 'cancel' | 'expire' | 'refund' | 'direct_refund';

export interface GatewayErrorOptions {
  operation?: GatewayOperation;
  /** The body's status_code, when the gateway sent one. */
  statusCode?: string | null;
  httpStatus?: number | null;
  messages?: string[];
  outcomeUnknown?: boolean;
  cause?: unknown;
}

/**
 * Raised when the gateway did not give a usable answer. Messages carry the gateway's own
 * status_message / validation_messages, never credentials.
 */
export class GatewayError extends Error {
  readonly kind: GatewayErrorKind;
  readonly operation: GatewayOperation | null;
  readonly statusCode: string | null;
  readonly httpStatus: number | null;
  readonly messages: string[];
  /**
   * True when the request may have reached the gateway and changed something we cannot see
   * (a timeout or a dropped connection after sending a state-changing call). Callers must
   * reconcile with status() before assuming it did not happen.
   */
  readonly outcomeUnknown: boolean;

  constructor(kind: GatewayErrorKind, message: string, opts: GatewayErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'GatewayError';
    this.kind = kind;
    this.operation = opts.operation ?? null;
    this.statusCode = opts.statusCode ?? null;
    this.httpStatus = opts.httpStatus ?? null;
    this.messages = opts.messages ?? [];
    this.outcomeUnknown = opts.outcomeUnknown ?? false;
  }
}

export type GatewayProblemCode = 'gateway_error' | 'gateway_unavailable';

/** Transient failures are 503 so clients know a retry may work; everything else is 502. */
export function gatewayErrorToProblemCode(e: GatewayError): GatewayProblemCode {
  if (e.kind === 'unavailable' || e.kind === 'timeout') return 'gateway_unavailable';
  if (e.httpStatus !== null && e.httpStatus >= 500) return 'gateway_unavailable';
  const code = e.statusCode === null ? NaN : Number.parseInt(e.statusCode, 10);
  if (code >= 500) return 'gateway_unavailable';
  return 'gateway_error';
}

/** A payment's `failure_reason` when a charge failed on our side or the gateway's, never the customer's. */
export type MerchantSideFailure = 'gateway_rejected_credentials' | 'gateway_unavailable';
const MERCHANT_SIDE_FAILURES: readonly string[] = ['gateway_rejected_credentials', 'gateway_unavailable'] satisfies MerchantSideFailure[];

/** Whether a payment's `failure_reason` is one merchantSideFailure gives. */
export function isMerchantSideFailure(failureReason: string | null): boolean {
  return failureReason !== null && MERCHANT_SIDE_FAILURES.includes(failureReason);
}

/**
 * Whether a refused charge is the merchant's failure (a wrong server key, the gateway down or
 * overloaded) rather than the customer's (a declined card, bad card data): docs/billing.md, such a
 * failure counts no dunning attempt and moves no subscription. Null for the customer's.
 */
export function merchantSideFailure(e: GatewayError): MerchantSideFailure | null {
  if (e.kind === 'unauthorized') return 'gateway_rejected_credentials';
  if (e.kind === 'unavailable' || e.kind === 'timeout' || e.kind === 'bad_response') return 'gateway_unavailable';
  return null;
}

/** What a client is told when the gateway refused our credentials: the fix is the operator's, and its hint stays in the log. */
export const GATEWAY_REFUSED_MESSAGE = 'The payment gateway could not take this payment now; please try again later.';

/**
 * The gateway client's part of the one classification (src/domain/failure.ts). NOTE: a refused
 * server key (401) is the operator's problem: the client gets a generic message, never the
 * gateway's "check client or server key", which goes to the operator's log (operatorDetail) with
 * the setting that fixes it.
 */
export function recogniseGatewayFailure(err: unknown): Failure | null {
  if (!(err instanceof GatewayError)) return null;
  if (err.kind === 'unauthorized') {
    return { code: 'gateway_error', message: GATEWAY_REFUSED_MESSAGE, errors: [], operatorDetail: `gateway unauthorized: ${err.message} (check GATEWAY_SERVER_KEY and GATEWAY_BASE_URL)` };
  }
  return { code: gatewayErrorToProblemCode(err), message: `The payment gateway answered: ${err.message}`, errors: [], operatorDetail: `gateway ${err.kind}: ${err.message}` };
}
