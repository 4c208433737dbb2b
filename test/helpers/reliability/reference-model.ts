/*
 * What the billing service must end up with after a set of gateway notifications, computed the
 * simplest possible way: from the DISTINCT notifications of each order, ignoring the order in
 * which they arrived and how often. Amounts are whole rupiah (numbers), formatted at the end.
 *
 * The rules (docs/billing.md; docs/webhook.md) read literally:
 * - money arrived (settlement, or capture with fraud_status accept) wins over everything: the
 *   payment is settled (or refunded by the refunds listed), its invoice paid, its subscription
 *   active (canceled once the refunds add up to the whole payment), a top-up `success` and the
 *   wallet credited once;
 * - otherwise a failure (deny/cancel/expire/failure) makes the payment failed/canceled/expired,
 *   the subscription past_due and a top-up failed/expired;
 * - otherwise (pending, challenged capture) nothing moves.
 * Generators give each order at most one kind of failure, so "the first failure wins" never
 * depends on arrival order.
 */

export type OrderKind = 'subscription' | 'topup';

export interface Notice {
  orderId: string;
  transactionStatus: 'pending' | 'settlement' | 'capture' | 'deny' | 'cancel' | 'expire' | 'failure' | 'refund' | 'partial_refund';
  fraudStatus?: 'accept' | 'challenge' | 'deny';
  /** Whole rupiah. */
  grossAmount: number;
  /** Refund notifications: every refund so far (the gateway lists them all, cumulatively). */
  refunds?: { key: string; amount: number }[];
}

export interface Order {
  kind: OrderKind;
  orderId: string;
  /** Index of the owning user in the scenario. */
  user: number;
  amount: number;
}

export interface ExpectedOrder {
  orderId: string;
  kind: OrderKind;
  /** Payment or top-up status. */
  status: string;
  refundedAmount: string;
  /** Subscription orders only. */
  subscriptionStatus?: string;
  invoiceStatus?: string;
  invoiceRefunded?: string;
}

export interface ExpectedState {
  orders: Map<string, ExpectedOrder>;
  /** Wallet balance per user index (users with no credited top-up hold 0.00 or no wallet). */
  wallets: Map<number, string>;
  /** Ledger entries per user index. */
  walletEntries: Map<number, number>;
  /** `payment_succeeded` notifications per user index. */
  paymentSucceeded: Map<number, number>;
  /** `topup_succeeded` notifications per user index. */
  topupSucceeded: Map<number, number>;
  /** How many distinct notifications (deduplication keys) there are: each is processed once. */
  distinct: number;
}

export const amountString = (n: number): string => `${n}.00`;

/** The webhook's deduplication key (docs/webhook.md). */
export function noticeKey(n: Notice): string {
  const parts: string[] = [n.orderId, n.transactionStatus];
  if (n.transactionStatus === 'capture') parts.push(n.fraudStatus ?? '');
  if (n.transactionStatus === 'refund' || n.transactionStatus === 'partial_refund') parts.push(amountString(refundTotal(n)));
  return parts.join('|');
}

export function refundTotal(n: Notice): number {
  return (n.refunds ?? []).reduce((sum, r) => sum + r.amount, 0);
}

const isSuccess = (n: Notice) => n.transactionStatus === 'settlement' || (n.transactionStatus === 'capture' && n.fraudStatus === 'accept');
const FAILURES = ['deny', 'cancel', 'expire', 'failure'];

const PAYMENT_FAILURE: Record<string, string> = { deny: 'failed', failure: 'failed', cancel: 'canceled', expire: 'expired' };
const TOPUP_FAILURE: Record<string, string> = { deny: 'failed', failure: 'failed', cancel: 'failed', expire: 'expired' };

/** The expected outcome of one order from its distinct notifications. */
export function expectOrder(order: Order, notices: Notice[]): ExpectedOrder {
  const success = notices.some(isSuccess);
  const failures = [...new Set(notices.filter((n) => FAILURES.includes(n.transactionStatus)).map((n) => n.transactionStatus))];
  if (failures.length > 1) throw new Error(`model: ${order.orderId} has more than one kind of failure (${failures.join(', ')}); its outcome would depend on arrival order`);
  const failure = failures[0];
  // Each refund is counted once by its key, whichever notifications listed it.
  const refunds = new Map<string, number>();
  for (const n of notices) for (const r of n.refunds ?? []) refunds.set(r.key, r.amount);
  const refunded = [...refunds.values()].reduce((a, b) => a + b, 0);

  if (order.kind === 'topup') {
    const status = success ? 'success' : failure ? TOPUP_FAILURE[failure] : 'pending';
    return { orderId: order.orderId, kind: 'topup', status, refundedAmount: '0.00' };
  }
  let status = 'pending';
  if (success) status = refunded === 0 ? 'settled' : refunded >= order.amount ? 'refunded' : 'partially_refunded';
  else if (failure) status = PAYMENT_FAILURE[failure];
  return {
    orderId: order.orderId,
    kind: 'subscription',
    status,
    refundedAmount: amountString(success ? refunded : 0),
    // A full refund at the gateway ends the time the payment paid for (refund-rules.ts).
    subscriptionStatus: success ? (refunded >= order.amount ? 'canceled' : 'active') : failure ? 'past_due' : 'pending',
    invoiceStatus: success ? 'paid' : 'open',
    invoiceRefunded: amountString(success ? refunded : 0),
  };
}

/** The whole expected state from every notification sent (duplicates and all). */
export function expectState(orders: Order[], sent: Notice[]): ExpectedState {
  const distinct = new Map<string, Notice>();
  for (const n of sent) distinct.set(noticeKey(n), n);
  const byOrder = new Map<string, Notice[]>();
  for (const n of distinct.values()) byOrder.set(n.orderId, [...(byOrder.get(n.orderId) ?? []), n]);

  const state: ExpectedState = {
    orders: new Map(),
    wallets: new Map(),
    walletEntries: new Map(),
    paymentSucceeded: new Map(),
    topupSucceeded: new Map(),
    distinct: distinct.size,
  };
  const bump = (m: Map<number, number>, user: number, by: number) => m.set(user, (m.get(user) ?? 0) + by);
  const balances = new Map<number, number>();
  for (const order of orders) {
    const expected = expectOrder(order, byOrder.get(order.orderId) ?? []);
    state.orders.set(order.orderId, expected);
    bump(state.paymentSucceeded, order.user, 0);
    bump(state.topupSucceeded, order.user, 0);
    bump(state.walletEntries, order.user, 0);
    bump(balances, order.user, 0);
    if (order.kind === 'subscription' && expected.invoiceStatus === 'paid') bump(state.paymentSucceeded, order.user, 1);
    if (order.kind === 'topup' && expected.status === 'success') {
      bump(state.topupSucceeded, order.user, 1);
      bump(state.walletEntries, order.user, 1);
      bump(balances, order.user, order.amount);
    }
  }
  for (const [user, balance] of balances) state.wallets.set(user, amountString(balance));
  return state;
}
