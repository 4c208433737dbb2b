import type { Body } from './payload.js';
import { NotificationHold, type HeldNotification, type ReleaseRequest } from './held-notifications.js';
import type { DeliveryOutcome } from './types.js';

/** Midtrans' sender gives up after 15 s. */
const SEND_TIMEOUT_MS = 15_000;
const MAX_REDIRECTS = 5;
const LOG_LIMIT = 1000;
const MINUTE = 60_000;
/** Midtrans retries about 2, 10, 30, 90 and 210 minutes after each failure. */
export const MIDTRANS_RETRY_DELAYS_MS = [2 * MINUTE, 10 * MINUTE, 30 * MINUTE, 90 * MINUTE, 210 * MINUTE];

/** Retries Midtrans allows after a given answer (docs/gateway.md); null = a network failure. */
function retriesAfter(httpStatus: number | null): number {
  if (httpStatus === null) return 5;
  if (httpStatus >= 200 && httpStatus < 300) return 0;
  if (httpStatus === 500) return 1;
  if (httpStatus === 503) return 4;
  if (httpStatus === 400 || httpStatus === 404) return 2;
  if (httpStatus >= 300 && httpStatus < 400) return 0;
  return 5;
}

export interface DeliveryRecord extends DeliveryOutcome {
  order_id: string;
  transaction_status: unknown;
  status_code: unknown;
  attempt: number;
  at: Date;
  payload: Body;
}

export interface NotifierOptions {
  fetch: typeof fetch;
  retryDelaysMs: number[];
  /** Each retry waits a random time up to its delay ("e.g. first retry anywhere up to ~2 min"). */
  jitter: boolean;
  now: () => Date;
}

/**
 * Posts notifications like Midtrans: JSON, User-Agent Veritrans, retried in the background
 * per answer code, at most as many times as there are retry delays.
 */
export class Notifier {
  readonly log: DeliveryRecord[] = [];
  readonly #opts: NotifierOptions;
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #abort = new AbortController();
  /** Tail of each transaction's first attempts, so its notifications leave in the order they happened. */
  readonly #queues = new Map<string, Promise<unknown>>();
  readonly #scheduled = new Map<string, { timer: NodeJS.Timeout; send: () => void }[]>();
  /** The proxy's hold (held-notifications.ts): notifications kept back, to be released in any order. */
  readonly #hold = new NotificationHold();

  constructor(opts: NotifierOptions) {
    this.#opts = opts;
  }

  /** Resolves when the first attempt to every URL has finished; `key` orders one transaction's notifications. */
  deliver(key: string, urls: string[], payload: Body): Promise<DeliveryOutcome[]> {
    this.#flush(key);
    return this.#enqueue(key, urls, payload);
  }

  /** Like deliver(), without waiting; used where Midtrans notifies on its own time. */
  deliverLater(key: string, urls: string[], payload: Body, delayMs: number): void {
    if (this.closed) return;
    const entry = {
      timer: setTimeout(() => {
        this.#timers.delete(entry.timer);
        this.#unschedule(key, entry);
        entry.send();
      }, delayMs),
      send: () => void this.#enqueue(key, urls, payload),
    };
    entry.timer.unref();
    this.#timers.add(entry.timer);
    this.#scheduled.set(key, [...(this.#scheduled.get(key) ?? []), entry]);
  }

  /** Holds, from now on, the notifications of one order (or of all when null). */
  hold(orderId: string | null): void {
    this.#hold.hold(orderId);
  }

  held(): HeldNotification[] {
    return this.#hold.list();
  }

  describeHolds(): ReturnType<NotificationHold['describe']> {
    return this.#hold.describe();
  }

  /**
   * Sends (or drops) held notifications in the order asked, one after the other: each leaves
   * once the one before has had its first attempt. Returns what was released with the first
   * attempt's outcome per URL, or a message when the request names what is not held.
   */
  async release(request: ReleaseRequest): Promise<(Omit<HeldNotification, 'urls' | 'payload'> & { outcomes: DeliveryOutcome[] })[] | string> {
    const chosen = this.#hold.takeOut(request);
    if (typeof chosen === 'string') return chosen;
    const released = [];
    for (const h of chosen) {
      const outcomes = request.drop ? [] : await this.#send(h.order_id, h.urls, h.payload);
      released.push({ id: h.id, order_id: h.order_id, transaction_status: h.transaction_status, held_at: h.held_at, outcomes });
    }
    return released;
  }

  /** Forgets every hold and what it kept (the simulator's reset). */
  clearHolds(): void {
    this.#hold.clear();
  }

  close(): void {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#scheduled.clear();
    this.#abort.abort();
  }

  get closed(): boolean {
    return this.#abort.signal.aborted;
  }

  /** A notification still waiting for its delay goes out now, ahead of the newer one. */
  #flush(key: string): void {
    const entries = this.#scheduled.get(key) ?? [];
    this.#scheduled.delete(key);
    for (const entry of entries) {
      clearTimeout(entry.timer);
      this.#timers.delete(entry.timer);
      entry.send();
    }
  }

  #unschedule(key: string, entry: { timer: NodeJS.Timeout }): void {
    const rest = (this.#scheduled.get(key) ?? []).filter((e) => e !== entry);
    if (rest.length > 0) this.#scheduled.set(key, rest);
    else this.#scheduled.delete(key);
  }

  #enqueue(key: string, urls: string[], payload: Body): Promise<DeliveryOutcome[]> {
    if (this.#hold.take(urls, payload, this.#opts.now())) return Promise.resolve(urls.map((url) => ({ url, http_status: null, error: null, held: true as const })));
    return this.#send(key, urls, payload);
  }

  #send(key: string, urls: string[], payload: Body): Promise<DeliveryOutcome[]> {
    const previous = this.#queues.get(key) ?? Promise.resolve();
    const run = previous.then(() => Promise.all(urls.map((url) => this.#attempt(url, payload, 0))));
    const tail = run.catch(() => undefined);
    this.#queues.set(key, tail);
    void tail.then(() => {
      if (this.#queues.get(key) === tail) this.#queues.delete(key);
    });
    return run;
  }

  #schedule(ms: number, fn: () => void): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      fn();
    }, ms);
    timer.unref();
    this.#timers.add(timer);
  }

  async #attempt(url: string, payload: Body, attempt: number): Promise<DeliveryOutcome> {
    const outcome = await this.#post(url, payload);
    if (this.log.length >= LOG_LIMIT) this.log.splice(0, this.log.length - LOG_LIMIT + 1);
    this.log.push({
      ...outcome,
      order_id: String(payload['order_id']),
      transaction_status: payload['transaction_status'],
      status_code: payload['status_code'],
      attempt,
      at: this.#opts.now(),
      payload,
    });
    const delays = this.#opts.retryDelaysMs;
    const allowed = Math.min(retriesAfter(outcome.http_status), delays.length);
    if (attempt < allowed) {
      const delay = delays[attempt] ?? 0;
      const wait = this.#opts.jitter ? Math.ceil(Math.random() * delay) : delay;
      this.#schedule(wait, () => void this.#attempt(url, payload, attempt + 1));
    }
    return outcome;
  }

  async #post(url: string, payload: Body): Promise<DeliveryOutcome> {
    if (url === '') return { url, http_status: null, error: 'no notification URL configured' };
    let target = url;
    try {
      for (let hop = 0; ; hop++) {
        const res = await this.#opts.fetch(target, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'User-Agent': 'Veritrans' },
          body: JSON.stringify(payload),
          // 301/302/303 are not followed by Midtrans; 307/308 are, with the same POST.
          redirect: 'manual',
          signal: AbortSignal.any([AbortSignal.timeout(SEND_TIMEOUT_MS), this.#abort.signal]),
        });
        await res.arrayBuffer().catch(() => undefined);
        const location = res.headers.get('location');
        if ((res.status === 307 || res.status === 308) && location && hop < MAX_REDIRECTS) {
          target = new URL(location, target).toString();
          continue;
        }
        return { url, http_status: res.status, error: null };
      }
    } catch (e) {
      const err = e as { name?: string; message?: string; cause?: { code?: string } };
      const detail = err.name === 'TimeoutError' ? 'timed out' : (err.cause?.code ?? err.message ?? String(e));
      return { url, http_status: null, error: detail };
    }
  }
}
