import type { EntityManager } from '@mikro-orm/knex';
import { Notification } from '../../../src/db/entities/notification.js';
import { Payment } from '../../../src/db/entities/payment.js';
import { Plan } from '../../../src/db/entities/plan.js';
import { Topup } from '../../../src/db/entities/topup.js';
import { User } from '../../../src/db/entities/user.js';
import { Wallet, WalletTransaction } from '../../../src/db/entities/wallet.js';
import { WebhookLog } from '../../../src/db/entities/webhook-log.js';
import { migrateUp, openOrm, type Orm } from '../../../src/db/orm.js';
import { Invoice } from '../../../src/db/entities/invoice.js';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { startSubscription } from '../../../src/domain/states/subscription-states.js';
import { makePlan, signedNotification } from '../factories.js';
import { amountString, expectState, noticeKey, type ExpectedState, type Notice, type Order } from './reference-model.js';
import { API, TEST_SERVER_KEY } from './server-process.js';

/*
 * A gateway's worth of notifications for orders seeded straight into the database: a seeded
 * random generator picks each order's true history, every distinct notification is sent once
 * and 30% of the traffic is duplicates of them, all shuffled together (so a pending, an expire
 * or a refund may arrive after, or before, the settlement of the same order).
 */

/** mulberry32: a small seeded PRNG, so a failing run can be repeated with its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Delivery {
  notice: Notice;
  /** The exact body the gateway posts (a duplicate is byte-identical). */
  body: string;
}

export interface Scenario {
  seed: number;
  users: number;
  orders: Order[];
  /** In sending order. */
  deliveries: Delivery[];
  expected: ExpectedState;
}

export const PLAN_PRICES = [50_000, 99_000, 150_000];

const pick = <T>(rand: () => number, items: readonly T[]): T => items[Math.floor(rand() * items.length)];

function subscriptionHistory(rand: () => number, orderId: string, amount: number): Notice[] {
  const n = (transactionStatus: Notice['transactionStatus'], extra: Partial<Notice> = {}): Notice => ({ orderId, transactionStatus, grossAmount: amount, ...extra });
  const roll = rand();
  if (roll < 0.3) {
    // Paid; a stale expire may still turn up (the issue's "expire after settlement").
    return [n('pending'), n('settlement'), ...(rand() < 0.4 ? [n('expire')] : [])];
  }
  if (roll < 0.45) return [n('pending'), n(pick(rand, ['deny', 'cancel', 'expire'] as const))];
  if (roll < 0.6) {
    // Paid, then refunded in one or two steps; each refund notification lists all refunds so far.
    const first = Math.round((amount * (0.2 + rand() * 0.5)) / 1000) * 1000;
    const r1 = { key: `${orderId}-r1`, amount: first };
    const r2 = { key: `${orderId}-r2`, amount: amount - first };
    const full = rand() < 0.6;
    return [
      n('pending'),
      n('settlement'),
      n('partial_refund', { refunds: [r1] }),
      ...(full ? [n('refund', { refunds: [r1, r2] })] : []),
    ];
  }
  if (roll < 0.72) {
    // A card held for fraud review, then accepted (and settled) or denied.
    const accepted = rand() < 0.7;
    return accepted
      ? [n('capture', { fraudStatus: 'challenge' }), n('capture', { fraudStatus: 'accept' }), ...(rand() < 0.5 ? [n('settlement')] : [])]
      : [n('capture', { fraudStatus: 'challenge' }), n('deny', { fraudStatus: 'deny' })];
  }
  if (roll < 0.8) return [n('capture', { fraudStatus: 'accept' }), n('settlement')];
  // Still waiting for the customer.
  return [n('pending')];
}

function topupHistory(rand: () => number, orderId: string, amount: number): Notice[] {
  const n = (transactionStatus: Notice['transactionStatus']): Notice => ({ orderId, transactionStatus, grossAmount: amount });
  const roll = rand();
  if (roll < 0.55) return [n('pending'), n('settlement'), ...(rand() < 0.3 ? [n('expire')] : [])];
  if (roll < 0.8) return [n('pending'), n(pick(rand, ['expire', 'deny', 'cancel'] as const))];
  return [n('pending')];
}

/** The gateway's body for a notice, signed with the test server key. */
export function noticeBody(notice: Notice): string {
  const fields: Record<string, unknown> = {
    order_id: notice.orderId,
    transaction_status: notice.transactionStatus,
    gross_amount: amountString(notice.grossAmount),
    payment_type: notice.fraudStatus ? 'credit_card' : 'bank_transfer',
  };
  if (notice.fraudStatus) fields.fraud_status = notice.fraudStatus;
  if (notice.refunds) {
    fields.refund_amount = amountString(notice.refunds.reduce((sum, r) => sum + r.amount, 0));
    fields.refunds = notice.refunds.map((r) => ({ refund_key: r.key, refund_amount: amountString(r.amount), reason: 'customer request' }));
  }
  return JSON.stringify(signedNotification(TEST_SERVER_KEY, fields as Parameters<typeof signedNotification>[1]));
}

/**
 * Orders (one subscription and two top-ups per user) until their distinct notifications make
 * 70% of `total`; the other 30% are duplicates. Everything is shuffled with the seed.
 */
export function buildScenario(seed: number, total: number): Scenario {
  const rand = prng(seed);
  const targetDistinct = Math.round(total * 0.7);
  const orders: Order[] = [];
  const distinct: Notice[] = [];
  let users = 0;
  while (distinct.length < targetDistinct) {
    const user = users++;
    const amount = pick(rand, PLAN_PRICES);
    const sub: Order = { kind: 'subscription', orderId: `SUB-R${seed}-${user}`, user, amount };
    orders.push(sub);
    distinct.push(...subscriptionHistory(rand, sub.orderId, amount));
    for (let t = 0; t < 2; t++) {
      const topup: Order = { kind: 'topup', orderId: `TOPUP-R${seed}-${user}-${t}`, user, amount: (10 + Math.floor(rand() * 490)) * 1000 };
      orders.push(topup);
      distinct.push(...topupHistory(rand, topup.orderId, topup.amount));
    }
  }
  const sent = [...distinct];
  while (sent.length < total) sent.push(pick(rand, distinct));
  // Fisher-Yates with the seeded generator.
  for (let i = sent.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [sent[i], sent[j]] = [sent[j], sent[i]];
  }
  const bodies = new Map(distinct.map((n) => [noticeKey(n), noticeBody(n)]));
  return {
    seed,
    users,
    orders,
    deliveries: sent.map((notice) => ({ notice, body: bodies.get(noticeKey(notice))! })),
    expected: expectState(orders, sent),
  };
}

export const userName = (seed: number, user: number) => `rel_${seed}_${user}`;

/** Migrates the database and seeds the scenario's users, plans, subscriptions and top-ups. */
export async function seedScenario(databaseUrl: string, scenario: Scenario, opts: { migrate?: boolean } = {}): Promise<void> {
  const orm = await openOrm(databaseUrl, { create: true });
  try {
    if (opts.migrate !== false) await migrateUp(orm);
    const planIds = new Map<number, string>();
    for (const price of PLAN_PRICES) {
      const plan = await makePlan(orm.em.fork() as EntityManager, { slug: `rel-${price}`, price: amountString(price) });
      planIds.set(price, plan.id);
    }
    const byUser = new Map<number, Order[]>();
    for (const o of scenario.orders) byUser.set(o.user, [...(byUser.get(o.user) ?? []), o]);
    const users = [...byUser];
    const today = new Date().toISOString().slice(0, 10);
    // Built in memory and flushed in one batch per 100 users (the factories flush every row).
    for (let i = 0; i < users.length; i += 100) {
      const em = orm.em.fork() as EntityManager;
      const plans = new Map((await em.find(Plan, { id: { $in: [...planIds.values()] } })).map((p) => [p.id, p]));
      for (const [index, orders] of users.slice(i, i + 100)) {
        const username = userName(scenario.seed, index);
        const user = em.create(User, { username, email: `${username}@example.com`, passwordHash: 'seed:no-login', isStaff: false, firstName: 'Load', lastName: 'Test', phone: null } as User);
        for (const o of orders) {
          if (o.kind === 'topup') {
            em.create(Topup, { orderId: o.orderId, user, amount: amountString(o.amount), currency: 'IDR', status: 'pending', paymentType: 'bank_transfer', bank: 'bca', paymentDetails: {}, outcomeUnknown: false } as unknown as Topup);
            continue;
          }
          const plan = plans.get(planIds.get(o.amount)!)!;
          const subscription = em.create(Subscription, { user, plan, paymentType: 'bank_transfer', bank: 'bca', metadata: {}, customerDetails: {}, cyclesCompleted: 0, cancelAtPeriodEnd: false } as unknown as Subscription);
          startSubscription(subscription, 'pending');
          const invoice = em.create(Invoice, {
            number: `INV-${o.orderId}`, user, subscription, status: 'open', billingReason: 'subscription_create', currency: 'IDR',
            issueDate: today, dueDate: today, subtotal: plan.price, totalAmount: plan.price, amountRefunded: '0.00',
          } as unknown as Invoice);
          em.create(Payment, {
            orderId: o.orderId, user, subscription, invoice, status: 'pending', paymentType: 'bank_transfer', grossAmount: plan.price,
            currency: 'IDR', refundedAmount: '0.00', paymentDetails: {}, outcomeUnknown: false,
          } as unknown as Payment);
        }
      }
      await em.flush();
    }
  } finally {
    await orm.close(true);
  }
}

export interface DeliveryOutcome {
  index: number;
  /** null: the connection failed (server killed, refused). */
  status: number | null;
  body: { status?: string; webhook_log_id?: string | null } | null;
}

/**
 * Posts deliveries to the webhook with `concurrency` requests in flight, spreading them over
 * `urls` round-robin. `stopAfter` lets a caller interrupt (a crash) once enough were answered.
 */
export async function deliver(
  urls: string[],
  deliveries: Delivery[],
  opts: { concurrency?: number; indexes?: number[]; onAnswer?: (answered: number) => void } = {},
): Promise<DeliveryOutcome[]> {
  const queue = [...(opts.indexes ?? deliveries.map((_, i) => i))];
  const outcomes: DeliveryOutcome[] = [];
  let turn = 0;
  const worker = async () => {
    for (;;) {
      const index = queue.shift();
      if (index === undefined) return;
      const url = urls[turn++ % urls.length];
      let outcome: DeliveryOutcome;
      try {
        const res = await fetch(`${url}${API}/webhook/notification/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: deliveries[index].body,
          signal: AbortSignal.timeout(30_000),
        });
        const text = await res.text();
        let body: DeliveryOutcome['body'] = null;
        try {
          body = JSON.parse(text);
        } catch {
          body = null;
        }
        outcome = { index, status: res.status, body };
      } catch {
        outcome = { index, status: null, body: null };
      }
      outcomes.push(outcome);
      opts.onAnswer?.(outcomes.length);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 32 }, worker));
  return outcomes.sort((a, b) => a.index - b.index);
}

export const acknowledged = (o: DeliveryOutcome) => o.status !== null && o.status >= 200 && o.status < 300;

/**
 * What the gateway does: resend every notification that was not answered 2xx, with a pause,
 * until all are acknowledged or `rounds` run out. Returns every outcome of every round.
 */
export async function deliverUntilAcknowledged(
  urls: string[],
  deliveries: Delivery[],
  first: DeliveryOutcome[],
  opts: { rounds?: number; pauseMs?: number; concurrency?: number } = {},
): Promise<{ all: DeliveryOutcome[]; unacknowledged: number[] }> {
  const all = [...first];
  let pending = first.filter((o) => !acknowledged(o)).map((o) => o.index);
  for (let round = 0; round < (opts.rounds ?? 10) && pending.length > 0; round++) {
    await new Promise((r) => setTimeout(r, opts.pauseMs ?? 200));
    const outcomes = await deliver(urls, deliveries, { indexes: pending, concurrency: opts.concurrency });
    all.push(...outcomes);
    pending = outcomes.filter((o) => !acknowledged(o)).map((o) => o.index);
  }
  return { all, unacknowledged: pending };
}

export interface StateReport {
  /** One line per difference from the reference model; empty when all is as expected. */
  mismatches: string[];
  processedLogs: number;
  logsByStatus: Record<string, number>;
}

/** Reads the final state from the database and compares it with the reference model. */
export async function compareWithModel(databaseUrl: string, scenario: Scenario): Promise<StateReport> {
  const orm: Orm = await openOrm(databaseUrl);
  try {
    const em = orm.em.fork() as EntityManager;
    const mismatches: string[] = [];
    const differ = (what: string, actual: unknown, expected: unknown) => {
      if (actual !== expected) mismatches.push(`${what}: ${String(actual)}, expected ${String(expected)}`);
    };
    const subOrders = scenario.orders.filter((o) => o.kind === 'subscription').map((o) => o.orderId);
    const topupOrders = scenario.orders.filter((o) => o.kind === 'topup').map((o) => o.orderId);
    const payments = new Map(
      (await em.find(Payment, { orderId: { $in: subOrders } }, { populate: ['subscription', 'invoice'] })).map((p) => [p.orderId, p]),
    );
    const topups = new Map((await em.find(Topup, { orderId: { $in: topupOrders } })).map((t) => [t.orderId, t]));
    for (const [orderId, expected] of scenario.expected.orders) {
      if (expected.kind === 'topup') {
        differ(`${orderId} top-up status`, topups.get(orderId)?.status, expected.status);
        continue;
      }
      const p = payments.get(orderId);
      differ(`${orderId} payment status`, p?.status, expected.status);
      differ(`${orderId} payment refunded_amount`, p?.refundedAmount, expected.refundedAmount);
      differ(`${orderId} subscription status`, p?.subscription?.status, expected.subscriptionStatus);
      differ(`${orderId} invoice status`, p?.invoice?.status, expected.invoiceStatus);
      differ(`${orderId} invoice amount_refunded`, p?.invoice?.amountRefunded, expected.invoiceRefunded);
    }

    const names = Array.from({ length: scenario.users }, (_, i) => userName(scenario.seed, i));
    const users = await em.find(User, { username: { $in: names } });
    const indexOf = new Map(users.map((u) => [u.id, Number(u.username.split('_')[2])]));
    const wallets = await em.find(Wallet, { user: { $in: users.map((u) => u.id) } });
    const balanceOf = new Map(wallets.map((w) => [indexOf.get(w.user.id)!, w]));
    const entries = await em.find(WalletTransaction, { wallet: { $in: wallets.map((w) => w.id) } });
    const entriesOf = new Map<number, number>();
    for (const e of entries) {
      const user = wallets.find((w) => w.id === e.wallet.id)!.user.id;
      entriesOf.set(indexOf.get(user)!, (entriesOf.get(indexOf.get(user)!) ?? 0) + 1);
    }
    const notes = await em.find(Notification, { user: { $in: users.map((u) => u.id) }, channel: 'in_app', notificationType: { $in: ['payment_succeeded', 'topup_succeeded'] } });
    const noteCount = new Map<string, number>();
    for (const n of notes) {
      const key = `${indexOf.get(n.user.id)}|${n.notificationType}`;
      noteCount.set(key, (noteCount.get(key) ?? 0) + 1);
    }
    for (let user = 0; user < scenario.users; user++) {
      const name = `user ${user}`;
      differ(`${name} wallet balance`, balanceOf.get(user)?.balance ?? '0.00', scenario.expected.wallets.get(user) ?? '0.00');
      differ(`${name} wallet entries`, entriesOf.get(user) ?? 0, scenario.expected.walletEntries.get(user) ?? 0);
      differ(`${name} payment_succeeded notifications`, noteCount.get(`${user}|payment_succeeded`) ?? 0, scenario.expected.paymentSucceeded.get(user) ?? 0);
      differ(`${name} topup_succeeded notifications`, noteCount.get(`${user}|topup_succeeded`) ?? 0, scenario.expected.topupSucceeded.get(user) ?? 0);
    }

    const logs = await em.find(WebhookLog, {}, { fields: ['status', 'dedupKey'] });
    const logsByStatus: Record<string, number> = {};
    for (const l of logs) logsByStatus[l.status] = (logsByStatus[l.status] ?? 0) + 1;
    const processedLogs = logsByStatus.processed ?? 0;
    differ('processed webhook logs (one per distinct notification)', processedLogs, scenario.expected.distinct);
    return { mismatches, processedLogs, logsByStatus };
  } finally {
    await orm.close(true);
  }
}

/** The webhook_log_ids that exist in the database, of those given. */
export async function existingLogIds(databaseUrl: string, ids: string[]): Promise<Set<string>> {
  const orm = await openOrm(databaseUrl);
  try {
    const found = new Set<string>();
    for (let i = 0; i < ids.length; i += 500) {
      const rows = await orm.em.fork().find(WebhookLog, { id: { $in: ids.slice(i, i + 500) } }, { fields: ['id'] });
      for (const r of rows) found.add(r.id);
    }
    return found;
  } finally {
    await orm.close(true);
  }
}
