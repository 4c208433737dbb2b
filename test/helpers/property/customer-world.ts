import { randomBytes, scryptSync } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import { Payment, Refund } from '../../../src/db/entities/payment.js';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { Topup } from '../../../src/db/entities/topup.js';
import { User } from '../../../src/db/entities/user.js';
import { Invoice } from '../../../src/db/entities/invoice.js';
import { CreditNote } from '../../../src/db/entities/credit-note.js';
import { Wallet, WalletTransaction } from '../../../src/db/entities/wallet.js';
import { ManualClock } from '../../../src/domain/clock.js';
import { add, compare, subtract, ZERO, type Money } from '../../../src/domain/money.js';
import { ACCESS_GRANTING_STATUSES, LIVE_SUBSCRIPTION_STATUSES } from '../../../src/domain/states/subscription-states.js';
import { dunningSchedule } from '../../../src/services/billing/dunning-schedule.js';
import { runBilling } from '../../../src/services/billing/run-billing.js';
import { reconcilePayments } from '../../../src/services/gateway-events/reconcile-payments.js';
import type { ServiceContext } from '../../../src/services/context.js';
import { CHARGEBACK_OVERLAP_REFERENCE, REFUND_OVERLAP_REFERENCE, REVERSAL_REFERENCE, TOPUP_CHARGEBACK_REFERENCE } from '../../../src/services/wallet/take-back-references.js';
import type { RequestRecord } from '../../../src/simulator/core.js';
import type { SimTransaction } from '../../../src/simulator/types.js';
import { ledgerIssues, verifyWallets } from '../../../src/services/wallet/verify-wallets.js';
import { ppnOf } from '../../../src/domain/tax.js';
import { creditsTax } from '../../../src/services/credit-notes/issue-credit-note.js';
import type { PlanSeed } from '../../../src/services/plans/seed-plans.js';
import type { DatabaseKind } from '../database.js';
import { Plan } from '../../../src/db/entities/plan.js';
import { Coupon, CouponRedemption, PromotionCode } from '../../../src/db/entities/coupon.js';
import { InvoiceLine } from '../../../src/db/entities/invoice.js';
import { makeCoupon, makePromotionCode } from '../coupons.js';
import { startTestServer, type Credentials, type HttpResult, type TestServer } from '../server.js';
import { createApiKey } from '../../../src/services/api-keys/manage-api-keys.js';
import { cliActor } from '../../../src/services/audit/actor.js';
import { accessRules } from '../../../src/services/subscriptions/has-access.js';
import { heldCodeProblems } from './held-codes-and-switches.js';
import { makePropertyMetrics, METERED_PLAN, usageProblems, WEEKLY_CALLS_CHARGE, type SentEvent } from './usage-rules.js';

/*
 * The world the customer-sequence property test (test/property/customer-sequences.test.ts)
 * drives: ONE real server per database over HTTP, with the built-in gateway simulator and a
 * manual clock, reused by every sequence; each sequence gets a fresh user and its own stretch of
 * time, so sequences cannot see each other. After every step `checkMoneyRules` reads the
 * user's rows and checks issue 14's invariants (see there).
 */

export const PROPERTY_PLANS: PlanSeed[] = [
  { slug: 'p-cheap', name: 'Cheap', description: 'Cheap monthly', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 1 },
  // Taxed plans (the seller is a PKP in this world): PPN on top, and PPN inside the price.
  { slug: 'p-dear', name: 'Dear', description: 'Dear monthly, PPN on top', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 2, tax_behavior: 'exclusive' },
  { slug: 'p-yearly', name: 'Yearly', description: 'Twelve months at once, PPN included', price: 1490000, currency: 'IDR', interval: 12, interval_unit: 'month', sort_order: 3, tax_behavior: 'inclusive' },
  // Usage (issue 42): calls at a standard rate, billed in arrears every week.
  { slug: 'p-weekly', name: 'Weekly', description: 'Every week, calls billed in arrears', price: 20000, currency: 'IDR', interval: 1, interval_unit: 'week', sort_order: 4, charges: WEEKLY_CALLS_CHARGE } as PlanSeed,
  { slug: 'p-trial', name: 'Trial', description: 'Dear monthly with a 14-day trial', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month', trial_period_days: 14, sort_order: 5 },
  // Seats: per unit (set after seeding), PPN on top.
  { slug: 'p-seats', name: 'Seats', description: 'Per seat, monthly, PPN on top', price: 40000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 6, tax_behavior: 'exclusive' },
  METERED_PLAN,
];
/** The per-unit plans of this world. */
export const PER_UNIT_PLANS = ['p-seats'];

/**
 * The promotion codes every sequence may type (made once per world): a percentage for ever, an
 * amount above the cheapest price once (a line discounted to zero), 100 % for two periods (an
 * invoice of nothing), a code for first purchases, one kept to some plans, and two with small
 * limits that the sequences exhaust between them (the limits are global, as in production).
 */
export const PROPERTY_CODES = ['prop25', 'PROPONCE', 'propfree', 'propfirst', 'propseats', 'proplimited', 'propcoupon3'] as const;
async function makePropertyCodes(em: EntityManager): Promise<void> {
  const limitedCoupon = await makeCoupon(em, { code: 'PROP-COUPON-3', percentOff: '15.00', duration: 'repeating', durationInCycles: 2, maxRedemptions: 3 });
  await makePromotionCode(em, { code: 'prop25', coupon: await makeCoupon(em, { code: 'PROP25', percentOff: '25.00', duration: 'forever' }) });
  await makePromotionCode(em, { code: 'PROPONCE', coupon: await makeCoupon(em, { code: 'PROPONCE', percentOff: null, amountOff: '60000.00', currency: 'IDR', duration: 'once' }) });
  await makePromotionCode(em, { code: 'propfree', coupon: await makeCoupon(em, { code: 'PROPFREE', percentOff: '100.00', duration: 'repeating', durationInCycles: 2 }) });
  await makePromotionCode(em, { code: 'propfirst', firstTimeOnly: true, coupon: await makeCoupon(em, { code: 'PROPFIRST', percentOff: '50.00', duration: 'once' }) });
  await makePromotionCode(em, { code: 'propseats', minimumAmount: '120000.00', coupon: await makeCoupon(em, { code: 'PROPSEATS', percentOff: '10.00', duration: 'forever', plans: ['p-seats'] }) });
  await makePromotionCode(em, { code: 'proplimited', maxRedemptions: 5, coupon: await makeCoupon(em, { code: 'PROPLIMITED', amountOff: '5000.00', percentOff: null, currency: 'IDR', duration: 'forever' }) });
  await makePromotionCode(em, { code: 'propcoupon3', coupon: limitedCoupon });
}
export const PLAN_SLUGS = PROPERTY_PLANS.map((p) => p.slug!);
/** The one plan with a trial: a user may start at most one trial (one per user per plan). */
export const TRIAL_PLANS = PROPERTY_PLANS.filter((p) => (p.trial_period_days ?? 0) > 0).length;

/** The seller of this world is a PKP: taxed plans carry PPN and invoices can be exported to Coretax. */
export const PROPERTY_SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000' };

const PASSWORD = 'property password';
/**
 * A scrypt hash with a tiny cost, made once: the parameters travel with the hash, so the server
 * verifies it in microseconds and a fresh user per sequence costs no 100 ms of scrypt.
 */
const CHEAP_HASH = (() => {
  const salt = randomBytes(16);
  const key = scryptSync(PASSWORD.normalize('NFKC'), salt, 64, { N: 16, r: 8, p: 1 });
  return ['scrypt', 16, 8, 1, salt.toString('base64'), key.toString('base64')].join('$');
})();

/**
 * Each sequence starts at 09:00 UTC on 15 January of year 2030 + 4k: never a 29 February within
 * two years, so every sequence sees the same calendar and a replay of one alone does the same.
 * Past year 9000 (about 1,700 sequences) it starts over: the sequences before were retired,
 * nothing of theirs is due any more.
 */
const startOf = (k: number) => new Date(Date.UTC(2030 + 4 * (k % 1700), 0, 15, 9, 0, 0));

export interface World {
  kind: DatabaseKind;
  server: TestServer;
  clock: ManualClock;
  sequences: number;
  /** An API key of scope `events`: sends the customers' usage (POST /events/batch/). */
  eventsKey: string;
  ctx(): ServiceContext;
  stop(): Promise<void>;
}

export async function startWorld(kind: DatabaseKind): Promise<World> {
  const clock = new ManualClock(startOf(0));
  const server = await startTestServer(kind, { clock, env: { LOGIN_THROTTLE_LIMIT: '100000000', ...PROPERTY_SELLER } });
  const { orm, config, gateway } = server.running.billing;
  const em = orm.em.fork();
  await makePropertyMetrics(em, clock.now());
  await server.seedPlans(PROPERTY_PLANS);
  const { key: eventsKey } = await createApiKey({ em: orm.em.fork() as EntityManager, config, clock }, cliActor(['property']), { name: 'property events', scope: 'events', reason: 'property test' });
  for (const plan of await em.find(Plan, { slug: { $in: PER_UNIT_PLANS } })) plan.perUnit = true;
  await em.flush();
  await makePropertyCodes(em);
  return {
    kind,
    server,
    clock,
    sequences: 0,
    eventsKey,
    ctx: () => ({ em: orm.em.fork() as EntityManager, config, gateway, clock }),
    stop: () => server.stop(),
  };
}

/** What one sequence knows: its user and the gateway orders it made (for the simulator steps). */
export interface Customer {
  world: World;
  user: Credentials & { id: string };
  /** Order ids of the user's gateway payments and top-ups, in creation order. */
  orders: string[];
  /** What happened, one line per step, printed with a failure. */
  trace: string[];
  /** Where this sequence's stretch of time starts (payments sync asks only about what was made since). */
  start: Date;
  /**
   * Orders the gateway moved without the service hearing it (a lost notification, a lost answer):
   * the gateway-truth check waits for them until a sync (or a retry) has had the chance to ask.
   */
  unheard: Set<string>;
  /**
   * Orders whose notifications a move forged in a way the simulator cannot act (a settlement of a
   * canceled order, a refund before the settlement, a reversal of a card): the gateway's record
   * of them is not the truth of this sequence, so the gateway-truth check skips them and no
   * gateway move acts on them.
   */
  offBook: Set<string>;
  /** Usage events the service acknowledged (202), as sent. */
  events: SentEvent[];
}

export async function newCustomer(world: World): Promise<Customer> {
  const start = startOf(world.sequences);
  world.clock.set(start);
  world.sequences += 1;
  const em = world.server.running.billing.orm.em.fork();
  const username = `prop_${world.sequences}_${randomBytes(3).toString('hex')}`;
  const user = em.create(User, {
    username,
    email: `${username}@example.com`,
    passwordHash: CHEAP_HASH,
    isStaff: false,
    firstName: 'Prop',
    lastName: 'Customer',
    phone: null,
  } as User);
  await em.flush();
  return { world, user: { id: user.id, username, password: PASSWORD }, orders: [], trace: [], start, unheard: new Set(), offBook: new Set(), events: [] };
}

/** Ends what the customer left live, so later sequences' billing runs never catch up on it. */
export async function retireCustomer(c: Customer): Promise<void> {
  const em = c.world.server.running.billing.orm.em.fork();
  const live = await em.find(Subscription, { user: c.user.id, status: { $in: [...LIVE_SUBSCRIPTION_STATUSES] } });
  for (const sub of live) await api(c, 'POST', `/subscriptions/${sub.id}/cancel/`, { immediate: true, reason: 'property test done' });
}

/** A request as the customer; any 5xx is a failure of the service (bad input is a 4xx). */
export async function api(c: Customer, method: string, path: string, body?: unknown): Promise<HttpResult> {
  const res = await c.world.server.api(method, path, { auth: c.user, body });
  c.trace.push(`  ${method} ${path} ${body === undefined ? '' : JSON.stringify(body)} -> ${res.status}${res.status >= 400 ? ` ${res.body?.code ?? ''}` : ''}`);
  // The gateway refusing (502 gateway_error, 503 gateway_unavailable) is an answer; any other 5xx is a failure.
  const gatewayAnswer = (res.status === 502 || res.status === 503) && ['gateway_error', 'gateway_unavailable'].includes(res.body?.code);
  if (res.status >= 500 && !gatewayAnswer) throw new Error(`${method} ${path} answered ${res.status}: ${res.text}`);
  return res;
}

/**
 * A simulator command (the gateway side); refused moves (already final) are fine, a 5xx from our
 * webhook is not. `query` as the development commands take it (`notify=false`, `customer_fee=N`).
 * Returns the simulator's HTTP status (200 when the transaction moved).
 */
export async function gatewayAction(c: Customer, orderId: string, action: string, body: unknown = {}, query = ''): Promise<number> {
  const res = await c.world.server.request('POST', `/_simulator/v2/${encodeURIComponent(orderId)}/${action}${query ? `?${query}` : ''}`, { body });
  const answered = res.body?.notification?.http_status as number | null | undefined;
  c.trace.push(`  simulator ${action}${query ? `?${query}` : ''} ${orderId} ${JSON.stringify(body)} -> ${res.status}${answered ? `, webhook ${answered}` : ''}${res.status >= 400 ? ` ${res.body?.error ?? ''}` : ''}`);
  if (answered !== undefined && answered !== null && answered >= 500) throw new Error(`the webhook answered ${answered} to the simulator's ${action} of ${orderId}`);
  return res.status;
}

/** The simulator's own record of an order (in-process), or undefined when the gateway never had it. */
export function gatewayRecord(c: Customer, orderId: string): SimTransaction | undefined {
  return c.world.server.running.billing.simulator!.transaction(orderId);
}

/** Arms a simulator fault (`POST /_simulator/faults`) for the next matching Core API call. */
export async function armFault(c: Customer, fault: Record<string, unknown>): Promise<void> {
  const res = await c.world.server.request('POST', '/_simulator/faults', { body: fault });
  c.trace.push(`  simulator fault ${JSON.stringify(fault)} -> ${res.status}`);
  if (res.status >= 300) throw new Error(`the simulator refused the fault ${JSON.stringify(fault)}: ${res.status} ${res.text}`);
}

/** Disarms whatever fault a move armed and its call did not use (the service refused before asking the gateway). */
export function disarmFaults(c: Customer): void {
  c.world.server.running.billing.simulator!.setFault({ mode: 'none' });
}

/** Where the simulator's log of Core API calls stands now (for `calledSince`). */
export function gatewayMark(c: Customer): RequestRecord | undefined {
  return c.world.server.running.billing.simulator!.requests().at(-1);
}

/** Whether the service made a Core API call of this operation since `mark` (the log keeps its last 1,000 calls). */
export function calledSince(c: Customer, mark: RequestRecord | undefined, operation: string): boolean {
  const log = c.world.server.running.billing.simulator!.requests();
  const from = mark === undefined ? 0 : log.lastIndexOf(mark) + 1;
  return log.slice(from).some((r) => r.operation === operation);
}

/**
 * `billing-admin payments sync`, in-process, over this sequence's stretch of time (`--since` its
 * start, so earlier sequences' payments are not asked again). What it could see (every order
 * not final here, and those settled within RECONCILE_LOOKBACK_DAYS) is heard from then on.
 */
export async function paymentsSync(c: Customer): Promise<void> {
  const items = await reconcilePayments(c.world.ctx(), { since: c.start });
  const changed = items.filter((i) => i.statusBefore !== i.statusAfter || i.changes.length > 0);
  c.trace.push(`  payments sync: ${items.length} asked${changed.map((i) => `; ${i.orderId} ${i.statusBefore} -> ${i.statusAfter} (${i.gatewayStatus}, ${i.result})`).join('')}`);
  for (const i of items.filter((x) => x.result === 'gateway_error')) c.trace.push(`  payments sync could not ask about ${i.orderId}: ${i.error}`);
  await markHeard(c, null);
}

/**
 * Orders a sync has had the chance to ask about are heard again: those of `subscriptionId` (the
 * customer's subscription sync) or all (payments sync), when not final here or settled within
 * the look back. NOTE: a lost notification of an order settled before the look back is never
 * asked about (RECONCILE_LOOKBACK_DAYS): it stays unheard, and unchecked.
 */
export async function markHeard(c: Customer, subscriptionId: string | null): Promise<void> {
  if (c.unheard.size === 0) return;
  const em = c.world.server.running.billing.orm.em.fork();
  const cutoff = c.world.clock.now().getTime() - c.world.server.running.billing.config.reconcileLookbackDays * 86_400_000;
  const inReach = (status: string, paidAt: Date | null) => ['pending'].includes(status) || (['settled', 'partially_refunded', 'success'].includes(status) && paidAt !== null && paidAt.getTime() >= cutoff);
  for (const orderId of [...c.unheard]) {
    const p = await em.findOne(Payment, { orderId });
    if (p && (subscriptionId === null || p.subscription?.id === subscriptionId) && (inReach(p.status, p.paidAt) || (await em.count(Refund, { payment: p, status: 'pending', destination: 'gateway' })) > 0)) c.unheard.delete(orderId);
    const t = subscriptionId === null ? await em.findOne(Topup, { orderId }) : null;
    if (t && inReach(t.status, t.paidAt)) c.unheard.delete(orderId);
  }
}

export async function billingRun(c: Customer): Promise<void> {
  const report = await runBilling(c.world.ctx());
  // A subscription the run could not bill is reported, not thrown (docs/billing.md, 'billing-admin billing run'); the money rules judge what it left.
  c.trace.push(`  billing run at ${c.world.clock.now().toISOString()}: ${report.subscriptions} subscription(s)${report.errors.map((e) => `; not billed: ${e.message}`).join('')}`);
}

const sum = (values: Money[]): Money => values.reduce((a, b) => add(a, b), ZERO);
const PAID: readonly string[] = ['settled', 'partially_refunded', 'refunded'];
const STILL_PAID: readonly string[] = ['settled', 'partially_refunded'];
/** Payments the gateway took back whole after they settled: a reversal (`deny`, `cancel`) or a chargeback of all that was left. */
const TAKEN_BACK: readonly string[] = ['reversed', 'charged_back'];

/**
 * Issue 14's invariants for one user, from the stored rows:
 * 1. wallet balance + refunds paid out to the customer ≤ money paid in through the gateway
 *    (settled payments other than wallet ones, successful top-ups) + staff adjustments;
 * 2. per payment, its refunds plus the wallet credits made from it (less what a reversal or a
 *    gateway refund took back from them) never exceed it; per subscription, likewise with the
 *    proration credits of its plan changes;
 * 3. a subscription grants access only while a settled payment (not fully refunded) or a trial
 *    covers now (its period end plus ACCESS_GRACE_MINUTES, or within the renewal's due days, the
 *    grace every unpaid renewal gets); a wallet payment counts only while the wallet is not in
 *    debt (issue 28); a subscription whose status still shows a period that is over must give
 *    no access (GET /subscriptions/active/ answers 404);
 * 4. one trial per user per plan;
 * 5. the user's wallet balance equals its ledger (the per-wallet check of `wallet verify`);
 * 6. no payment is kept silently: of the payments of one invoice one pays it, the others are
 *    credited to the wallet; so is one settled after its subscription was canceled; every
 *    successful top-up is in the ledger;
 * 7. every credit to the customer against an invoice has its credit note of the same amount
 *    (issue 20): a payment's refunds once its money arrived (but for what a gateway refund paid
 *    out of a wallet credit, which that credit's note documents), each proration credit and each
 *    unusable settlement credited to the wallet; and per invoice the credit notes never exceed
 *    what was paid on it.
 * Returns the violations, empty when all hold.
 */
export async function checkMoneyRules(c: Customer): Promise<string[]> {
  const em = c.world.server.running.billing.orm.em.fork();
  const now = c.world.clock.now();
  const config = c.world.server.running.billing.config;
  const userId = c.user.id;
  const problems: string[] = [];

  const payments = await em.find(Payment, { user: userId }, { populate: ['invoice'], orderBy: { createdAt: 'asc', id: 'asc' } });
  const refunds = await em.find(Refund, { payment: { user: userId } });
  const topups = await em.find(Topup, { user: userId, status: 'success' });
  const wallet = await em.findOne(Wallet, { user: userId });
  const ledger = wallet ? await em.find(WalletTransaction, { wallet }, { orderBy: { createdAt: 'asc', id: 'asc' } }) : [];
  const subs = await em.find(Subscription, { user: userId }, { populate: ['plan'] });
  const openInvoices = await em.find(Invoice, { user: userId, status: 'open' });

  // 1. No money from nowhere.
  // A reversal returns to the customer what the payment still held (its gross less what was
  // refunded before): what was refunded earlier stays money that came in and went back out.
  const refundedBeforeReversal = (p: Payment) => sum(refunds.filter((r) => r.payment.id === p.id && r.status === 'succeeded' && r.destination === 'gateway').map((r) => r.amount));
  // A chargeback of all that was left is counted as a reversal is; what a partial one took back is money out.
  const paidIn = add(
    sum(payments.filter((p) => p.paymentType !== 'wallet' && PAID.includes(p.status)).map((p) => p.grossAmount)),
    add(sum(payments.filter((p) => p.paymentType !== 'wallet' && TAKEN_BACK.includes(p.status)).map(refundedBeforeReversal)), sum(topups.map((t) => t.amount))),
  );
  const chargedBackPartly = sum(payments.filter((p) => p.paymentType !== 'wallet' && PAID.includes(p.status)).map((p) => p.chargebackAmount));
  const signed = (e: WalletTransaction) => (e.kind === 'credit' ? e.amount : subtract(ZERO, e.amount));
  const staff = sum(ledger.filter((e) => e.source === 'adjustment').map(signed));
  const paidOut = add(sum(refunds.filter((r) => r.destination === 'gateway' && r.status === 'succeeded').map((r) => r.amount)), chargedBackPartly);
  const balance = wallet?.balance ?? ZERO;
  if (compare(add(balance, paidOut), add(paidIn, staff)) > 0) {
    problems.push(`money from nowhere: wallet ${balance} + refunded and charged back to the customer ${paidOut} > paid in ${paidIn} + staff ${staff}`);
  }

  // 2. Nothing given back beyond what a payment brought.
  const refundedOf = (p: Payment) => sum(refunds.filter((r) => r.payment.id === p.id && r.status === 'succeeded').map((r) => r.amount));
  // Wallet credits taken back again: by a reversal of the payment they came from
  // (reverse-payment.ts), or where a gateway refund paid out part of them (apply-refund.ts).
  const takenBack = (paymentIds: string[]) =>
    sum(
      ledger
        .filter((e) => e.kind === 'debit' && e.source === 'payment' && [REVERSAL_REFERENCE, REFUND_OVERLAP_REFERENCE, CHARGEBACK_OVERLAP_REFERENCE].some((prefix) => e.referenceId?.startsWith(prefix)))
        .filter((e) => paymentIds.some((id) => e.referenceId?.includes(id)))
        .map((e) => e.amount),
    );
  const creditedTo = (ids: string[]) =>
    sum(ledger.filter((e) => e.kind === 'credit' && e.source !== 'adjustment' && e.source !== 'topup' && ids.some((id) => e.referenceId?.includes(id)) && !refunds.some((r) => r.id === e.referenceId)).map((e) => e.amount));
  // What the cardholder's bank charged back went back to the customer too.
  for (const p of payments.filter((x) => PAID.includes(x.status) || x.status === 'charged_back')) {
    const back = add(add(refundedOf(p), p.chargebackAmount), subtract(creditedTo([p.id]), takenBack([p.id])));
    if (compare(back, p.grossAmount) > 0) problems.push(`payment ${p.orderId} (${p.grossAmount}) gave back ${back}: refunds ${refundedOf(p)}, charged back ${p.chargebackAmount}`);
  }
  for (const s of subs) {
    const all = payments.filter((p) => p.subscription?.id === s.id);
    const own = all.filter((p) => PAID.includes(p.status));
    const paid = sum(own.map((p) => p.grossAmount));
    // A reversed payment no longer counts as paid, and what it credited was taken back with it.
    const back = add(add(sum(own.map(refundedOf)), sum(own.map((p) => p.chargebackAmount))), subtract(creditedTo([s.id, ...own.map((p) => p.id)]), takenBack(all.map((p) => p.id))));
    if (compare(back, paid) > 0) problems.push(`subscription ${s.id} (${s.plan.slug}) was paid ${paid} but gave back ${back} in refunds and credits`);
  }

  // 3. Access only while paid for, or in a trial.
  for (const s of subs.filter((x) => ACCESS_GRANTING_STATUSES.includes(x.status))) {
    // The renewal (or the charge at a trial's end) is due some days after its invoice: access goes on meanwhile.
    const inGrace = openInvoices.some((i) => i.subscription?.id === s.id && i.billingReason === 'subscription_cycle' && dunningSchedule(i.createdAt, config).dueAt.getTime() > now.getTime());
    if (s.status === 'trialing') {
      if (!inGrace && (!s.trialEnd || s.trialEnd.getTime() <= now.getTime())) {
        // NOTE: a trial whose first charge failed on our side (a wrong server key, the gateway
        // down) stays trialing: merchant-side failures move no subscription (docs/billing.md,
        // 'Dunning'; long seed 617). What must hold is the access, the service's own answer over HTTP.
        const active = await c.world.server.api('GET', '/subscriptions/active/', { auth: c.user });
        if (active.status !== 404 || active.body?.code !== 'not_found') {
          problems.push(`subscription ${s.id} is trialing and gives access (GET /subscriptions/active/ ${active.status}) though no trial covers ${now.toISOString()}`);
        }
      }
      continue;
    }
    // NOTE: the access rule (docs/billing.md) gives a paid period ACCESS_GRACE_MINUTES beyond its
    // end, for the pass that renews it: the model counts it the same way.
    const graceMs = accessRules(config).graceMinutes * 60_000;
    const periodCovers = s.currentPeriodEnd !== null && s.currentPeriodEnd.getTime() + graceMs > now.getTime();
    // A wallet in debt (a reversal took back the money it had) paid for nothing (issue 28, row 5).
    const walletInDebt = compare(wallet?.balance ?? ZERO, ZERO) < 0;
    const paidFor = payments.some(
      (p) =>
        p.subscription?.id === s.id &&
        !(walletInDebt && p.paymentType === 'wallet') &&
        STILL_PAID.includes(p.status) &&
        p.paidAt !== null &&
        // Money the gateway still holds: refunded and charged-back money does not count. An
        // invoice that asked nothing (a discount of all of it) is paid by a payment of nothing.
        (compare(subtract(p.grossAmount, add(refundedOf(p), p.chargebackAmount)), ZERO) > 0 || (compare(p.grossAmount, ZERO) === 0 && p.invoice !== null && compare(p.invoice.totalAmount, ZERO) === 0)) &&
        (p.invoice?.billingReason !== 'subscription_cycle' || (p.invoice.periodEnd !== null && s.currentPeriodEnd !== null && p.invoice.periodEnd.getTime() >= s.currentPeriodEnd.getTime())),
    );
    if (!((periodCovers && paidFor) || inGrace)) {
      // NOTE: the status may show a period that ended until the next pass renews it (a catch-up
      // renewal paid after the pass, seed 201625129: it buys the period it was ordered for, and
      // that period is over). What must hold is the access: the service's own answer, over HTTP.
      const active = await c.world.server.api('GET', '/subscriptions/active/', { auth: c.user });
      if (active.status !== 404 || active.body?.code !== 'not_found') {
        problems.push(`subscription ${s.id} (${s.plan.slug}) is ${s.status} and gives access (GET /subscriptions/active/ ${active.status}) at ${now.toISOString()} without a settled payment covering now (period end ${s.currentPeriodEnd?.toISOString() ?? 'none'})`);
      }
    }
  }

  // 4. One trial per user per plan.
  const trials = subs.filter((s) => s.trialEnd !== null).length;
  if (trials > TRIAL_PLANS) problems.push(`${trials} trials started for ${TRIAL_PLANS} trial plan(s)`);

  // 6. No payment is kept silently: money that arrived and bought nothing is in the wallet.
  const creditedLate = (p: Payment) => ledger.some((e) => e.kind === 'credit' && e.referenceId === `late-settlement:${p.id}`);
  const byInvoice = new Map<string, Payment[]>();
  for (const p of payments.filter((x) => PAID.includes(x.status) && x.invoice)) byInvoice.set(p.invoice!.id, [...(byInvoice.get(p.invoice!.id) ?? []), p]);
  for (const [invoiceId, paid] of byInvoice) {
    // A payment refunded in full (at the gateway, even before its settlement reached us) kept nothing either.
    const kept = paid.filter((p) => !creditedLate(p) && p.status !== 'refunded');
    if (kept.length > 1) problems.push(`invoice ${invoiceId} kept ${kept.length} payments (${kept.map((p) => p.orderId).join(', ')}) and credited none of the extra ones`);
  }
  for (const p of payments.filter((x) => PAID.includes(x.status) && x.paymentType !== 'wallet')) {
    const sub = subs.find((x) => x.id === p.subscription?.id);
    if (sub?.canceledAt && p.paidAt && p.paidAt.getTime() > sub.canceledAt.getTime() && !creditedLate(p)) {
      problems.push(`payment ${p.orderId} settled after its subscription was canceled and was not credited to the wallet`);
    }
  }
  for (const t of topups) {
    if (!ledger.some((e) => e.source === 'topup' && e.referenceId === t.id)) problems.push(`top-up ${t.orderId} succeeded but the wallet was not credited`);
  }

  // 5. The wallet equals its ledger.
  if (wallet) problems.push(...ledgerIssues(wallet.balance, ledger).issues.map((i) => `wallet: ${i}`));

  // 7. Every credit has its credit note; no invoice credited past what was paid on it.
  problems.push(...(await creditNoteProblems(em, payments, refunds, ledger, userId)));

  // 8. The gateway is the truth.
  const allTopups = await em.find(Topup, { user: userId });
  problems.push(...gatewayTruthProblems(c, payments, refunds, allTopups, ledger));

  // 9. Refunds and chargebacks together never take more than a payment took in (a chargeback's
  // refunds[] entries are the chargeback's, never refunds as well).
  for (const p of payments.filter((x) => x.paymentType !== 'wallet')) {
    const out = add(p.refundedAmount, p.chargebackAmount);
    if (compare(out, p.grossAmount) > 0) problems.push(`payment ${p.orderId} (${p.grossAmount}) records ${p.refundedAmount} refunded and ${p.chargebackAmount} charged back: ${out} in all`);
  }

  // 10. A taxed invoice's PPN, after every credit note, is what Coretax recomputes from its DPP.
  problems.push(...(await fakturProblems(em, userId)));

  // 11. Discounts and codes: no line discounted below zero, invoices add up, no limit exceeded.
  problems.push(...(await discountProblems(em, userId)));

  // 12. Usage: every acknowledged event stored once, billed exactly once, each line its window's units.
  problems.push(...(await usageProblems(em, userId, c.events)));

  // 13. A promotion code is spent only by money: every redemption stands on a pending or paid payment.
  problems.push(...(await heldCodeProblems(em, userId)));
  return problems;
}

/**
 * Rule 11b: a coupon that lasts a number of periods discounts at most that many: the periods a
 * subscription was billed at a discount (its invoices not voided that discount a period line:
 * a first period, a renewal, the new period of a change across intervals) are never more than
 * the periods of the coupons it redeemed. A coupon for ever has no bound.
 */
async function discountedPeriodProblems(em: EntityManager, s: Subscription, linesByInvoice: Map<string, InvoiceLine[]>): Promise<string[]> {
  const redemptions = await em.find(CouponRedemption, { subscription: s.id }, { populate: ['coupon'] });
  if (redemptions.some((r) => r.coupon.duration === 'forever')) return [];
  const bound = redemptions.reduce((n, r) => n + (r.coupon.duration === 'once' ? 1 : r.coupon.durationInCycles ?? 0), 0);
  const invoices = await em.find(Invoice, { subscription: s.id, status: { $ne: 'void' } });
  const priced = invoices.filter((i) => (linesByInvoice.get(i.id) ?? []).some((l) => l.kind === 'subscription' && compare(l.discountAmount, ZERO) > 0));
  // An open invoice whose every payment lapsed unpaid gave its code back (paying it again counts
  // the code again): only a discount that money holds, paid or pending, spends a period.
  const held = await em.find(Payment, { invoice: { $in: priced.map((i) => i.id) }, $or: [{ status: 'pending' }, { paidAt: { $ne: null } }] }, { fields: ['invoice'] });
  const heldInvoices = new Set(held.map((p) => p.invoice?.id));
  const discounted = priced.filter((i) => i.status === 'paid' || heldInvoices.has(i.id));
  if (discounted.length <= bound) return [];
  return [`subscription ${s.id} was billed ${discounted.length} discounted periods (${discounted.map((i) => i.number).join(', ')}), its coupons give ${bound}`];
}

/**
 * Rule 11: a discount never makes a line negative nor takes more than the line's amount; an
 * invoice's discount is its lines' and its total is what its lines, less the discount, come to
 * with PPN; a subscription's quantity stays within 1..10,000 (1 on a plan not per unit); and
 * no code or coupon is ever redeemed past its limit, each redemption counted exactly once.
 */
async function discountProblems(em: EntityManager, userId: string): Promise<string[]> {
  const problems: string[] = [];
  const lines = await em.find(InvoiceLine, { invoice: { user: userId } }, { populate: ['invoice'] });
  const byInvoice = new Map<string, InvoiceLine[]>();
  for (const l of lines) {
    byInvoice.set(l.invoice.id, [...(byInvoice.get(l.invoice.id) ?? []), l]);
    if (compare(l.discountAmount, ZERO) < 0) problems.push(`invoice ${l.invoice.number} line ${l.position} has a negative discount ${l.discountAmount}`);
    if (compare(l.discountAmount, ZERO) > 0 && compare(l.discountAmount, l.amount) > 0) problems.push(`invoice ${l.invoice.number} line ${l.position} is discounted ${l.discountAmount}, more than its amount ${l.amount}`);
    if (compare(l.discountAmount, ZERO) > 0 && l.kind === 'credit') problems.push(`invoice ${l.invoice.number} discounts a credit line`);
  }
  for (const [, own] of byInvoice) {
    const invoice = own[0].invoice;
    const discount = sum(own.map((l) => l.discountAmount));
    if (compare(discount, invoice.discountAmount) !== 0) problems.push(`invoice ${invoice.number} says discount ${invoice.discountAmount}, its lines ${discount}`);
    const net = subtract(invoice.subtotal, invoice.discountAmount);
    const expected = invoice.taxBehavior === 'exclusive' ? add(net, invoice.taxAmount) : net;
    if (compare(net, ZERO) >= 0 && compare(expected, invoice.totalAmount) !== 0) problems.push(`invoice ${invoice.number}: subtotal ${invoice.subtotal} − discount ${invoice.discountAmount} (+ PPN ${invoice.taxAmount}) is not its total ${invoice.totalAmount}`);
  }
  for (const s of await em.find(Subscription, { user: userId }, { populate: ['plan'] })) {
    if (s.quantity < 1 || s.quantity > 10_000 || (!s.plan.perUnit && s.quantity !== 1)) problems.push(`subscription ${s.id} (${s.plan.slug}) has quantity ${s.quantity}`);
    if (s.discount?.cycles_left != null && s.discount.cycles_left < 0) problems.push(`subscription ${s.id} has a discount with ${s.discount.cycles_left} periods left`);
    problems.push(...(await discountedPeriodProblems(em, s, byInvoice)));
  }
  for (const promo of await em.find(PromotionCode, {})) {
    const counted = await em.count(CouponRedemption, { promotionCode: promo.id });
    if (promo.maxRedemptions !== null && promo.timesRedeemed > promo.maxRedemptions) problems.push(`promotion code ${promo.code} redeemed ${promo.timesRedeemed} times, past its limit ${promo.maxRedemptions}`);
    if (counted !== promo.timesRedeemed) problems.push(`promotion code ${promo.code} counts ${promo.timesRedeemed} redemptions, ${counted} are recorded`);
  }
  for (const coupon of await em.find(Coupon, {})) {
    const counted = await em.count(CouponRedemption, { coupon: coupon.id });
    if (coupon.maxRedemptions !== null && coupon.timesRedeemed > coupon.maxRedemptions) problems.push(`coupon ${coupon.code} redeemed ${coupon.timesRedeemed} times, past its limit ${coupon.maxRedemptions}`);
    if (counted !== coupon.timesRedeemed) problems.push(`coupon ${coupon.code} counts ${coupon.timesRedeemed} redemptions, ${counted} are recorded`);
  }
  return problems;
}

/**
 * Rule 10: for every taxed invoice, its DPP less the DPP its credit notes took off, and its PPN
 * less theirs, agree as Coretax computes PPN from DPP (ppnOf): an amended faktur then matches
 * Coretax to the rupiah. Each note that gives back supply keeps amount = tax_base + tax_amount
 * + tax_rounding, its rounding at most one rupiah; the others (chargebacks, unusable
 * settlements) take nothing off the faktur.
 */
async function fakturProblems(em: EntityManager, userId: string): Promise<string[]> {
  const problems: string[] = [];
  const invoices = await em.find(Invoice, { user: userId, taxBehavior: { $ne: 'none' }, taxAmount: { $gt: ZERO } });
  if (invoices.length === 0) return problems;
  const notes = await em.find(CreditNote, { invoice: { $in: invoices.map((i) => i.id) } });
  for (const invoice of invoices) {
    // Only credits that give back supply amend the faktur: a chargeback is a dispute, and a
    // settlement nobody could use paid for no supply (creditsTax, docs/tax.md).
    const own = notes.filter((n) => n.invoice.id === invoice.id && creditsTax(n.reason));
    const base = subtract(invoice.taxBase, sum(own.map((n) => n.taxBase)));
    const ppn = subtract(invoice.taxAmount, sum(own.map((n) => n.taxAmount)));
    const expected = compare(base, ZERO) > 0 ? ppnOf(base, invoice.currency).taxAmount : ZERO;
    if (compare(ppn, expected) !== 0) {
      problems.push(`invoice ${invoice.number}: DPP ${base} and PPN ${ppn} after ${own.length} credit note(s), but Coretax computes PPN ${expected} on that DPP`);
    }
    for (const n of notes.filter((x) => x.invoice.id === invoice.id)) {
      const parts = add(add(n.taxBase, n.taxAmount), n.taxRounding);
      const tooRound = compare(n.taxRounding, '1.00') > 0 || compare(n.taxRounding, '-1.00') < 0;
      if (creditsTax(n.reason) && (compare(parts, n.amount) !== 0 || tooRound)) {
        problems.push(`credit note ${n.number} of ${n.amount}: DPP ${n.taxBase} + PPN ${n.taxAmount} + rounding ${n.taxRounding} = ${parts}`);
      }
      if (!creditsTax(n.reason) && (compare(n.taxAmount, ZERO) !== 0 || compare(n.taxBase, ZERO) !== 0 || n.taxAction !== 'none')) {
        problems.push(`${n.reason} credit note ${n.number} changes the faktur (DPP ${n.taxBase}, PPN ${n.taxAmount}, ${n.taxAction}): it gives back no supply`);
      }
    }
  }
  return problems;
}

/** What one side says of an order's money: never paid, taken back whole (reversal, void), or paid with what went back. */
type MoneyView = { state: 'unpaid' } | { state: 'taken_back' } | { state: 'paid'; gross: Money; refunded: Money; chargedBack: Money };

const money = (n: number): Money => `${n}.00` as Money;
const GATEWAY_PAID = ['settlement', 'refund', 'partial_refund', 'chargeback', 'partial_chargeback'];

function gatewayView(tx: SimTransaction | undefined): MoneyView {
  if (!tx) return { state: 'unpaid' };
  const paid = (status: string, fraud: string | null) => GATEWAY_PAID.includes(status) || (status === 'capture' && fraud === 'accept');
  if (paid(tx.transaction_status, tx.fraud_status)) {
    return { state: 'paid', gross: money(tx.gross_amount), refunded: money(tx.refunds.reduce((a, r) => a + r.refund_amount, 0)), chargedBack: money(tx.chargebacks.reduce((a, r) => a + r.chargeback_amount, 0)) };
  }
  // A deny or cancel after the money was taken: a reversal, or the void of a capture.
  const wasPaid = tx.history.some((h) => paid(h.transaction_status, h.fraud_status));
  return wasPaid && ['deny', 'cancel'].includes(tx.transaction_status) ? { state: 'taken_back' } : { state: 'unpaid' };
}

function describeView(v: MoneyView): string {
  return v.state === 'paid' ? `paid ${v.gross}, refunded ${v.refunded}, charged back ${v.chargedBack}` : v.state.replace('_', ' ');
}

/**
 * 8. The gateway is the truth (docs/gateway.md): for every order of the user, what the service
 * records as paid, refunded (at the gateway: refunds to the wallet never reach it) and charged
 * back equals what the simulator's transaction says; a paid one's gross there is ours plus the
 * customer's imposed fee. A capture voided by our refund is taken back on both sides. Orders a
 * move lost the news of wait for a sync (`Customer.unheard`); orders whose notifications were
 * forged beyond what the simulator can do are skipped (`Customer.offBook`).
 */
function gatewayTruthProblems(c: Customer, payments: Payment[], refunds: Refund[], topups: Topup[], ledger: WalletTransaction[]): string[] {
  const problems: string[] = [];
  const skip = (orderId: string) => c.unheard.has(orderId) || c.offBook.has(orderId);
  const compareViews = (orderId: string, ours: MoneyView, theirs: MoneyView) => {
    // Money that came and went at the gateway (a capture we withdrew and voided before its
    // answer was read here) and never counted here is the same money: none kept on either side.
    const netNothing = ours.state === 'unpaid' && theirs.state === 'taken_back';
    const same =
      netNothing ||
      (ours.state === theirs.state &&
      (ours.state !== 'paid' || theirs.state !== 'paid' || (compare(ours.gross, theirs.gross) === 0 && compare(ours.refunded, theirs.refunded) === 0 && compare(ours.chargedBack, theirs.chargedBack) === 0)));
    if (!same) problems.push(`gateway truth: order ${orderId} is ${describeView(ours)} here but ${describeView(theirs)} at the gateway`);
  };
  for (const p of payments.filter((x) => x.paymentType !== 'wallet' && !skip(x.orderId))) {
    const own = refunds.filter((r) => r.payment.id === p.id && r.status === 'succeeded' && r.destination === 'gateway');
    const voided = p.status === 'refunded' && own.some((r) => r.method === 'cancel');
    let ours: MoneyView;
    if (voided || TAKEN_BACK.includes(p.status)) ours = p.status === 'charged_back' ? paidView(p.grossAmount, p.customerFee, own, p.chargebackAmount) : { state: 'taken_back' };
    else if (PAID.includes(p.status)) ours = paidView(p.grossAmount, p.customerFee, own, p.chargebackAmount);
    else ours = { state: 'unpaid' };
    const tx = gatewayRecord(c, p.orderId);
    const theirs = gatewayView(tx);
    // A dashboard refund may give back part of the customer's imposed fee as well: money the
    // service never billed; the payment records at most its own gross (long seed 302912243).
    if (theirs.state === 'paid' && compare(theirs.refunded, p.grossAmount) > 0) theirs.refunded = p.grossAmount;
    compareViews(p.orderId, ours, theirs);
  }
  for (const t of topups.filter((x) => !skip(x.orderId))) {
    // Partial chargebacks debit the wallet part by part; the chargeback of the rest takes what was left as a reversal does.
    const takenBy = (e: WalletTransaction) => e.referenceId?.startsWith(`${TOPUP_CHARGEBACK_REFERENCE}${t.id}:`) || (t.status === 'charged_back' && e.referenceId === `${REVERSAL_REFERENCE}${t.id}`);
    const chargedBack = sum(ledger.filter((e) => e.kind === 'debit' && e.source === 'topup' && takenBy(e)).map((e) => e.amount));
    const refunded = { amount: t.refundedAmount } as Refund;
    let ours: MoneyView;
    if (t.status === 'reversed') ours = { state: 'taken_back' };
    else if (t.status === 'success' || t.status === 'charged_back') ours = paidView(t.amount, ZERO, [refunded], chargedBack);
    else ours = { state: 'unpaid' };
    // A top-up records no imposed fee (only payments have customer_fee): what it credits is the gateway's original amount.
    const tx = gatewayRecord(c, t.orderId);
    const theirs = gatewayView(tx);
    const info = (tx?.metadata as { extra_info?: { gross_amount_info?: { customer_imposed_payment_fee?: string | number } } } | null)?.extra_info?.gross_amount_info;
    if (theirs.state === 'paid' && info?.customer_imposed_payment_fee !== undefined) {
      theirs.gross = subtract(theirs.gross, add(ZERO, String(info.customer_imposed_payment_fee)));
      // A refund of the whole gross at the gateway gives the customer the fee back too: money
      // the service never held (long seed 3133026555, path 307:0:7:5:4:4:5:0:4:5). Ours is the
      // original amount, so the top-up records at most that.
      if (compare(theirs.refunded, theirs.gross) > 0) theirs.refunded = theirs.gross;
    }
    compareViews(t.orderId, ours, theirs);
  }
  return problems;
}

function paidView(gross: Money, fee: Money, refunds: Pick<Refund, 'amount'>[], chargedBack: Money): MoneyView {
  return { state: 'paid', gross: add(gross, fee), refunded: sum(refunds.map((r) => r.amount)), chargedBack };
}

const CREDIT_NOTE_NUMBER = /^CN-\d{4}-\d{6}$/;

async function creditNoteProblems(em: EntityManager, payments: Payment[], refunds: Refund[], ledger: WalletTransaction[], userId: string): Promise<string[]> {
  const problems: string[] = [];
  const notes = await em.find(CreditNote, { user: userId });
  for (const n of notes.filter((x) => !CREDIT_NOTE_NUMBER.test(x.number))) problems.push(`credit note ${n.number} is not numbered CN-YYYY-NNNNNN`);
  const noted = (where: (n: CreditNote) => boolean) => sum(notes.filter(where).map((n) => n.amount));
  for (const p of payments) {
    // Refunds reported before the payment's money arrived are documented when it arrives.
    // What a refund paid out of a wallet credit (taken back from the wallet) is documented by that credit's note.
    const overlap = sum(ledger.filter((e) => e.kind === 'debit' && e.referenceId?.startsWith(`${REFUND_OVERLAP_REFERENCE}${p.id}:`)).map((e) => e.amount));
    const refunded = p.paidAt ? subtract(sum(refunds.filter((r) => r.payment.id === p.id && r.status === 'succeeded').map((r) => r.amount)), overlap) : ZERO;
    const documented = noted((n) => n.payment?.id === p.id && n.reason === 'refund');
    if (compare(refunded, documented) !== 0) problems.push(`payment ${p.orderId} refunded ${refunded} but its refund credit notes sum to ${documented}`);
  }
  const unusable = (e: WalletTransaction) => e.source === 'refund' && (e.referenceId?.startsWith('late-settlement:') || e.referenceId?.startsWith('unused-change:'));
  for (const e of ledger.filter((x) => x.kind === 'credit' && (x.source === 'proration' || unusable(x)))) {
    const documented = noted((n) => n.walletTransaction?.id === e.id);
    if (compare(documented, e.amount) !== 0) problems.push(`wallet credit ${e.source} ${e.referenceId} of ${e.amount} has credit notes of ${documented}`);
  }
  for (const invoiceId of new Set(notes.map((n) => n.invoice.id))) {
    const paid = sum(payments.filter((p) => p.invoice?.id === invoiceId && p.paidAt).map((p) => p.grossAmount));
    const credited = noted((n) => n.invoice.id === invoiceId);
    if (compare(credited, paid) > 0) problems.push(`invoice ${invoiceId} has credit notes of ${credited} but was paid ${paid}`);
  }
  return problems;
}

/** `billing-admin wallet verify` over every wallet of the world. */
export async function verifyAllWallets(world: World): Promise<string[]> {
  const result = await verifyWallets({ em: world.server.running.billing.orm.em.fork() as EntityManager });
  return result.discrepancies.map((d) => `wallet of ${d.username}: ${d.issues.join('; ')}`);
}
