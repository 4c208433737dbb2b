import { GatewayError, type GatewayErrorKind, type GatewayOperation } from './errors.js';
import { extractPaymentDetails, readExpiryTime } from './payment-details.js';
import type { GatewayTransaction, RefundResult } from './types.js';

export type Body = Record<string, unknown>;

export const STATE_CHANGING: ReadonlySet<GatewayOperation> = new Set(['charge', 'cancel', 'expire', 'refund', 'direct_refund']);

function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

function statusCodeOf(body: Body | null): string | null {
  const v = body?.['status_code'];
  if (typeof v === 'string' && v !== '') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return String(v);
  return null;
}

function kindForCode(code: number): GatewayErrorKind {
  switch (code) {
    case 400:
      return 'validation';
    case 401:
      return 'unauthorized';
    case 404:
      return 'not_found';
    case 406:
      return 'duplicate_order';
    case 407:
    case 412:
      return 'cannot_modify';
    case 411:
      return 'denied_token';
    case 414:
      return 'refund_rejected';
    case 429:
      return 'unavailable';
    default:
      if (code >= 500) return 'unavailable';
      if (code >= 400) return 'validation';
      return 'bad_response';
  }
}

function gatewayMessages(body: Body | null): string[] {
  if (!body) return [];
  const out: string[] = [];
  const message = body['status_message'];
  if (typeof message === 'string' && message !== '') out.push(message);
  for (const key of ['validation_messages', 'error_messages']) {
    const list = body[key];
    if (Array.isArray(list)) for (const m of list) if (typeof m === 'string') out.push(m);
  }
  return out;
}

export interface RawAnswer {
  httpStatus: number;
  text: string;
}

export type Redact = (s: string) => string;

/**
 * Decides success from the body's status_code, because Midtrans answers many business errors
 * with HTTP 200 (docs/gateway.md). Returns the body of a usable answer or throws.
 */
export function interpretAnswer(op: GatewayOperation, answer: RawAnswer, redact: Redact): Body {
  const { httpStatus } = answer;
  let parsed: unknown;
  let isJson = true;
  try {
    parsed = JSON.parse(answer.text);
  } catch {
    isJson = false;
  }
  const body = isJson && parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Body) : null;
  const code = statusCodeOf(body);
  const messages = gatewayMessages(body).map(redact);
  const fail = (kind: GatewayErrorKind, what: string, outcomeUnknown = false): GatewayError =>
    new GatewayError(kind, redact(`Midtrans ${op}: ${what}`), { operation: op, statusCode: code, httpStatus, messages, outcomeUnknown });
  // NOTE: an answer we cannot read says nothing about whether a state-changing call took effect
  // (a proxy page after the gateway acted, a truncated body): the outcome is unknown, for
  // reconciliation to find out, never a refusal (issue 15).
  const unreadable = (what: string): GatewayError => fail('bad_response', what, STATE_CHANGING.has(op));

  if (httpStatus >= 400) {
    const bodyCode = code !== null && Number(code) >= 400 ? Number(code) : null;
    // NOTE: a 5xx, from a proxy in front of the gateway or from Midtrans itself (its "Sorry, Our
    // system is recovering" body), may come after the card was charged (docs/gateway.md, charge
    // outcome unknown): only a 4xx-class code is a refusal.
    const unknown = STATE_CHANGING.has(op) && (httpStatus >= 500 || (bodyCode !== null && bodyCode >= 500));
    const effective = bodyCode ?? httpStatus;
    throw fail(kindForCode(effective), `${effective} ${messages[0] ?? `HTTP ${httpStatus}`}`, unknown);
  }
  if (httpStatus >= 300) throw unreadable(`unexpected redirect (HTTP ${httpStatus})`);
  if (body === null) throw unreadable(`answer is not a JSON object (HTTP ${httpStatus})`);
  if (code === null) {
    // HTTP 202 without a status: an earlier request with the same Idempotency-Key is still running.
    if (httpStatus === 202) throw fail('unavailable', 'request still in progress', STATE_CHANGING.has(op));
    throw unreadable('answer has no status_code');
  }
  if (!/^\d{3}$/.test(code)) throw unreadable(`malformed status_code ${JSON.stringify(code)}`);
  const n = Number(code);
  if (n >= 200 && n < 300) return body;
  if (n === 407 && (op === 'status' || op === 'expire')) return body;
  throw fail(kindForCode(n), `${code} ${messages[0] ?? ''}`.trim(), STATE_CHANGING.has(op) && n >= 500);
}

export function toTransaction(op: GatewayOperation, body: Body, fallbackOrderId: string): GatewayTransaction {
  const status = str(body['transaction_status']);
  if (status === null) {
    throw new GatewayError('bad_response', `Midtrans ${op}: answer has no transaction_status`, {
      operation: op,
      statusCode: statusCodeOf(body),
      httpStatus: 200,
      // A success code without the status: the call went through, what it did is unknown.
      outcomeUnknown: STATE_CHANGING.has(op),
    });
  }
  const gross = body['gross_amount'];
  return {
    orderId: str(body['order_id']) ?? fallbackOrderId,
    transactionId: str(body['transaction_id']),
    transactionStatus: status.toLowerCase(),
    fraudStatus: str(body['fraud_status'])?.toLowerCase() ?? null,
    statusCode: statusCodeOf(body) ?? '',
    grossAmount: typeof gross === 'string' ? gross : typeof gross === 'number' ? String(gross) : null,
    paymentType: str(body['payment_type']),
    paymentDetails: extractPaymentDetails(body),
    expiryTime: readExpiryTime(body),
    savedTokenId: str(body['saved_token_id']),
    refundAmount: str(body['refund_amount']),
    signatureKey: str(body['signature_key']),
    raw: body,
  };
}

/** The amount of this refund: its refunds[] entry when listed, else the answer's refund_amount. */
function refundAmountOf(body: Body, refundKey: string, requested: string): string {
  const refunds = body['refunds'];
  if (Array.isArray(refunds)) {
    for (const r of refunds) {
      if (r !== null && typeof r === 'object' && (r as Body)['refund_key'] === refundKey) {
        const amount = str((r as Body)['refund_amount']);
        if (amount !== null) return amount;
      }
    }
  }
  return str(body['refund_amount']) ?? requested;
}

export function toRefundResult(body: Body, refundKey: string, requestedAmount: string): RefundResult {
  const statusCode = statusCodeOf(body) ?? '';
  return {
    refundKey: str(body['refund_key']) ?? refundKey,
    refundAmount: refundAmountOf(body, refundKey, requestedAmount),
    transactionStatus: (str(body['transaction_status']) ?? '').toLowerCase(),
    statusCode,
    // Direct refunds rejected by the bank answer 202 and leave the transaction settled.
    accepted: statusCode === '200' || statusCode === '201',
    raw: body,
  };
}
