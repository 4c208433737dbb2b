import fc from 'fast-check';
import { Payment } from '../../../src/db/entities/payment.js';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { Topup } from '../../../src/db/entities/topup.js';
import { User } from '../../../src/db/entities/user.js';
import { LIVE_SUBSCRIPTION_STATUSES } from '../../../src/domain/states/subscription-states.js';
import { adjustWallet } from '../../../src/services/wallet/adjust-wallet.js';
import { signedNotification } from '../factories.js';
import { api, billingRun, checkMoneyRules, gatewayAction, PLAN_SLUGS, type Customer } from './customer-world.js';

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
export const PAYMENT_KINDS = ['bank_transfer', 'qris', 'gopay', 'card', 'card_3ds', 'wallet'] as const;
export type PaymentKind = (typeof PAYMENT_KINDS)[number];

function paymentBody(kind: PaymentKind, n: number): Record<string, unknown> {
  if (kind === 'card') return { payment_type: 'credit_card', token: `sim-card-accept-${n}` };
  if (kind === 'card_3ds') return { payment_type: 'credit_card', token: `tok-3ds-${n}` };
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
  constructor(readonly plan: string, readonly kind: PaymentKind) {
    super();
  }
  async act(c: Customer) {
    await remember(c, await api(c, 'POST', '/subscriptions/', { plan_id: this.plan, ...paymentBody(this.kind, c.orders.length) }));
  }
  toString() {
    return `subscribe(${this.plan}, ${this.kind})`;
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
  constructor(readonly plan: string, readonly immediate: boolean) {
    super();
  }
  async act(c: Customer) {
    const sub = await liveSubscription(c);
    if (!sub) return false;
    await remember(c, await api(c, 'POST', `/subscriptions/${sub.id}/change-plan/`, { plan_id: this.plan, immediate: this.immediate }));
  }
  toString() {
    return `changePlan(${this.plan}, ${this.immediate ? 'now' : 'at renewal'})`;
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
    const paid = await em.find(Payment, { user: c.user.id, status: { $in: ['settled', 'partially_refunded'] }, paymentType: { $nin: ['wallet', 'bank_transfer', 'echannel'] } }, { orderBy: { createdAt: 'asc', id: 'asc' } });
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
 * The gateway takes a settled payment or top-up back (a `deny` after settlement, MIDTRANS.md
 * §7.3): with ChargeAgain and Pay after it, the customer repays what was reversed; after a
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
    await remember(c, await api(c, 'POST', '/topups/', { amount: this.amount, ...paymentBody(this.kind, c.orders.length) }));
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
    await adjustWallet(ctx, { user, amount: String(this.amount), reason: 'property test goodwill' });
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

/** Mostly the newest order or payment, sometimes an older one. */
const pick = fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat({ max: 3 }) });
const plan = fc.constantFrom(...PLAN_SLUGS);
const kind = fc.constantFrom(...PAYMENT_KINDS);
const gatewayKind = fc.constantFrom('bank_transfer', 'qris', 'gopay', 'card', 'card_3ds') as fc.Arbitrary<Exclude<PaymentKind, 'wallet'>>;
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
];

/**
 * How every sequence starts, so that its moves have something to act on: a subscription with
 * some payment kind, paid at once (or left to the moves). Wallet payments get the funds first.
 */
export const openingMoves: fc.Arbitrary<Cmd[]> = fc.tuple(plan, kind, fc.boolean()).map(([p, k, paid]) => [
  ...(k === 'wallet' ? [new StaffCredit(2_000_000)] : []),
  new Subscribe(p, k),
  ...(paid && k !== 'wallet' ? [new Pay(0, 'settle')] : []),
]);
