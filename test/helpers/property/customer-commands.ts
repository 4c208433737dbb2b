import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Payment } from '../../../src/db/entities/payment.js';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { Topup } from '../../../src/db/entities/topup.js';
import { User } from '../../../src/db/entities/user.js';
import { LIVE_SUBSCRIPTION_STATUSES } from '../../../src/domain/states/subscription-states.js';
import { adjustWallet } from '../../../src/services/wallet/adjust-wallet.js';
import { signedNotification } from '../factories.js';
import { heldNotifications, holdNotifications, releaseNotifications } from '../simulator.js';
import { CreditNote } from '../../../src/db/entities/credit-note.js';
import { Invoice } from '../../../src/db/entities/invoice.js';
import { Wallet, WalletTransaction } from '../../../src/db/entities/wallet.js';
import { MidtransClient } from '../../../src/gateway/midtrans-client.js';
import { dunningSchedule } from '../../../src/services/billing/dunning-schedule.js';
import { runBilling } from '../../../src/services/billing/run-billing.js';
import type { SimTransaction } from '../../../src/simulator/types.js';
import { api, armFault, billingRun, calledSince, checkMoneyRules, disarmFaults, gatewayAction, gatewayMark, gatewayRecord, markHeard, paymentsSync, PLAN_SLUGS, PROPERTY_CODES, type Customer } from './customer-world.js';
import { cliActor } from '../../../src/services/audit/actor.js';
import { switchMethodCommand } from './held-codes-and-switches.js';
import { exportCoretax } from '../../../src/services/tax/export-coretax.js';
import { localDate, parseTaxMonth } from '../../../src/services/tax/tax-month.js';

/*
 * The customer's moves for fast-check's model-based testing. Each command is a small class
 * whose parameters are drawn by fast-check and printed by toString(), so a counterexample reads
 * as the list of moves that found it (e.g. `subscribe(p-cheap, bank_transfer), pay(#0, settle),
 * changePlan(p-dear, now), changePlan(p-cheap, now)`). Commands carry no model of the service:
 * the service answers what it answers (a 4xx is a legitimate refusal), and after every move
 * checkMoneyRules judges the stored state. Orders and subscriptions are picked by index
 * (modulo what exists), so every drawn command applies to any state.
 */

/** What fast-check carries between commands: nothing the checks need, the service is the state. */
export type Model = Record<string, never>;
type Cmd = fc.AsyncCommand<Model, Customer>;

/** How the customer pays: the gateway's kinds, a card that needs 3-D Secure (pending), and the wallet. */
export const PAYMENT_KINDS = ['bank_transfer', 'qris', 'gopay', 'card', 'card_3ds', 'wallet', 'permata', 'shopeepay'] as const;
export type PaymentKind = (typeof PAYMENT_KINDS)[number];

/** `permata` is a Permata virtual account: the one bank transfer the gateway can reverse after settlement. */
function paymentBody(kind: PaymentKind, n: number, topup = false): Record<string, unknown> {
  if (kind === 'card') return { payment_type: 'credit_card', token: `sim-card-accept-${n}` };
  if (kind === 'card_3ds') return { payment_type: 'credit_card', token: `tok-3ds-${n}` };
  if (kind === 'permata') return topup ? { payment_type: 'bank_transfer', bank: 'permata' } : { payment_type: 'bank_transfer', metadata: { bank: 'permata' } };
  return { payment_type: kind };
}

async function remember(c: Customer, res: { status: number; body: any }): Promise<void> {
  const orderId = res.body?.payment?.order_id ?? res.body?.order_id;
  if (res.status < 300 && typeof orderId === 'string' && !c.orders.includes(orderId)) c.orders.push(orderId);
}

async function liveSubscription(c: Customer): Promise<Subscription | null> {
  const em = c.world.server.running.billing.orm.em.fork();
  return em.findOne(Subscription, { user: c.user.id, status: { $in: [...LIVE_SUBSCRIPTION_STATUSES] } });
}

async function judge(c: Customer, step: string): Promise<void> {
  const problems = await checkMoneyRules(c);
  if (problems.length > 0) throw new Error(`after ${step}:\n- ${problems.join('\n- ')}`);
}

abstract class Step implements Cmd {
  check(): boolean {
    return true;
  }
  /** Does the move; false when there was nothing to do it to (then nothing changed and nothing is checked). */
  abstract act(c: Customer): Promise<boolean | void>;
  abstract toString(): string;
  async run(_m: Model, c: Customer): Promise<void> {
    c.trace.push(this.toString());
    if ((await this.act(c)) === false) return;
    await judge(c, this.toString());
  }
}

export class Subscribe extends Step {
  constructor(
    readonly plan: string,
    readonly kind: PaymentKind,
    readonly code: string | null = null,
    readonly quantity: number | null = null,
  ) {
    super();
  }
  async act(c: Customer) {
    const extra = { ...(this.code !== null ? { promotion_code: this.code } : {}), ...(this.quantity !== null ? { quantity: this.quantity } : {}) };
    await remember(c, await api(c, 'POST', '/subscriptions/', { plan_id: this.plan, ...paymentBody(this.kind, c.orders.length), ...extra }));
  }
  toString() {
    return `subscribe(${[this.plan, this.kind, ...(this.code !== null ? [`code ${this.code}`] : []), ...(this.quantity !== null ? [`× ${this.quantity}`] : [])].join(', ')})`;
  }
}

/** The customer changes the seats of a per-unit subscription: more now, fewer now or at the period's end. */
export class ChangeQuantity extends Step {
  constructor(readonly quantity: number, readonly immediate: boolean) {
    super();
  }
  async act(c: Customer) {
    const sub = await liveSubscription(c);
    if (!sub) return false;
    await remember(c, await api(c, 'POST', `/subscriptions/${sub.id}/change-quantity/`, { quantity: this.quantity, immediate: this.immediate }));
  }
  toString() {
    return `changeQuantity(${this.quantity}, ${this.immediate ? 'now' : 'at period end'})`;
  }
}

/**
 * The customer's backend reports usage (issue 42): a batch of calls and gigabytes, timestamped
 * some minutes back (late events of a window not yet invoiced still count; older ones may find
 * it closed), a few minutes ahead (within the 5 minutes allowed, or beyond them), sometimes with
 * an event sent before again (a retry: counted once) or another event under an id already used
 * (409: the whole batch is refused). Acknowledged events are remembered for rule 12.
 */
export class SendUsage extends Step {
  constructor(readonly calls: number, readonly gb: readonly string[], readonly minutesBack: number, readonly twist: 'none' | 'retry' | 'conflict' | 'unix') {
    super();
  }
  async act(c: Customer) {
    const at = new Date(c.world.clock.now().getTime() - this.minutesBack * 60_000);
    const n = c.events.length;
    const id = (k: number) => `${c.user.id.slice(0, 8)}-${n}-${k}`;
    const events: Record<string, unknown>[] = [
      ...Array.from({ length: this.calls }, (_, k) => ({ transaction_id: id(k), customer: c.user.username, code: 'p_calls', timestamp: at.toISOString() })),
      ...this.gb.map((gb, k) => ({ transaction_id: id(100 + k), customer: c.user.id, code: 'p_gb', timestamp: at.toISOString(), properties: { gb } })),
    ];
    if (this.twist === 'unix') for (const e of events) e.timestamp = Math.floor(at.getTime() / 1000);
    const earlier = c.events[c.events.length - 1];
    if (earlier && this.twist === 'retry') events.push({ transaction_id: earlier.transactionId, customer: c.user.username, code: earlier.code, timestamp: earlier.timestamp.toISOString(), ...(earlier.properties ? { properties: earlier.properties } : {}) });
    if (earlier && this.twist === 'conflict') events.push({ transaction_id: earlier.transactionId, customer: c.user.username, code: 'p_gb', timestamp: at.toISOString(), properties: { gb: '999' } });
    if (events.length === 0) return false;
    const res = await c.world.server.api('POST', '/events/batch/', { headers: { authorization: `Bearer ${c.world.eventsKey}` }, body: { events } });
    if (res.status >= 500) throw new Error(`POST /events/batch/ answered ${res.status}: ${res.text}`);
    c.trace.push(`  events: ${res.status}${res.status === 202 ? ` ${JSON.stringify(res.body)}` : ` ${(res.body as { code?: string })?.code ?? ''}`}`);
    if (res.status !== 202) return;
    for (const e of events) {
      if (c.events.some((x) => x.transactionId === e.transaction_id)) continue;
      const timestamp = typeof e.timestamp === 'number' ? new Date(e.timestamp * 1000) : new Date(String(e.timestamp));
      c.events.push({ transactionId: String(e.transaction_id), code: String(e.code), timestamp, properties: e.properties as Record<string, unknown> | undefined });
    }
  }
  toString() {
    return `sendUsage(${this.calls} call(s), ${this.gb.length ? `${this.gb.join(' + ')} GB` : 'no GB'}, ${this.minutesBack < 0 ? `${-this.minutesBack} min ahead` : `${this.minutesBack} min back`}${this.twist === 'none' ? '' : `, ${this.twist}`})`;
  }
}

/** The gateway moves one of the customer's orders (by age, 0 = the newest): the customer pays it, or it fails, expires or is canceled. */
export class Pay extends Step {
  constructor(readonly pick: number, readonly action: 'settle' | 'deny' | 'expire' | 'cancel') {
    super();
  }
  async act(c: Customer) {
    if (c.orders.length === 0) return false;
    await gatewayAction(c, c.orders[c.orders.length - 1 - (this.pick % c.orders.length)], this.action);
  }
  toString() {
    return `pay(${this.pick === 0 ? 'newest' : `newest-${this.pick}`}, ${this.action})`;
  }
}

/**
 * The customer pays an order we had already given up on (a payment canceled, superseded, failed
 * or expired, a top-up canceled or expired): the gateway reports a settlement all the same.
 */
export class PayLate extends Step {
  constructor(readonly pick: number) {
    super();
  }
  async act(c: Customer) {
    const em = c.world.server.running.billing.orm.em.fork();
    const payments = await em.find(Payment, { user: c.user.id, status: { $in: ['canceled', 'expired', 'failed'] }, paymentType: { $ne: 'wallet' } });
    const topups = await em.find(Topup, { user: c.user.id, status: { $in: ['failed', 'expired'] } });
    const late = [
      ...payments.map((p) => ({ orderId: p.orderId, amount: p.grossAmount, type: p.paymentType, at: p.createdAt })),
      ...topups.map((t) => ({ orderId: t.orderId, amount: t.amount, type: t.paymentType, at: t.createdAt })),
    ].sort((a, b) => a.at.getTime() - b.at.getTime() || a.orderId.localeCompare(b.orderId));
    if (late.length === 0) return false;
    const p = late[this.pick % late.length];
    c.offBook.add(p.orderId);
    const key = c.world.server.running.billing.config.gateway.serverKey;
    const body = signedNotification(key, { order_id: p.orderId, transaction_status: 'settlement', gross_amount: p.amount, payment_type: p.type });
    const res = await c.world.server.api('POST', '/webhook/notification/', { body });
    c.trace.push(`  late settlement of ${p.orderId} (${p.amount}) -> ${res.status}`);
    if (res.status >= 500) throw new Error(`the webhook answered ${res.status} to a late settlement: ${res.text}`);
  }
  toString() {
    return `payLate(oldest+${this.pick})`;
  }
}

export class ChangePlan extends Step {
  constructor(
    readonly plan: string,
    readonly immediate: boolean,
    readonly code: string | null = null,
  ) {
    super();
  }
  async act(c: Customer) {
    const sub = await liveSubscription(c);
    if (!sub) return false;
    await remember(c, await api(c, 'POST', `/subscriptions/${sub.id}/change-plan/`, { plan_id: this.plan, immediate: this.immediate, ...(this.code !== null ? { promotion_code: this.code } : {}) }));
  }
  toString() {
    return `changePlan(${this.plan}, ${this.immediate ? 'now' : 'at renewal'}${this.code !== null ? `, code ${this.code}` : ''})`;
  }
}

/** The customer asks for a new payment of what is due (`POST /payments/charge/`): the older pending one is canceled. */
export class ChargeAgain extends Step {
  async act(c: Customer) {
    const sub = await liveSubscription(c);
    if (!sub) return false;
    await remember(c, await api(c, 'POST', '/payments/charge/', { subscription_id: sub.id }));
  }
  toString() {
    return 'chargeAgain()';
  }
}

export class Cancel extends Step {
  constructor(readonly immediate: boolean) {
    super();
  }
  async act(c: Customer) {
    const sub = await liveSubscription(c);
    if (!sub) return false;
    await api(c, 'POST', `/subscriptions/${sub.id}/cancel/`, { immediate: this.immediate });
  }
  toString() {
    return `cancel(${this.immediate ? 'now' : 'at period end'})`;
  }
}

/** The customer asks for a refund of one of their payments: all that remains, or a share of it. */
export class RequestRefund extends Step {
  constructor(readonly pick: number, readonly percent: number | null) {
    super();
  }
  async act(c: Customer) {
    const em = c.world.server.running.billing.orm.em.fork();
    const paid = await em.find(Payment, { user: c.user.id, status: { $in: ['settled', 'partially_refunded'] } }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    if (paid.length === 0) return false;
    const p = paid[paid.length - 1 - (this.pick % paid.length)];
    const body = this.percent === null ? {} : { amount: Math.max(1, Math.floor((Number(p.grossAmount) * this.percent) / 100)), reason: 'property test' };
    await api(c, 'POST', `/payments/${p.id}/refund/`, body);
  }
  toString() {
    return `refund(${this.pick === 0 ? 'newest' : `newest-${this.pick}`}, ${this.percent === null ? 'full' : `${this.percent}%`})`;
  }
}

/** A refund made at the gateway's dashboard, reported by its notification (no refund of ours behind it). */
export class GatewayRefund extends Step {
  constructor(readonly pick: number, readonly percent: number) {
    super();
  }
  async act(c: Customer) {
    const em = c.world.server.running.billing.orm.em.fork();
    // Not an order whose refunds were forged (offBook): the simulator does not know of them and
    // would refund past the gross, which Midtrans cannot (long seed 29971, "271:0:4:3:5:5:4:10").
    const paid = (
      await em.find(Payment, { user: c.user.id, status: { $in: ['settled', 'partially_refunded'] }, paymentType: { $nin: ['wallet', 'bank_transfer', 'echannel'] } }, { orderBy: { createdAt: 'asc', id: 'asc' } })
    ).filter((p) => !c.offBook.has(p.orderId));
    if (paid.length === 0) return false;
    const p = paid[paid.length - 1 - (this.pick % paid.length)];
    await gatewayAction(c, p.orderId, 'refund', { amount: Math.max(1, Math.floor((Number(p.grossAmount) * this.percent) / 100)) });
  }
  toString() {
    return `gatewayRefund(${this.pick === 0 ? 'newest' : `newest-${this.pick}`}, ${this.percent}%)`;
  }
}

/** Signs and posts a notification as the gateway would send it (moves the simulator cannot make in that order). */
async function notifyAsGateway(c: Customer, fields: { order_id: string; transaction_status: string; gross_amount: string; payment_type: string } & Record<string, unknown>): Promise<void> {
  const key = c.world.server.running.billing.config.gateway.serverKey;
  const res = await c.world.server.api('POST', '/webhook/notification/', { body: signedNotification(key, fields) });
  c.trace.push(`  gateway ${fields.transaction_status} of ${fields.order_id} -> ${res.status} ${res.body?.status ?? ''}`);
  if (res.status >= 500) throw new Error(`the webhook answered ${res.status} to ${fields.transaction_status} of ${fields.order_id}: ${res.text}`);
}

/**
 * Orders the gateway can still take back whole: settled payments (not wallet ones) and
 * successful top-ups, nothing refunded of either (a reversal after a refund is not one of
 * Midtrans's moves: what follows a refund is a chargeback), oldest first.
 */
async function reversibleOrders(c: Customer): Promise<{ orderId: string; amount: string; type: string }[]> {
  const em = c.world.server.running.billing.orm.em.fork();
  const payments = await em.find(Payment, { user: c.user.id, status: 'settled', paymentType: { $ne: 'wallet' } }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  const topups = await em.find(Topup, { user: c.user.id, status: 'success', refundedAmount: '0.00' }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  return [...payments.map((p) => ({ orderId: p.orderId, amount: p.grossAmount, type: p.paymentType })), ...topups.map((t) => ({ orderId: t.orderId, amount: t.amount, type: t.paymentType }))];
}

/**
 * The gateway takes a settled payment or top-up back (a `deny` after settlement, a
 * reversal): with ChargeAgain and Pay after it, the customer repays what was reversed; after a
 * wallet payment, the top-up that funded it is gone (issue 28, rows 5 and 6).
 */
export class Reverse extends Step {
  constructor(readonly pick: number) {
    super();
  }
  async act(c: Customer) {
    const paid = await reversibleOrders(c);
    if (paid.length === 0) return false;
    const p = paid[paid.length - 1 - (this.pick % paid.length)];
    c.offBook.add(p.orderId);
    await notifyAsGateway(c, { order_id: p.orderId, transaction_status: 'deny', gross_amount: p.amount, payment_type: p.type });
  }
  toString() {
    return `reverse(${this.pick === 0 ? 'newest' : `newest-${this.pick}`})`;
  }
}

/** A pending order is paid and refunded at the gateway, and the refund's notification arrives first (issue 28, row 4). */
export class RefundBeforeSettlement extends Step {
  constructor(readonly pick: number, readonly percent: number) {
    super();
  }
  async act(c: Customer) {
    const em = c.world.server.running.billing.orm.em.fork();
    const payments = await em.find(Payment, { user: c.user.id, status: 'pending', paymentType: { $ne: 'wallet' } }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    const topups = await em.find(Topup, { user: c.user.id, status: 'pending' }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    const pending = [...payments.map((p) => ({ orderId: p.orderId, amount: p.grossAmount, type: p.paymentType })), ...topups.map((t) => ({ orderId: t.orderId, amount: t.amount, type: t.paymentType }))];
    if (pending.length === 0) return false;
    const p = pending[pending.length - 1 - (this.pick % pending.length)];
    c.offBook.add(p.orderId);
    const refunded = String(Math.max(1, Math.floor((Number(p.amount) * this.percent) / 100))) + '.00';
    const refund = { refund_chargeback_id: 1, refund_amount: refunded, created_at: '2030-01-15 10:00:00', reason: 'property test', refund_key: `early-${p.orderId}` };
    await notifyAsGateway(c, { order_id: p.orderId, transaction_status: this.percent === 100 ? 'refund' : 'partial_refund', gross_amount: p.amount, payment_type: p.type, refund_amount: refunded, refunds: [refund] });
    await notifyAsGateway(c, { order_id: p.orderId, transaction_status: 'settlement', gross_amount: p.amount, payment_type: p.type });
  }
  toString() {
    return `refundBeforeSettlement(${this.pick === 0 ? 'newest' : `newest-${this.pick}`}, ${this.percent}%)`;
  }
}

/** The customer pays what is due from the wallet: a pending plan change's invoice included (issue 28, row 9). */
export class ChargeFromWallet extends Step {
  async act(c: Customer) {
    const sub = await liveSubscription(c);
    if (!sub) return false;
    await api(c, 'POST', '/payments/charge/', { subscription_id: sub.id, payment_type: 'wallet' });
  }
  toString() {
    return 'chargeFromWallet()';
  }
}

/** The same charge sent several times at once (issue 28, row 8). */
export class ConcurrentCharges extends Step {
  constructor(readonly times: number) {
    super();
  }
  async act(c: Customer) {
    const sub = await liveSubscription(c);
    if (!sub) return false;
    const answers = await Promise.all(Array.from({ length: this.times }, () => api(c, 'POST', '/payments/charge/', { subscription_id: sub.id })));
    for (const res of answers) await remember(c, res);
  }
  toString() {
    return `concurrentCharges(${this.times})`;
  }
}

export class TopUp extends Step {
  constructor(readonly amount: number, readonly kind: Exclude<PaymentKind, 'wallet'>) {
    super();
  }
  async act(c: Customer) {
    await remember(c, await api(c, 'POST', '/topups/', { amount: this.amount, ...paymentBody(this.kind, c.orders.length, true) }));
  }
  toString() {
    return `topUp(${this.amount}, ${this.kind})`;
  }
}

/** Support staff credit the wallet (`billing-admin wallet adjust`). */
export class StaffCredit extends Step {
  constructor(readonly amount: number) {
    super();
  }
  async act(c: Customer) {
    const ctx = c.world.ctx();
    const user = await ctx.em.findOneOrFail(User, c.user.id);
    await adjustWallet(ctx, { actor: cliActor(), user, amount: String(this.amount), reason: 'property test goodwill' });
    c.trace.push(`  staff credit ${this.amount}`);
  }
  toString() {
    return `staffCredit(${this.amount})`;
  }
}

/** Time passes and the billing run does what is due (renewals, dunning, trial ends). */
export class TimePasses extends Step {
  constructor(readonly days: number, readonly hours: number) {
    super();
  }
  async act(c: Customer) {
    c.world.clock.advance((this.days * 24 + this.hours) * 3600_000);
    await billingRun(c);
  }
  toString() {
    return `timePasses(${this.days}d ${this.hours}h)`;
  }
}

/*
 * The gateway's own moves (issue 27; docs/gateway.md). They act on the simulator as Midtrans would,
 * so that after every step the gateway-truth check (customer-world.ts, rule 8) can hold the
 * service to what the simulator's transaction says.
 */

const age = (pick: number) => (pick === 0 ? 'newest' : `newest-${pick}`);
const nth = <T>(list: T[], pick: number): T => list[list.length - 1 - (pick % list.length)];

/** The user's rows a refused refund must leave as they were (its own refund row, `failed`, aside). */
async function snapshot(c: Customer): Promise<string> {
  const em = c.world.server.running.billing.orm.em.fork();
  const payments = await em.find(Payment, { user: c.user.id }, { orderBy: { orderId: 'asc' } });
  const subs = await em.find(Subscription, { user: c.user.id }, { orderBy: { id: 'asc' } });
  const invoices = await em.find(Invoice, { user: c.user.id }, { orderBy: { id: 'asc' } });
  const wallet = await em.findOne(Wallet, { user: c.user.id });
  const entries = wallet ? await em.count(WalletTransaction, { wallet }) : 0;
  const notes = await em.count(CreditNote, { user: c.user.id });
  return JSON.stringify({
    payments: payments.map((p) => [p.orderId, p.status, p.refundedAmount, p.creditedAmount, p.chargebackAmount]),
    subs: subs.map((s) => [s.id, s.status, s.currentPeriodEnd?.toISOString(), s.cancelReason]),
    invoices: invoices.map((i) => [i.id, i.status, i.retryCount]),
    wallet: [wallet?.balance ?? null, entries],
    notes,
  });
}

/** Settled payments the gateway refunds itself (not bank transfers, Mandiri bills or wallet payments, refunded to the wallet). */
async function gatewayRefundable(c: Customer, types?: string[]): Promise<Payment[]> {
  const em = c.world.server.running.billing.orm.em.fork();
  const paid = await em.find(Payment, { user: c.user.id, status: { $in: ['settled', 'partially_refunded'] }, paymentType: { $nin: ['wallet', 'bank_transfer', 'echannel'] } }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  return paid.filter((p) => !c.offBook.has(p.orderId) && !c.unheard.has(p.orderId) && (!types || types.includes(p.paymentType)));
}

/**
 * The customer asks for a refund the gateway refuses: a ShopeePay payment refunded in part
 * (ShopeePay refunds only in full: 414), or any refund while the gateway says no (the fault
 * `refuse`: 414, the merchant's balance). The answer is 422 `refund_refused` and nothing else
 * changes (docs/gateway.md, 'Refunds the gateway refuses, or whose answer is lost'); a refund the service refuses itself (nothing left to refund) never
 * reaches the gateway and changes nothing either.
 */
export class RefundRefused extends Step {
  constructor(readonly pick: number, readonly via: 'fault' | 'shopeepay_partial', readonly percent: number | null) {
    super();
  }
  async act(c: Customer) {
    const paid = await gatewayRefundable(c, this.via === 'shopeepay_partial' ? ['shopeepay'] : undefined);
    if (paid.length === 0) return false;
    const p = nth(paid, this.pick);
    const percent = this.via === 'shopeepay_partial' ? (this.percent ?? 50) : this.percent;
    const body = percent === null ? {} : { amount: Math.max(1, Math.floor((Number(p.grossAmount) * percent) / 100)), reason: 'property test' };
    const before = await snapshot(c);
    const mark = gatewayMark(c);
    if (this.via === 'fault') await armFault(c, { mode: 'refuse', count: 1, operations: ['refund'] });
    let res;
    try {
      res = await api(c, 'POST', `/payments/${p.id}/refund/`, body);
    } finally {
      disarmFaults(c);
    }
    const asked = calledSince(c, mark, 'refund');
    if (asked && !(res.status === 422 && res.body?.code === 'refund_refused')) {
      // A ShopeePay refund of the whole of what is left is no partial one: the gateway takes it.
      if (!(this.via === 'shopeepay_partial' && res.status < 300)) throw new Error(`a refund the gateway refused was answered ${res.status} ${res.body?.code ?? ''}, not 422 refund_refused`);
      return;
    }
    // Not sent as a refund: an unsettled card capture is refunded by a void (cancel), which the
    // fault does not touch (long seed 29971, "877:2:1"); it went through, nothing was refused.
    if (!asked && res.status < 300) return;
    if (res.status === 422 && res.body?.code === 'refund_refused' && !/41\d/.test(String(res.body?.detail ?? ''))) throw new Error(`refund_refused without the gateway's status_code in detail: ${res.body?.detail}`);
    const after = await snapshot(c);
    if (after !== before) throw new Error(`a refused refund (${res.status} ${res.body?.code ?? ''}) changed the user's rows:\nbefore ${before}\nafter  ${after}`);
  }
  toString() {
    return `refundRefused(${age(this.pick)}, ${this.via}, ${this.percent === null ? 'full' : `${this.percent}%`})`;
  }
}

/**
 * The customer's refund is made at the gateway and its answer is lost (a 500 after the effect,
 * its notifications lost too): the service answers 202 with the refund `pending` and nothing
 * else moves. Then the customer retries (the same refund_key: refunded once), or payments sync
 * finds it, or a later move does.
 */
export class RefundAnswerLost extends Step {
  constructor(readonly pick: number, readonly percent: number | null, readonly then: 'retry' | 'sync' | 'later') {
    super();
  }
  async act(c: Customer) {
    const paid = await gatewayRefundable(c);
    if (paid.length === 0) return false;
    const p = nth(paid, this.pick);
    const body = this.percent === null ? {} : { amount: Math.max(1, Math.floor((Number(p.grossAmount) * this.percent) / 100)), reason: 'property test' };
    const before = await snapshot(c);
    const mark = gatewayMark(c);
    await armFault(c, { mode: 'http_500', when: 'after', count: 1, operations: ['refund'], notify: false });
    let res;
    try {
      res = await api(c, 'POST', `/payments/${p.id}/refund/`, body);
    } finally {
      disarmFaults(c);
    }
    if (!calledSince(c, mark, 'refund')) return; // refused here (nothing left to refund, a voided capture): the gateway was not asked
    if (res.status !== 202 || res.body?.refund?.status !== 'pending') throw new Error(`a refund whose answer was lost was answered ${res.status} ${JSON.stringify(res.body?.refund ?? res.body)}, not 202 pending`);
    const after = await snapshot(c);
    if (after !== before) throw new Error(`a refund whose answer was lost changed the user's rows before the gateway confirmed it:\nbefore ${before}\nafter  ${after}`);
    c.unheard.add(p.orderId);
    if (this.then === 'retry') {
      const again = await api(c, 'POST', `/payments/${p.id}/refund/`, body);
      // The gateway may have refused what it was asked (a ShopeePay partial refund): the retry hears that refusal.
      const refused = again.status === 422 && again.body?.code === 'refund_refused';
      if (again.status >= 300 && !refused) throw new Error(`the retry of a refund whose answer was lost was answered ${again.status} ${again.body?.code ?? ''}`);
      c.unheard.delete(p.orderId);
    } else if (this.then === 'sync') {
      await paymentsSync(c);
    }
  }
  toString() {
    return `refundAnswerLost(${age(this.pick)}, ${this.percent === null ? 'full' : `${this.percent}%`}, then ${this.then})`;
  }
}

/** The customer's orders as the gateway holds them, the forged ones aside. */
function gatewayOrders(c: Customer, where: (tx: SimTransaction) => boolean): SimTransaction[] {
  return c.orders
    .filter((o) => !c.offBook.has(o))
    .map((o) => gatewayRecord(c, o))
    .filter((tx): tx is SimTransaction => tx !== undefined && where(tx));
}

/**
 * The cardholder's bank takes a settled card payment or top-up back, in part (`{amount}`) or
 * all that is left, after a dispute (docs/gateway.md, 'Chargebacks'): the simulator's development commands
 * (no Authorization). A capture not yet in the settlement batch is settled first. With
 * `notify` false its notification is lost, and only a sync finds it.
 */
export class Chargeback extends Step {
  constructor(readonly pick: number, readonly percent: number | null, readonly notify: boolean) {
    super();
  }
  async act(c: Customer) {
    const cards = gatewayOrders(c, (tx) => tx.payment_type === 'credit_card' && (['settlement', 'partial_refund', 'partial_chargeback'].includes(tx.transaction_status) || (tx.transaction_status === 'capture' && tx.fraud_status === 'accept')));
    if (cards.length === 0) return false;
    const tx = nth(cards, this.pick);
    if (tx.transaction_status === 'capture') await gatewayAction(c, tx.order_id, 'settle', {}, c.unheard.has(tx.order_id) ? 'notify=false' : '');
    const left = tx.gross_amount - tx.refunds.reduce((a, r) => a + r.refund_amount, 0) - tx.chargebacks.reduce((a, r) => a + r.chargeback_amount, 0);
    const amount = this.percent === null ? left : Math.max(1, Math.floor((left * this.percent) / 100));
    const query = this.notify ? '' : 'notify=false';
    const status = amount >= left ? await gatewayAction(c, tx.order_id, 'chargeback', {}, query) : await gatewayAction(c, tx.order_id, 'partial_chargeback', { amount }, query);
    if (status !== 200) throw new Error(`the simulator refused a chargeback of ${amount} of ${tx.order_id} (${left} left): ${status}`);
    if (!this.notify) c.unheard.add(tx.order_id);
  }
  toString() {
    return `chargeback(${age(this.pick)}, ${this.percent === null ? 'all' : `${this.percent}%`}${this.notify ? '' : ', notification lost'})`;
  }
}

/**
 * The gateway moves an order and its notification is lost (the merchant's endpoint was down
 * through every retry): a pending order settled, a settled Permata or Mandiri payment reversed
 * (`deny`), a settled payment refunded at the gateway's dashboard. Then payments sync or the
 * customer's subscription sync asks, or nobody yet (a later sync move will).
 */
export class LostNotification extends Step {
  constructor(readonly pick: number, readonly action: 'settle' | 'reverse' | 'refund', readonly then: 'payments_sync' | 'customer_sync' | 'later', readonly percent: number) {
    super();
  }
  async act(c: Customer) {
    const candidates = gatewayOrders(c, (tx) => {
      if (this.action === 'settle') return tx.transaction_status === 'pending' || (tx.transaction_status === 'capture' && tx.fraud_status === 'accept');
      if (this.action === 'reverse') return tx.transaction_status === 'settlement' && tx.refunds.length === 0 && (tx.bank === 'permata' || tx.payment_type === 'echannel');
      return ['settlement', 'partial_refund'].includes(tx.transaction_status) && !['bank_transfer', 'echannel'].includes(tx.payment_type) && tx.chargebacks.length === 0;
    });
    if (candidates.length === 0) return false;
    const tx = nth(candidates, this.pick);
    const left = tx.gross_amount - tx.refunds.reduce((a, r) => a + r.refund_amount, 0);
    const refund = tx.payment_type === 'shopeepay' ? {} : { amount: Math.max(1, Math.floor((left * this.percent) / 100)) };
    const status = await gatewayAction(c, tx.order_id, this.action === 'reverse' ? 'deny' : this.action, this.action === 'refund' ? refund : {}, 'notify=false');
    if (status !== 200) return; // the gateway refused the move (a refund window, say): nothing happened
    c.unheard.add(tx.order_id);
    if (this.then === 'payments_sync') await paymentsSync(c);
    if (this.then === 'customer_sync') await customerSync(c);
  }
  toString() {
    return `lostNotification(${age(this.pick)}, ${this.action}${this.action === 'refund' ? ` ${this.percent}%` : ''}, then ${this.then.replace('_', ' ')})`;
  }
}

/** The customer's own `GET /subscriptions/{id}/sync/` of each of their subscriptions, newest first. */
async function customerSync(c: Customer): Promise<void> {
  const em = c.world.server.running.billing.orm.em.fork();
  const subs = await em.find(Subscription, { user: c.user.id }, { orderBy: { createdAt: 'desc', id: 'desc' } });
  for (const sub of subs) {
    await api(c, 'GET', `/subscriptions/${sub.id}/sync/`);
    await markHeard(c, sub.id);
  }
}

/** Someone asks the gateway: `billing-admin payments sync`, or the customer's subscription sync. */
export class Sync extends Step {
  constructor(readonly via: 'payments' | 'customer') {
    super();
  }
  async act(c: Customer) {
    if (this.via === 'payments') await paymentsSync(c);
    else await customerSync(c);
  }
  toString() {
    return `sync(${this.via})`;
  }
}

/** The customer pays a pending order with Automatic Fee Imposition: the gateway's gross includes the fee they paid on top. */
export class PayWithFee extends Step {
  constructor(readonly pick: number, readonly fee: number) {
    super();
  }
  async act(c: Customer) {
    const pending = gatewayOrders(c, (tx) => tx.transaction_status === 'pending' && tx.payment_type !== 'credit_card');
    if (pending.length === 0) return false;
    const tx = nth(pending, this.pick);
    await gatewayAction(c, tx.order_id, 'settle', {}, `customer_fee=${this.fee}`);
  }
  toString() {
    return `payWithFee(${age(this.pick)}, fee ${this.fee})`;
  }
}

/**
 * The gateway takes a charge and its answer is lost (a 500 after the effect, the notification
 * lost too), at subscribe or at `POST /payments/charge/`: the payment must be pending with
 * `outcome_unknown: true`, nothing failed or canceled. With `retry`, the customer charges again
 * at once: that asks the gateway first, and an order it already took (a card captured) is not
 * charged twice (409 nothing_due).
 */
export class ChargeAnswerLost extends Step {
  constructor(readonly at: 'subscribe' | 'charge', readonly plan: string, readonly kind: Exclude<PaymentKind, 'wallet'>, readonly retry: boolean) {
    super();
  }
  async act(c: Customer) {
    const sub = this.at === 'charge' ? await liveSubscription(c) : null;
    if (this.at === 'charge' && !sub) return false;
    const em = c.world.server.running.billing.orm.em.fork();
    const earlier = new Set((await em.find(Payment, { user: c.user.id })).map((p) => p.id));
    const mark = gatewayMark(c);
    const knownAtGateway = new Set(c.world.server.running.billing.simulator!.transactions().map((t) => t.order_id));
    await armFault(c, { mode: 'http_500', when: 'after', count: 1, operations: ['charge'], notify: false });
    let res;
    try {
      res = this.at === 'subscribe' ? await api(c, 'POST', '/subscriptions/', { plan_id: this.plan, ...paymentBody(this.kind, c.orders.length) }) : await api(c, 'POST', '/payments/charge/', { subscription_id: sub!.id });
    } finally {
      disarmFaults(c);
    }
    if (!calledSince(c, mark, 'charge')) return; // nothing was charged (nothing due, a plan refused)
    // A trial plan with a card pre-authorises the card (CARD- orders): no money moves and no
    // payment is kept, but a hold whose answer was lost must not stay on the customer's card.
    const cardChecks = c.world.server.running.billing.simulator!.transactions().filter((t) => !knownAtGateway.has(t.order_id) && t.order_id.startsWith('CARD-'));
    for (const check of cardChecks) {
      c.trace.push(`  card check ${check.order_id} at the gateway: ${check.transaction_status}`);
      if (['authorize', 'capture', 'settlement'].includes(check.transaction_status)) throw new Error(`a trial's card check ${check.order_id} whose answer was lost still holds the customer's card at the gateway (${check.transaction_status})`);
    }
    if (cardChecks.length > 0) return;
    // The clock stands still within a move: the new payment is told by being new, not by its time.
    const charged = (await em.fork().find(Payment, { user: c.user.id, paymentType: { $ne: 'wallet' } })).filter((p) => !earlier.has(p.id) && gatewayRecord(c, p.orderId));
    const lost = charged.length === 1 ? charged[0] : undefined;
    if (charged.length > 1) throw new Error(`one charge whose answer was lost made ${charged.length} orders at the gateway: ${charged.map((p) => p.orderId).join(', ')}`);
    if (!lost) throw new Error(`the gateway took a charge (answered ${res.status}) and the service kept no payment of it`);
    c.orders.push(lost.orderId);
    if (lost.status !== 'pending' || !lost.outcomeUnknown) throw new Error(`a charge whose answer was lost left payment ${lost.orderId} ${lost.status} with outcome_unknown ${lost.outcomeUnknown}, not pending and unknown`);
    c.unheard.add(lost.orderId);
    if (!this.retry) return;
    const liveNow = await liveSubscription(c);
    if (!liveNow) return;
    const tx = gatewayRecord(c, lost.orderId)!;
    const paidThere = tx.transaction_status === 'settlement' || (tx.transaction_status === 'capture' && tx.fraud_status === 'accept');
    const again = await api(c, 'POST', '/payments/charge/', { subscription_id: liveNow.id });
    await remember(c, again);
    c.unheard.delete(lost.orderId);
    if (paidThere && liveNow.id === lost.subscription?.id && !(again.status === 409 && again.body?.code === 'nothing_due')) {
      throw new Error(`order ${lost.orderId} was paid at the gateway and the customer's next charge was answered ${again.status} ${again.body?.code ?? ''}, not 409 nothing_due`);
    }
  }
  toString() {
    return `chargeAnswerLost(${this.at}${this.at === 'subscribe' ? ` ${this.plan}, ${this.kind}` : ''}${this.retry ? ', charge again' : ''})`;
  }
}

/**
 * Time passes and the billing run uses a wrong server key (the gateway answers 401): a merchant
 * failure, never the customer's (docs/billing.md, 'Dunning'). No subscription may become past_due or be
 * canceled by dunning because of it: only a renewal already past its due instant (or its
 * cancellation instant) before the run may move. With `fixed`, the key is put right and the run
 * made again at once.
 */
export class WrongKeyRun extends Step {
  constructor(readonly days: number, readonly hours: number, readonly fixed: boolean) {
    super();
  }
  async act(c: Customer) {
    const em = c.world.server.running.billing.orm.em.fork();
    const before = new Map((await em.find(Subscription, { user: c.user.id })).map((s) => [s.id, s.status]));
    c.world.clock.advance((this.days * 24 + this.hours) * 3600_000);
    const now = c.world.clock.now();
    const config = c.world.server.running.billing.config;
    const open = await em.find(Invoice, { user: c.user.id, status: 'open', billingReason: 'subscription_cycle' });
    const wrongKey = new MidtransClient({ baseUrl: `${c.world.server.url}/_simulator`, serverKey: 'SB-Mid-server-rotated-by-mistake', timeoutMs: 5000 });
    const report = await runBilling({ ...c.world.ctx(), gateway: wrongKey });
    c.trace.push(`  billing run with a wrong server key at ${now.toISOString()}: merchant_failed ${report.merchant_failed}, past_due ${report.past_due}, canceled ${report.canceled}${report.errors.map((e) => `; ${e.message}`).join('')}`);
    const after = await c.world.server.running.billing.orm.em.fork().find(Subscription, { user: c.user.id });
    for (const s of after) {
      const was = before.get(s.id);
      // A wallet-paid renewal never reaches the gateway: a wallet that cannot cover it is the
      // customer's own failure, past due at once (long seed 7512, "4:0:0:4:5:3:3:4:4").
      if (was === undefined || was === s.status || s.paymentType === 'wallet') continue;
      const due = open.filter((i) => i.subscription?.id === s.id).map((i) => dunningSchedule(i.createdAt, config));
      const pastDue = s.status === 'past_due' && !due.some((d) => d.dueAt.getTime() <= now.getTime());
      const dunned = s.status === 'canceled' && ['dunning_exhausted', 'payment_rejected'].includes(s.cancelReason ?? '') && !due.some((d) => d.cancelAt.getTime() <= now.getTime());
      if (pastDue || dunned) throw new Error(`a billing run with a wrong server key moved subscription ${s.id} from ${was} to ${s.status} (${s.cancelReason ?? ''})`);
    }
    if (this.fixed) await billingRun(c);
  }
  toString() {
    return `wrongKeyRun(${this.days}d ${this.hours}h${this.fixed ? ', key fixed after' : ''})`;
  }
}

/** What the gateway does to one order while its notifications are held back. */
type HeldStory = 'settle_then_reverse' | 'chargebacks' | 'refunds';

/**
 * The gateway's notifications arrive in any order (issue 37): the proxy holds one order's
 * notifications while the gateway moves it two or three times (settled then reversed; a partial
 * chargeback then the rest, chargeback entries with free-text reasons; refunds in parts), then
 * delivers them newest first, oldest first or shuffled, and maybe a payments sync follows. The
 * money rules and the gateway-truth check then hold the end state to the one the same facts in
 * their natural order give.
 */
export class HeldNotifications extends Step {
  constructor(readonly pick: number, readonly story: HeldStory, readonly order: 'newest_first' | 'oldest_first' | 'shuffled', readonly shuffle: number, readonly thenSync: boolean) {
    super();
  }
  async act(c: Customer) {
    const paidCard = (tx: SimTransaction) => tx.payment_type === 'credit_card' && (['settlement', 'partial_chargeback'].includes(tx.transaction_status) || (tx.transaction_status === 'capture' && tx.fraud_status === 'accept'));
    const candidates = gatewayOrders(c, (tx) => {
      if (c.unheard.has(tx.order_id)) return false;
      if (this.story === 'settle_then_reverse') return tx.transaction_status === 'pending' && (tx.bank === 'permata' || tx.payment_type === 'echannel');
      if (this.story === 'chargebacks') return paidCard(tx);
      return (tx.transaction_status === 'pending' || tx.transaction_status === 'settlement') && ['gopay', 'qris'].includes(tx.payment_type) && tx.chargebacks.length === 0;
    });
    if (candidates.length === 0) return false;
    const tx = nth(candidates, this.pick);
    const server = c.world.server;
    await holdNotifications(server, tx.order_id);
    try {
      if (this.story === 'settle_then_reverse') {
        await gatewayAction(c, tx.order_id, 'settle');
        await gatewayAction(c, tx.order_id, 'deny');
      } else if (this.story === 'chargebacks') {
        if (tx.transaction_status === 'capture') await gatewayAction(c, tx.order_id, 'settle');
        const left = tx.gross_amount - tx.refunds.reduce((a, r) => a + r.refund_amount, 0) - tx.chargebacks.reduce((a, r) => a + r.chargeback_amount, 0);
        if (left > 1) await gatewayAction(c, tx.order_id, 'partial_chargeback', { amount: Math.floor(left / 3) || 1 });
        await gatewayAction(c, tx.order_id, 'chargeback');
      } else {
        if (tx.transaction_status === 'pending') await gatewayAction(c, tx.order_id, 'settle');
        const left = tx.gross_amount - tx.refunds.reduce((a, r) => a + r.refund_amount, 0);
        if (left > 1) await gatewayAction(c, tx.order_id, 'refund', { amount: Math.floor(left / 4) || 1 });
        await gatewayAction(c, tx.order_id, 'refund', { amount: Math.max(1, Math.floor(left / 2)) });
      }
    } finally {
      const held = await heldNotifications(server);
      const own = held.filter((h) => h.order_id === tx.order_id);
      const released = await releaseNotifications(server, this.order === 'shuffled' ? { ids: shuffled(own.map((h) => h.id), this.shuffle) } : { order: this.order, order_id: tx.order_id });
      c.trace.push(`  released ${released.map((r) => `${r.transaction_status} -> ${r.outcomes.at(-1)?.http_status ?? 'none'}`).join(', ')}`);
      const failed = released.find((r) => r.outcomes.some((o) => o.http_status !== null && o.http_status >= 500));
      if (failed) throw new Error(`the webhook answered 5xx to the held ${failed.transaction_status} of ${tx.order_id}`);
    }
    if (this.thenSync) await paymentsSync(c);
  }
  toString() {
    return `heldNotifications(${age(this.pick)}, ${this.story}, ${this.order === 'shuffled' ? `shuffled ${this.shuffle}` : this.order.replace('_', ' ')}${this.thenSync ? ', then payments sync' : ''})`;
  }
}

/** A permutation of `items` drawn from `seed` (a small linear congruential walk: replays alike). */
function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let state = seed >>> 0;
  for (let i = out.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** Buyer identities a customer may give for their fakturs (a late profile, given only now, included). */
const BUYERS = {
  business: { buyer_type: 'business', npwp: '0123456789012345', name: 'PT Properti', address: 'Jl. Uji No. 1, Jakarta' },
  individual: { buyer_type: 'individual', nik: '3171234101900123', name: 'Uji Properti', address: 'Jl. Uji No. 2, Bandung' },
  foreign: { buyer_type: 'foreign', passport: 'X1234567', country: 'SGP', name: 'Test Buyer', address: '1 Test Road, Singapore' },
} as const;

/**
 * Finance exports this month's fakturs to Coretax (`billing-admin tax export`, in-process): the
 * customer gives a tax profile first, unless one stands; invoices issued before it take it at
 * their first export. Rule 10 then holds each exported faktur to Coretax's arithmetic after
 * every later credit note.
 */
let exportDir: string | undefined;

export class TaxExport extends Step {
  constructor(readonly buyer: keyof typeof BUYERS) {
    super();
  }
  async act(c: Customer) {
    const standing = await api(c, 'GET', '/tax-profile/');
    if (standing.status === 404) await api(c, 'PUT', '/tax-profile/', BUYERS[this.buyer]);
    const now = c.world.clock.now();
    const month = parseTaxMonth(localDate(now, c.world.server.running.billing.config.documents.timeZone).slice(0, 7))!;
    exportDir ??= mkdtempSync(join(tmpdir(), 'property-coretax-'));
    const out = join(exportDir, 'export.xml');
    const result = await exportCoretax(c.world.ctx(), { month, out, again: false });
    c.trace.push(`  tax export ${month.label}: ${result.invoices} faktur(s), PPN ${result.taxAmount}${result.skipped.map((x) => `; skipped ${x.invoiceNumber}: ${x.reason}`).join('')}`);
  }
  toString() {
    return `taxExport(${this.buyer})`;
  }
}

/** Mostly the newest order or payment, sometimes an older one. */
const pick = fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat({ max: 3 }) });
const plan = fc.constantFrom(...PLAN_SLUGS);
/** A code as a customer types it: as given, in other case, with spaces, or one that does not exist. */
const code = fc.tuple(fc.constantFrom(...PROPERTY_CODES, 'nosuchcode'), fc.constantFrom('as is', 'upper', 'lower', 'spaced')).map(([c, how]) =>
  how === 'upper' ? c.toUpperCase() : how === 'lower' ? c.toLowerCase() : how === 'spaced' ? `  ${c} ` : c,
);
const kind = fc.constantFrom(...PAYMENT_KINDS);
const gatewayKind = fc.constantFrom('bank_transfer', 'qris', 'gopay', 'card', 'card_3ds', 'permata', 'shopeepay') as fc.Arbitrary<Exclude<PaymentKind, 'wallet'>>;
const outcome = fc.constantFrom('settle', 'settle', 'settle', 'deny', 'expire', 'cancel') as fc.Arbitrary<'settle' | 'deny' | 'expire' | 'cancel'>;
const weighted = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => Array.from({ length: weight }, () => arbitrary);

/** Every move, weighted so that sequences reach paid subscriptions, plan changes and refunds. */
export const customerCommands: fc.Arbitrary<Cmd>[] = [
  ...weighted(1, fc.tuple(plan, kind).map(([p, k]) => new Subscribe(p, k))),
  ...weighted(3, fc.tuple(pick, outcome).map(([i, a]) => new Pay(i, a))),
  ...weighted(1, pick.map((i) => new PayLate(i))),
  ...weighted(1, fc.constant(null).map(() => new ChargeAgain())),
  ...weighted(3, fc.tuple(plan, fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) })).map(([p, now]) => new ChangePlan(p, now))),
  ...weighted(1, fc.boolean().map((now) => new Cancel(now))),
  ...weighted(2, fc.tuple(pick, fc.option(fc.integer({ min: 1, max: 99 }), { nil: null })).map(([i, pct]) => new RequestRefund(i, pct))),
  ...weighted(1, fc.tuple(pick, fc.integer({ min: 1, max: 100 })).map(([i, pct]) => new GatewayRefund(i, pct))),
  ...weighted(1, fc.tuple(fc.integer({ min: 1, max: 40 }).map((n) => n * 10000), gatewayKind).map(([a, k]) => new TopUp(a, k))),
  ...weighted(1, fc.integer({ min: 1, max: 20 }).map((n) => new StaffCredit(n * 5000))),
  ...weighted(2, fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 23 })).map(([d, h]) => new TimePasses(d, h))),
  ...weighted(1, pick.map((i) => new Reverse(i))),
  ...weighted(1, fc.tuple(pick, fc.constantFrom(100, 100, 40)).map(([i, pct]) => new RefundBeforeSettlement(i, pct))),
  ...weighted(1, fc.constant(null).map(() => new ChargeFromWallet())),
  ...weighted(1, fc.integer({ min: 2, max: 6 }).map((n) => new ConcurrentCharges(n))),
  // The gateway's own moves (issue 27).
  ...weighted(1, fc.tuple(pick, fc.constantFrom('fault', 'shopeepay_partial') as fc.Arbitrary<'fault' | 'shopeepay_partial'>, fc.option(fc.integer({ min: 1, max: 99 }), { nil: null })).map(([i, via, pct]) => new RefundRefused(i, via, pct))),
  ...weighted(1, fc.tuple(pick, fc.option(fc.integer({ min: 1, max: 99 }), { nil: null }), fc.constantFrom('retry', 'sync', 'later') as fc.Arbitrary<'retry' | 'sync' | 'later'>).map(([i, pct, then]) => new RefundAnswerLost(i, pct, then))),
  ...weighted(1, fc.tuple(pick, fc.option(fc.integer({ min: 1, max: 99 }), { nil: null }), fc.boolean()).map(([i, pct, notify]) => new Chargeback(i, pct, notify))),
  ...weighted(1, fc.tuple(pick, fc.constantFrom('settle', 'reverse', 'refund') as fc.Arbitrary<'settle' | 'reverse' | 'refund'>, fc.constantFrom('payments_sync', 'customer_sync', 'later') as fc.Arbitrary<'payments_sync' | 'customer_sync' | 'later'>, fc.integer({ min: 1, max: 100 })).map(([i, a, then, pct]) => new LostNotification(i, a, then, pct))),
  ...weighted(1, (fc.constantFrom('payments', 'customer') as fc.Arbitrary<'payments' | 'customer'>).map((via) => new Sync(via))),
  ...weighted(1, fc.tuple(pick, fc.integer({ min: 1, max: 10 }).map((n) => n * 1000)).map(([i, fee]) => new PayWithFee(i, fee))),
  ...weighted(1, fc.tuple(fc.constantFrom('subscribe', 'charge') as fc.Arbitrary<'subscribe' | 'charge'>, plan, gatewayKind, fc.boolean()).map(([at, p, k, retry]) => new ChargeAnswerLost(at, p, k, retry))),
  ...weighted(1, fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 23 }), fc.boolean()).map(([d, h, fixed]) => new WrongKeyRun(d, h, fixed))),
  // Issue 41: promotion codes (typed in any case, sometimes unknown) on subscribe and plan change; seats.
  ...weighted(1, fc.tuple(plan, kind, code, fc.option(fc.integer({ min: 1, max: 12 }), { nil: null })).map(([p, k, c, q]) => new Subscribe(p, k, c, q))),
  ...weighted(1, fc.tuple(plan, fc.boolean(), code).map(([p, now, c]) => new ChangePlan(p, now, c))),
  ...weighted(2, fc.tuple(fc.oneof(fc.integer({ min: 1, max: 12 }), fc.constantFrom(0, 10_001)), fc.boolean()).map(([q, now]) => new ChangeQuantity(q, now))),
  // Issue 37: notifications held back and delivered in any order; finance exports the month's fakturs.
  ...weighted(
    2,
    fc
      .tuple(pick, fc.constantFrom('settle_then_reverse', 'chargebacks', 'refunds') as fc.Arbitrary<HeldStory>, fc.constantFrom('newest_first', 'newest_first', 'oldest_first', 'shuffled') as fc.Arbitrary<'newest_first' | 'oldest_first' | 'shuffled'>, fc.nat(), fc.boolean())
      .map(([i, story, order, seed, sync]) => new HeldNotifications(i, story, order, seed, sync)),
  ),
  ...weighted(1, (fc.constantFrom('business', 'individual', 'foreign') as fc.Arbitrary<keyof typeof BUYERS>).map((b) => new TaxExport(b))),
  // Issue 59: the method of a pending payment switched (the old order canceled), and codes held by payments left unpaid.
  ...weighted(2, switchMethodCommand),
  ...weighted(1, fc.tuple(plan, gatewayKind, code).map(([p, k, c]) => new Subscribe(p, k, c))),
  // Issue 42: usage sent late, early, again, or conflicting, on the metered plans.
  ...weighted(1, kind.map((k) => new Subscribe('p-metered', k))),
  ...weighted(
    4,
    fc
      .tuple(
        fc.integer({ min: 0, max: 8 }),
        fc.array(fc.constantFrom('1', '0.5', '2.25', '3', '0.000001'), { maxLength: 3 }),
        fc.oneof({ weight: 6, arbitrary: fc.integer({ min: -4, max: 0 }) }, { weight: 2, arbitrary: fc.integer({ min: 1, max: 90 }) }, { weight: 1, arbitrary: fc.integer({ min: 600, max: 60 * 24 * 10 }) }, { weight: 1, arbitrary: fc.constant(-6) }),
        fc.constantFrom('none', 'none', 'none', 'retry', 'conflict', 'unix') as fc.Arbitrary<'none' | 'retry' | 'conflict' | 'unix'>,
      )
      .map(([calls, gb, back, twist]) => new SendUsage(calls, gb, back, twist)),
  ),
];

/**
 * How every sequence starts, so that its moves have something to act on: a subscription with
 * some payment kind, paid at once (or left to the moves). Wallet payments get the funds first.
 */
export const openingMoves: fc.Arbitrary<Cmd[]> = fc.tuple(fc.oneof({ weight: 3, arbitrary: plan }, { weight: 2, arbitrary: fc.constantFrom('p-metered', 'p-weekly') }), kind, fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) })).map(([p, k, paid]) => [
  ...(k === 'wallet' ? [new StaffCredit(2_000_000)] : []),
  new Subscribe(p, k),
  ...(paid && k !== 'wallet' ? [new Pay(0, 'settle')] : []),
]);
