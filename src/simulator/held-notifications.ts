import type { Body } from './payload.js';

/*
 * The notification proxy's hold (docs/gateway.md, "Using the Midtrans sandbox, and driving the simulator"): Midtrans delivers notifications late,
 * twice and out of order (a settlement behind the reversal that followed it), and a merchant
 * must end in the same state whatever the order. A test, or a developer, holds what the
 * simulator would send (for one order or for all), then releases it in the order it chooses:
 * newest first, oldest first, or an explicit list of the held ids. Released notifications go
 * out one after the other, each with Midtrans' retries, as if they had just been sent.
 */

export interface HeldNotification {
  /** Stable within one simulator run; what `ids` names on release. */
  id: number;
  order_id: string;
  transaction_status: unknown;
  held_at: Date;
  urls: string[];
  payload: Body;
}

export type ReleaseOrder = 'newest_first' | 'oldest_first';
const RELEASE_ORDERS: readonly ReleaseOrder[] = ['newest_first', 'oldest_first'];

export interface ReleaseRequest {
  /** Only this order's held notifications (default: all held). */
  orderId: string | null;
  /** The order they leave in (default oldest_first); ignored when `ids` is given. */
  order: ReleaseOrder;
  /** Exactly these held notifications, in this order. */
  ids: number[] | null;
  /** Discard them instead of sending: notifications lost for good. */
  drop: boolean;
  /** Keep holding new notifications afterwards (default: the hold ends with the release of the order's, or of all). */
  keepHolding: boolean;
}

/** What `POST /_simulator/notifications/hold` takes: `{}` holds every order's, `{"order_id"}` one order's. */
export function parseHold(raw: unknown): { orderId: string | null } | string {
  if (raw === null) return { orderId: null };
  if (typeof raw !== 'object' || Array.isArray(raw)) return 'body must be a JSON object';
  const orderId = (raw as Record<string, unknown>)['order_id'];
  if (orderId === undefined || orderId === null) return { orderId: null };
  if (typeof orderId !== 'string' || orderId === '') return 'order_id must be a non-empty string';
  return { orderId };
}

/** What `POST /_simulator/notifications/release` takes. */
export function parseRelease(raw: unknown): ReleaseRequest | string {
  const body = raw === null ? {} : raw;
  if (typeof body !== 'object' || Array.isArray(body)) return 'body must be a JSON object';
  const { order_id: orderId, order, ids, drop, keep_holding: keepHolding } = body as Record<string, unknown>;
  if (orderId !== undefined && orderId !== null && (typeof orderId !== 'string' || orderId === '')) return 'order_id must be a non-empty string';
  if (order !== undefined && order !== null && !(RELEASE_ORDERS as readonly unknown[]).includes(order)) return `order must be one of ${RELEASE_ORDERS.join(', ')}`;
  if (ids !== undefined && ids !== null && (!Array.isArray(ids) || ids.length === 0 || ids.some((i) => !Number.isSafeInteger(i)))) return 'ids must be a non-empty list of held notification ids';
  if (drop !== undefined && drop !== null && typeof drop !== 'boolean') return 'drop must be true or false';
  if (keepHolding !== undefined && keepHolding !== null && typeof keepHolding !== 'boolean') return 'keep_holding must be true or false';
  return {
    orderId: (orderId as string | undefined) ?? null,
    order: (order as ReleaseOrder | undefined) ?? 'oldest_first',
    ids: (ids as number[] | undefined) ?? null,
    drop: drop === true,
    keepHolding: keepHolding === true,
  };
}

/** The hold itself: which orders are held, and what is waiting. */
export class NotificationHold {
  #all = false;
  readonly #orders = new Set<string>();
  readonly #held: HeldNotification[] = [];
  #nextId = 1;

  hold(orderId: string | null): void {
    if (orderId === null) this.#all = true;
    else this.#orders.add(orderId);
  }

  /** Takes the notification into the hold when its order is held; false when it should go out now. */
  take(urls: string[], payload: Body, now: Date): HeldNotification | null {
    const orderId = String(payload['order_id']);
    if (!this.#all && !this.#orders.has(orderId)) return null;
    const entry: HeldNotification = { id: this.#nextId++, order_id: orderId, transaction_status: payload['transaction_status'], held_at: now, urls, payload };
    this.#held.push(entry);
    return entry;
  }

  list(): HeldNotification[] {
    return [...this.#held];
  }

  describe(): { all: boolean; order_ids: string[]; held: number } {
    return { all: this.#all, order_ids: [...this.#orders], held: this.#held.length };
  }

  /** Removes and returns what the request names, in the order to send; a message when it names what is not held. */
  takeOut(request: ReleaseRequest): HeldNotification[] | string {
    let chosen: HeldNotification[];
    if (request.ids) {
      const missing = request.ids.filter((id) => !this.#held.some((h) => h.id === id));
      if (missing.length > 0) return `not held: ${missing.join(', ')}`;
      chosen = request.ids.map((id) => this.#held.find((h) => h.id === id)!);
    } else {
      chosen = this.#held.filter((h) => request.orderId === null || h.order_id === request.orderId);
      if (request.order === 'newest_first') chosen.reverse();
    }
    for (const h of chosen) this.#held.splice(this.#held.indexOf(h), 1);
    // The hold ends with its release, unless asked to go on: on that order's, or on all once nothing is left.
    if (!request.keepHolding) {
      if (request.orderId !== null && !request.ids) this.#orders.delete(request.orderId);
      else if (this.#held.length === 0) this.clear();
    }
    return chosen;
  }

  clear(): void {
    this.#all = false;
    this.#orders.clear();
    this.#held.length = 0;
  }
}
