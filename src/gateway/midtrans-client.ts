import { toGatewayInteger, toJsonInteger } from './amount.js';
import { assertOrderId, buildChargeBody } from './charge-body.js';
import { GatewayError, type GatewayOperation } from './errors.js';
import { interpretAnswer, STATE_CHANGING, toRefundResult, toTransaction, type Body, type RawAnswer } from './response.js';
import type { ChargeRequest, GatewayTransaction, PaymentGateway, RefundRequest, RefundResult } from './types.js';

export interface MidtransClientOptions {
  /** Core API base, e.g. https://api.sandbox.midtrans.com or http://127.0.0.1:3000/_simulator. */
  baseUrl: string;
  serverKey: string;
  /**
   * GATEWAY_NOTIFICATION_URL: sent as X-Override-Notification on every charge that names no URL
   * of its own, so the gateway notifies this URL instead of the one set in its dashboard.
   */
  notificationUrl?: string;
  timeoutMs?: number;
  /** Extra attempts for status() after a timeout or an outage. */
  statusRetries?: number;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
}

const REFUND_KEY = /^[A-Za-z0-9_-]{1,100}$/;
const IDEMPOTENCY_KEY_MAX = 46;
/** Connection errors that prove the request never left this machine. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);
const RETRY_BASE_MS = 250;

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function errorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

function errorName(err: unknown): string | undefined {
  return err !== null && typeof err === 'object' ? String((err as { name?: unknown }).name) : undefined;
}

/** Midtrans Core API v2 over HTTP: charge, status, cancel, expire, refund, direct refund. */
export class MidtransClient implements PaymentGateway {
  // Private fields keep the key out of console.log(client) and JSON.stringify(client).
  readonly #baseUrl: string;
  readonly #serverKey: string;
  readonly #authorization: string;
  readonly #notificationUrl: string | undefined;
  readonly #timeoutMs: number;
  readonly #statusRetries: number;
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(opts: MidtransClientOptions) {
    if (!opts.serverKey) throw new Error('MidtransClient needs a server key');
    this.#baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.#serverKey = opts.serverKey;
    this.#authorization = 'Basic ' + Buffer.from(`${opts.serverKey}:`, 'utf8').toString('base64');
    this.#notificationUrl = opts.notificationUrl || undefined;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#statusRetries = Math.max(0, opts.statusRetries ?? 2);
    this.#fetch = opts.fetch ?? globalThis.fetch;
    this.#sleep = opts.sleep ?? defaultSleep;
  }

  async charge(req: ChargeRequest): Promise<GatewayTransaction> {
    const body = buildChargeBody(req);
    const headers: Record<string, string> = {};
    const notificationUrl = req.notificationUrl || this.#notificationUrl;
    if (notificationUrl) headers['X-Override-Notification'] = notificationUrl;
    if (req.idempotencyKey) {
      // Midtrans silently ignores a longer key, which would hide a lost idempotency guarantee.
      if (req.idempotencyKey.length > IDEMPOTENCY_KEY_MAX) {
        throw new GatewayError('validation', `idempotencyKey is longer than ${IDEMPOTENCY_KEY_MAX} characters`, { operation: 'charge' });
      }
      headers['Idempotency-Key'] = req.idempotencyKey;
    }
    const answer = await this.#call('charge', 'POST', '/v2/charge', body, headers);
    return toTransaction('charge', answer, req.orderId);
  }

  async status(orderId: string): Promise<GatewayTransaction> {
    assertOrderId(orderId, 'status');
    const path = `/v2/${encodeURIComponent(orderId)}/status`;
    for (let attempt = 0; ; attempt++) {
      try {
        return toTransaction('status', await this.#call('status', 'GET', path), orderId);
      } catch (e) {
        if (!(e instanceof GatewayError) || attempt >= this.#statusRetries) throw e;
        if (e.kind !== 'timeout' && e.kind !== 'unavailable') throw e;
        await this.#sleep(RETRY_BASE_MS * 2 ** attempt + Math.floor(Math.random() * RETRY_BASE_MS));
      }
    }
  }

  async cancel(orderId: string): Promise<GatewayTransaction> {
    assertOrderId(orderId, 'cancel');
    // The official client posts a literal null body; Midtrans is known to accept that.
    return toTransaction('cancel', await this.#call('cancel', 'POST', `/v2/${encodeURIComponent(orderId)}/cancel`, null), orderId);
  }

  async expire(orderId: string): Promise<GatewayTransaction> {
    assertOrderId(orderId, 'expire');
    return toTransaction('expire', await this.#call('expire', 'POST', `/v2/${encodeURIComponent(orderId)}/expire`, null), orderId);
  }

  refund(req: RefundRequest): Promise<RefundResult> {
    return this.#refund('refund', req, 'refund');
  }

  directRefund(req: RefundRequest): Promise<RefundResult> {
    return this.#refund('direct_refund', req, 'refund/online/direct');
  }

  async #refund(op: GatewayOperation, req: RefundRequest, suffix: string): Promise<RefundResult> {
    assertOrderId(req.orderId, op);
    if (typeof req.refundKey !== 'string' || !REFUND_KEY.test(req.refundKey)) {
      throw new GatewayError('validation', 'refundKey must be letters, digits, "-" or "_"', { operation: op });
    }
    const amount = toGatewayInteger(req.amount, 'IDR', 'amount');
    if (amount <= 0n) throw new GatewayError('validation', 'amount must be positive', { operation: op });
    // refund_key is always sent: without it Midtrans makes up a key and a retry refunds twice.
    const body: Body = { refund_key: req.refundKey, amount: toJsonInteger(amount, 'amount') };
    if (req.reason) body['reason'] = req.reason.slice(0, 255);
    const answer = await this.#call(op, 'POST', `/v2/${encodeURIComponent(req.orderId)}/${suffix}`, body);
    return toRefundResult(answer, req.refundKey, `${amount}.00`);
  }

  async #call(op: GatewayOperation, method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Body> {
    const answer = await this.#exchange(op, method, path, body, headers);
    return interpretAnswer(op, answer, (s) => this.#redact(s));
  }

  async #exchange(op: GatewayOperation, method: string, path: string, body: unknown, extra: Record<string, string>): Promise<RawAnswer> {
    try {
      const res = await this.#fetch(this.#baseUrl + path, {
        method,
        headers: {
          Accept: 'application/json',
          'Content-Type': 'application/json',
          Authorization: this.#authorization,
          ...extra,
        },
        body: method === 'GET' ? undefined : JSON.stringify(body),
        redirect: 'manual',
        // The signal also bounds reading the body, so a server that stalls mid-answer times out too.
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      return { httpStatus: res.status, text: await res.text() };
    } catch (err) {
      throw this.#transportError(op, err);
    }
  }

  #transportError(op: GatewayOperation, err: unknown): GatewayError {
    const name = errorName(err);
    if (name === 'TimeoutError' || name === 'AbortError') {
      return new GatewayError('timeout', `Midtrans ${op}: no answer within ${this.#timeoutMs} ms`, {
        operation: op,
        outcomeUnknown: STATE_CHANGING.has(op),
        cause: err,
      });
    }
    const code = errorCode(err);
    const notSent = code !== undefined && NOT_SENT_CODES.has(code);
    return new GatewayError('unavailable', this.#redact(`Midtrans ${op}: connection failed (${code ?? name ?? 'unknown error'})`), {
      operation: op,
      outcomeUnknown: STATE_CHANGING.has(op) && !notSent,
      cause: err,
    });
  }

  #redact(s: string): string {
    let out = s.split(this.#serverKey).join('[redacted]');
    const encoded = this.#authorization.slice('Basic '.length);
    out = out.split(encoded).join('[redacted]');
    return out;
  }
}
