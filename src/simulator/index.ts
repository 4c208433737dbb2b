import type Koa from 'koa';
import { SimulatorCore, type RequestRecord, type SimulatorOptions } from './core.js';
import { parseFault } from './faults.js';
import type { DeliveryRecord, Notifier } from './notifier.js';
import type { HeldNotification, ReleaseRequest } from './held-notifications.js';
import { buildMiddleware, HeldRequests } from './routes.js';
import type { ActionOptions, ActionResult, CommandAction, Fault, SimTransaction } from './types.js';

export { BANK_REJECT_REASON, type SimulatorOptions, type RequestRecord } from './core.js';
export { THREE_DS_MODES, type ThreeDsMode } from './charge.js';
export { MIDTRANS_RETRY_DELAYS_MS } from './notifier.js';
export { PREFIX as SIMULATOR_PREFIX } from './routes.js';
export type { DeliveryRecord } from './notifier.js';
export type { HeldNotification, ReleaseOrder, ReleaseRequest } from './held-notifications.js';
export * from './types.js';

export interface Simulator {
  /** Serves everything under /_simulator and passes every other request on. Mount it before any body parser. */
  middleware: Koa.Middleware;
  /** The command route, in-process: move the transaction and notify (first attempt awaited). */
  act(orderId: string, action: CommandAction, opts?: ActionOptions): Promise<ActionResult>;
  setFault(fault: Fault): void;
  /** The customer answers the 3-D Secure page (as POST /_simulator/3ds/:id does). */
  authenticate(id: string, passed: boolean): Promise<ActionResult>;
  /** Applies what is due on the simulator's clock now (expiry, card settlement, refund confirmation); the order ids changed. */
  tick(): string[];
  /** Runs the next day's card settlement batch now; the order ids changed. */
  nextDay(): string[];
  /** The stored record (latest for an order_id), or undefined. */
  transaction(id: string): SimTransaction | undefined;
  /** Every stored transaction, oldest first (tests look for orders they do not know the id of). */
  transactions(): readonly SimTransaction[];
  /** Core API calls received, faulted ones included. */
  requests(): readonly RequestRecord[];
  /** Every notification attempt, retries included. */
  deliveries(): readonly DeliveryRecord[];
  /** The notification proxy: hold one order's notifications (or all, with null) until released. */
  holdNotifications(orderId: string | null): void;
  /** What is held, oldest first. */
  heldNotifications(): readonly HeldNotification[];
  /** Sends (or drops) held notifications in the order asked (POST /_simulator/notifications/release). */
  releaseNotifications(request: Partial<ReleaseRequest>): ReturnType<Notifier['release']>;
  /** Forget all transactions, keys, faults and logs. */
  reset(): void;
  /** Stop the clock sweeper, cancel pending notification retries and release requests held by the timeout fault. */
  close(): void;
}

/** A Midtrans Core API stand-in for development and tests (docs/gateway.md). */
export function createSimulator(opts: SimulatorOptions): Simulator {
  const core = new SimulatorCore(opts);
  const held = new HeldRequests();
  return {
    middleware: buildMiddleware(core, held),
    act: (orderId, action, actOpts) => core.act(orderId, action, actOpts),
    authenticate: (id, passed) => core.authenticate(id, passed),
    tick: () => core.tick(),
    nextDay: () => core.nextDay(),
    setFault: (fault) => {
      const checked = parseFault(fault);
      if (typeof checked === 'string') throw new TypeError(checked);
      core.faults.set(checked);
    },
    transaction: (id) => core.lookup(id),
    transactions: () => core.store.all(),
    requests: () => core.requests,
    deliveries: () => core.notifier.log,
    holdNotifications: (orderId) => core.notifier.hold(orderId),
    heldNotifications: () => core.notifier.held(),
    releaseNotifications: (request) => core.notifier.release({ orderId: null, order: 'oldest_first', ids: null, drop: false, keepHolding: false, ...request }),
    reset: () => core.reset(),
    close: () => {
      core.stop();
      core.notifier.close();
      held.releaseAll();
    },
  };
}
