import { createTransaction, MERCHANT_ID, type ThreeDsMode } from './charge.js';
import { validateCharge } from './charge-validation.js';
import { applyChargeback } from './chargebacks.js';
import { FaultInjector } from './faults.js';
import { IdempotencyStore } from './idempotency.js';
import { MIDTRANS_RETRY_DELAYS_MS, Notifier } from './notifier.js';
import { actionAnswer, chargeAnswer, errorBody, money, notificationPayload, statusAnswer, type Body } from './payload.js';
import { newId } from './random.js';
import { applyRefund } from './refunds.js';
import { TransactionStore } from './store.js';
import { formatGmt7 } from './time.js';
import { isDueToExpire, isDueToSettle, moves, type Move } from './transitions.js';
import {
  COMMAND_ACTIONS,
  SimulatorError,
  type ActionOptions,
  type ActionResult,
  type CommandAction,
  type CoreOperation,
  type DeliveryOutcome,
  type SimTransaction,
} from './types.js';

export interface SimulatorOptions {
  serverKey: string;
  /** Where notifications go unless a charge overrode it; read at send time. */
  notificationUrl: () => string;
  /** The URL this server is reachable at; QR, 3-D Secure and action URLs are built on it. */
  publicBaseUrl: () => string;
  /** The simulator's clock: expiry, card settlement and refund confirmation follow it. */
  now?: () => Date;
  fetch?: typeof fetch;
  /**
   * Delays before each retry of a failed notification. Default: Midtrans' schedule (about
   * 2, 10, 30, 90, 210 minutes, each with random jitter: docs/gateway.md, 'How the simulator
   * behaves'); tests pass shorter ones.
   */
  retryDelaysMs?: number[];
  /** Spread each retry delay randomly over (0, delay] as Midtrans does; default on only for the default schedule. */
  retryJitter?: boolean;
  /** 3-D Secure handling (see THREE_DS_MODES in charge.ts); default test_tokens_skip. */
  threeDsMode?: ThreeDsMode;
  /**
   * How often the simulator looks at its clock on its own to expire unpaid transactions, settle
   * yesterday's card captures and confirm refunds, pushing the notifications. Default 1000 ms; 0
   * turns the timer off (tests then call tick()).
   */
  sweepIntervalMs?: number;
  /** Time between a refund and the bank's confirmation (the second refund notification); default 60 s. */
  refundConfirmationDelayMs?: number;
  /**
   * Refuse ShopeePay refunds from 23:55 to 06:00 GMT+7 as ShopeePay does.
   * Default off: the simulator runs on the wall clock, and a test's outcome must not depend on
   * the hour it runs at; a test that wants it sets it with its own clock.
   */
  shopeePayQuietHours?: boolean;
  /** Body size limit of Core API requests; default 1 MB. */
  bodyLimitBytes?: number;
  /**
   * Delay before the notification Midtrans sends on its own after a charge (pending, card
   * capture/deny), so the merchant has usually stored the charge answer first. Default 50 ms.
   */
  chargeNotificationDelayMs?: number;
}

export interface CoreAnswer {
  httpStatus: number;
  body: Body;
  /** Send this transaction's notification after answering. */
  notify?: SimTransaction;
  /** How long after answering (default at once). */
  notifyDelayMs?: number;
}

export interface RequestRecord {
  operation: CoreOperation;
  method: string;
  path: string;
  at: Date;
}

const REFUND_KEY = /^[A-Za-z0-9_-]{1,100}$/;
const LOG_LIMIT = 1000;
/** Test hook: a direct refund with this reason is rejected by the "bank" (status_code 202). */
export const BANK_REJECT_REASON = 'sim-bank-reject';

const ok = (body: Body, notify?: SimTransaction): CoreAnswer => ({ httpStatus: 200, body, notify });
const businessError = (code: string, message: string, extra?: Body): CoreAnswer => ({ httpStatus: 200, body: errorBody(code, message, extra) });
const notFound = (): CoreAnswer => businessError('404', "Transaction doesn't exist.");
const cannotModify = (): CoreAnswer => businessError('412', 'Merchant cannot modify the status of the transaction');

function integerOrNull(v: unknown): number | null | 'invalid' {
  if (v === undefined || v === null) return null;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'string' && /^\d{1,15}$/.test(v)) return Number(v);
  return 'invalid';
}

/** Comma-separated notification URL headers; Midtrans takes at most three. */
function urlList(header: string | undefined): string[] {
  if (!header) return [];
  return header
    .split(',')
    .map((u) => u.trim())
    .filter((u) => /^https?:\/\//i.test(u))
    .slice(0, 3);
}

/** The simulator's state and behaviour, independent of Koa. */
export class SimulatorCore {
  readonly store = new TransactionStore();
  readonly faults = new FaultInjector();
  readonly idempotency: IdempotencyStore;
  readonly notifier: Notifier;
  readonly requests: RequestRecord[] = [];
  readonly opts: SimulatorOptions;
  readonly now: () => Date;
  /** refund_key → what was asked (null amount = "the rest") and answered, for replays. */
  readonly #refundKeys = new Map<string, { transactionId: string; requested: number | null; answer: Body }>();
  readonly #sweeper: NodeJS.Timeout | null = null;

  constructor(opts: SimulatorOptions) {
    this.opts = opts;
    this.now = opts.now ?? (() => new Date());
    this.idempotency = new IdempotencyStore(this.now);
    this.notifier = new Notifier({
      fetch: opts.fetch ?? globalThis.fetch,
      retryDelaysMs: opts.retryDelaysMs ?? MIDTRANS_RETRY_DELAYS_MS,
      jitter: opts.retryJitter ?? opts.retryDelaysMs === undefined,
      now: this.now,
    });
    const every = opts.sweepIntervalMs ?? 1000;
    if (every > 0) {
      this.#sweeper = setInterval(() => this.tick(), every);
      this.#sweeper.unref();
    }
  }

  /**
   * What happens at the gateway with time alone, up to now on the simulator's clock: pending
   * transactions past their expiry expire, accepted card captures settle on the day after (an
   * unreviewed challenge is cancelled then), refunds get their bank confirmation. Each change is
   * notified like Midtrans does. Returns the order ids that changed.
   */
  tick(): string[] {
    const now = this.now();
    return this.store
      .all()
      .filter((tx) => this.#catchUp(tx, now))
      .map((tx) => tx.order_id);
  }

  #catchUp(tx: SimTransaction, now: Date): boolean {
    let changed = false;
    if (isDueToExpire(tx, now) && moves.expire(tx, now).ok) {
      this.notifyInBackground(tx);
      changed = true;
    } else if (isDueToSettle(tx, now) && moves.settleBatch(tx, now).ok) {
      this.notifyInBackground(tx);
      changed = true;
    }
    return this.#confirmRefunds(tx, now) || changed;
  }

  /** The next day's card settlement batch, now: every capture settles (or, if challenged, is cancelled). */
  nextDay(): string[] {
    const now = this.now();
    const changed: string[] = [];
    for (const tx of this.store.all()) {
      if (tx.transaction_status === 'capture' && moves.settleBatch(tx, now).ok) {
        this.notifyInBackground(tx);
        changed.push(tx.order_id);
      }
    }
    return changed;
  }

  /** The bank confirms refunds once their delay has passed: the second refund notification. */
  #confirmRefunds(tx: SimTransaction, now: Date): boolean {
    const delay = this.opts.refundConfirmationDelayMs ?? 60_000;
    const due = tx.refunds.filter((r) => r.bank_confirmed_at === null && r.created_at.getTime() + delay <= now.getTime());
    if (due.length === 0) return false;
    for (const r of due) r.bank_confirmed_at = now;
    this.notifyInBackground(tx);
    return true;
  }

  stop(): void {
    if (this.#sweeper) clearInterval(this.#sweeper);
  }

  /** Finds by order_id or transaction_id, first applying what its time has brought (see tick()). */
  lookup(id: string): SimTransaction | undefined {
    const tx = this.store.find(id);
    if (tx) this.#catchUp(tx, this.now());
    return tx;
  }

  charge(raw: unknown, headers: { override?: string; append?: string }): CoreAnswer {
    const v = validateCharge(raw);
    if (!v.ok) {
      return { httpStatus: 400, body: errorBody('400', 'One or more parameters in the payload is invalid.', { validation_messages: v.messages }) };
    }
    const previous = this.lookup(v.value.order_id);
    // An order_id may be reused only after its transaction expired or was cancelled.
    if (previous && previous.transaction_status !== 'expire' && previous.transaction_status !== 'cancel') {
      return businessError('406', 'The request could not be completed due to a conflict with the current state of the target resource, please try again');
    }
    const token = v.value.card?.token_id ?? null;
    if (v.value.card && (token === null || token.startsWith('sim-card-invalid'))) {
      return businessError('411', 'Token id is missing, invalid, or timed out');
    }
    const override = urlList(headers.override);
    const tx = createTransaction(v.value, {
      now: this.now(),
      publicBaseUrl: this.opts.publicBaseUrl(),
      threeDsMode: this.opts.threeDsMode ?? 'test_tokens_skip',
      overrideUrls: override.length > 0 ? override : null,
      appendUrls: urlList(headers.append),
    });
    this.store.add(tx);
    // Sent by the route with the answer, so that a fault can lose it too (Fault.notify).
    return { ...ok(chargeAnswer(tx), tx), notifyDelayMs: this.opts.chargeNotificationDelayMs ?? 50 };
  }

  status(id: string): CoreAnswer {
    const tx = this.lookup(id);
    return tx ? ok(statusAnswer(tx, this.opts.serverKey)) : notFound();
  }

  cancel(id: string): CoreAnswer {
    return this.#move(id, (tx, now) => moves.cancel(tx, now), '200', 'Success, transaction is canceled');
  }

  expire(id: string): CoreAnswer {
    return this.#move(id, (tx, now) => moves.expire(tx, now), '407', 'Success, transaction has expired');
  }

  approve(id: string): CoreAnswer {
    return this.#move(id, (tx, now) => moves.approve(tx, now), '200', 'Success, transaction is approved');
  }

  deny(id: string): CoreAnswer {
    return this.#move(id, (tx, now) => moves.denyChallenge(tx, now), '200', 'Success, transaction is denied');
  }

  /**
   * POST /v2/capture {transaction_id, gross_amount?}: charges a pre-authorisation (all of it, or
   * the smaller gross_amount given), as Midtrans's clients call it. The answer and notification
   * are a `capture`, which settles with the next day's batch like any card capture.
   */
  capture(raw: unknown): CoreAnswer {
    const body = (raw ?? {}) as Record<string, unknown>;
    const id = typeof body['transaction_id'] === 'string' ? body['transaction_id'] : '';
    const amount = integerOrNull(body['gross_amount']);
    if (id === '' || amount === 'invalid') {
      const messages = [...(id === '' ? ['transaction_id is required'] : []), ...(amount === 'invalid' ? ['gross_amount is not valid'] : [])];
      return { httpStatus: 400, body: errorBody('400', 'One or more parameters in the payload is invalid.', { validation_messages: messages }) };
    }
    return this.#move(id, (tx, now) => moves.captureAuthorization(tx, now, amount), '200', 'Success, Credit Card capture transaction is successful');
  }

  #move(id: string, move: (tx: SimTransaction, now: Date) => Move, statusCode: string, message: string): CoreAnswer {
    const tx = this.lookup(id);
    if (!tx) return notFound();
    if (!move(tx, this.now()).ok) return cannotModify();
    return ok(actionAnswer(tx, statusCode, message), tx);
  }

  refund(id: string, raw: unknown, direct: boolean): CoreAnswer {
    const body = raw ?? {};
    if (typeof body !== 'object' || Array.isArray(body)) {
      return { httpStatus: 400, body: errorBody('400', 'One or more parameters in the payload is invalid.', { validation_messages: ['Request body must be a JSON object'] }) };
    }
    const b = body as Record<string, unknown>;
    const messages: string[] = [];
    const amount = integerOrNull(b['amount']);
    if (amount === 'invalid') messages.push('amount is not valid');
    const key = b['refund_key'];
    if (key !== undefined && key !== null && (typeof key !== 'string' || !REFUND_KEY.test(key))) messages.push('refund_key is not valid');
    const reason = b['reason'];
    if (reason !== undefined && reason !== null && (typeof reason !== 'string' || reason.length > 255)) messages.push('reason is not valid');
    if (messages.length > 0 || amount === 'invalid') {
      return { httpStatus: 400, body: errorBody('400', 'One or more parameters in the payload is invalid.', { validation_messages: messages }) };
    }

    const tx = this.lookup(id);
    if (!tx) return notFound();
    const refundKey = typeof key === 'string' ? key : `midtrans-${newId()}`;
    const earlier = this.#refundKeys.get(refundKey);
    if (earlier) {
      // The same refund retried is answered as before; the key reused for anything else is refused.
      if (earlier.transactionId === tx.transaction_id && earlier.requested === amount) return ok(earlier.answer);
      return businessError('406', 'Duplicate refund ID');
    }
    if (direct && reason === BANK_REJECT_REASON) {
      if (tx.transaction_status !== 'settlement' && tx.transaction_status !== 'partial_refund') return cannotModify();
      return ok({ ...this.#refundAnswerBase(tx), status_code: '202', status_message: 'Refund denied by the bank', refund_amount: '0.00', refund_key: refundKey });
    }
    const outcome = applyRefund(tx, { amount, refundKey, reason: typeof reason === 'string' ? reason : '', direct, shopeePayQuietHours: this.opts.shopeePayQuietHours }, this.now());
    if (!outcome.ok) return businessError(outcome.statusCode, outcome.message);
    const answer: Body = {
      status_code: '200',
      status_message: direct ? 'Success, refund request is approved by the bank' : 'Success, refund request is approved',
      ...this.#refundAnswerBase(tx),
      refund_chargeback_id: outcome.refund.refund_chargeback_id,
      refund_chargeback_uuid: outcome.refund.refund_chargeback_uuid,
      // NOTE: the amount of this refund; status answers and notifications carry the cumulative one.
      refund_amount: money(outcome.refund.refund_amount),
      refund_key: refundKey,
    };
    this.#refundKeys.set(refundKey, { transactionId: tx.transaction_id, requested: amount, answer });
    return ok(answer, tx);
  }

  #refundAnswerBase(tx: SimTransaction): Body {
    return {
      transaction_id: tx.transaction_id,
      order_id: tx.order_id,
      merchant_id: MERCHANT_ID,
      gross_amount: money(tx.gross_amount),
      currency: tx.currency,
      payment_type: tx.payment_type,
      transaction_time: formatGmt7(tx.transaction_time),
      transaction_status: tx.transaction_status,
    };
  }

  /** The development command: move the record, then notify and wait for the first attempt. */
  async act(orderId: string, action: CommandAction | string, opts: ActionOptions = {}): Promise<ActionResult> {
    if (!(COMMAND_ACTIONS as readonly string[]).includes(action)) {
      throw new SimulatorError(400, `unknown action ${action}; expected one of ${COMMAND_ACTIONS.join(', ')}`);
    }
    const tx = this.lookup(orderId);
    if (!tx) throw new SimulatorError(404, `no transaction for order ${orderId}`);
    const now = this.now();
    let move: Move;
    switch (action as CommandAction) {
      case 'settle':
        move = moves.settle(tx, now);
        if (move.ok && opts.customerFee) imposeCustomerFee(tx, opts.customerFee);
        break;
      case 'capture': {
        const fraud = opts.fraudStatus ?? 'accept';
        if (fraud !== 'accept' && fraud !== 'challenge') throw new SimulatorError(400, 'fraud_status must be accept or challenge');
        move = moves.capture(tx, now, fraud);
        break;
      }
      case 'deny':
        move = moves.deny(tx, now);
        break;
      case 'cancel':
        move = moves.cancel(tx, now);
        break;
      case 'expire':
        move = moves.expire(tx, now);
        break;
      case 'pending':
        move = tx.transaction_status === 'pending' ? { ok: true } : { ok: false, reason: `transaction is ${tx.transaction_status}, not pending` };
        break;
      case 'refund': {
        const outcome = applyRefund(tx, { amount: commandAmount(opts), refundKey: `sim-${newId()}`, reason: 'simulator', direct: false, shopeePayQuietHours: this.opts.shopeePayQuietHours }, now);
        move = outcome.ok ? { ok: true } : { ok: false, reason: outcome.message };
        break;
      }
      case 'chargeback':
      case 'partial_chargeback': {
        const partial = action === 'partial_chargeback';
        const amount = commandAmount(opts);
        if (partial && amount === null) throw new SimulatorError(400, 'a partial chargeback needs {"amount": N}');
        move = applyChargeback(tx, { amount, partial, reason: opts.reason }, now);
        break;
      }
    }
    if (!move.ok) throw new SimulatorError(409, move.reason);
    if (opts.notify === false) return { order_id: tx.order_id, transaction_status: tx.transaction_status, notification: null };
    const [first] = await this.notifyNow(tx);
    return { order_id: tx.order_id, transaction_status: tx.transaction_status, notification: first! };
  }

  /** The customer's answer on the 3-D Secure page; notifies and waits for the first attempt. */
  async authenticate(id: string, passed: boolean): Promise<ActionResult> {
    const tx = this.lookup(id);
    if (!tx || tx.card === null) throw new SimulatorError(404, `no card transaction for ${id}`);
    const move = moves.authenticate(tx, this.now(), passed);
    if (!move.ok) throw new SimulatorError(409, move.reason);
    const [first] = await this.notifyNow(tx);
    return { order_id: tx.order_id, transaction_status: tx.transaction_status, notification: first! };
  }

  notificationUrls(tx: SimTransaction): string[] {
    const main = tx.override_notification_urls ?? [this.opts.notificationUrl()];
    return [...main, ...tx.append_notification_urls];
  }

  notifyNow(tx: SimTransaction): Promise<DeliveryOutcome[]> {
    return this.notifier.deliver(tx.transaction_id, this.notificationUrls(tx), notificationPayload(tx, this.opts.serverKey));
  }

  /** The payload is taken now, so a later change does not leak into this notification. */
  notifyInBackground(tx: SimTransaction, delayMs = 0): void {
    this.notifier.deliverLater(tx.transaction_id, this.notificationUrls(tx), notificationPayload(tx, this.opts.serverKey), delayMs);
  }

  recordRequest(record: RequestRecord): void {
    this.requests.push(record);
    // A development server runs for days; the log is for tests and debugging, not an archive.
    if (this.requests.length > LOG_LIMIT) this.requests.splice(0, this.requests.length - LOG_LIMIT);
  }

  reset(): void {
    this.store.clear();
    this.idempotency.clear();
    this.#refundKeys.clear();
    this.faults.set({ mode: 'none' });
    this.requests.length = 0;
    this.notifier.log.length = 0;
    this.notifier.clearHolds();
  }
}

/** The amount a command's body gave: integer IDR, or null when absent. */
function commandAmount(opts: ActionOptions): number | null {
  const amount = integerOrNull(opts.amount);
  if (amount === 'invalid') throw new SimulatorError(400, 'amount must be a positive integer');
  return amount;
}

/** Automatic Fee Imposition (docs/gateway.md): the customer paid `fee` on top of the order amount. */
function imposeCustomerFee(tx: SimTransaction, fee: number): void {
  const original = tx.gross_amount;
  tx.gross_amount = original + fee;
  tx.metadata = {
    ...(tx.metadata ?? {}),
    extra_info: { gross_amount_info: { original_amount: money(original), gross_amount: money(tx.gross_amount), customer_imposed_payment_fee: money(fee) } },
  };
}
