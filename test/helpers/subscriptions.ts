import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Notification } from '../../src/db/entities/notification.js';
import { Payment, Refund } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { User } from '../../src/db/entities/user.js';
import { ManualClock } from '../../src/domain/clock.js';
import { createInvoice } from '../../src/services/invoices/create-invoice.js';
import { postWalletEntry } from '../../src/services/wallet/wallet-ledger.js';
import type { DatabaseKind } from './database.js';
import { STANDARD_PLANS, startTestServer, type Credentials, type HttpResult, type TestServer } from './server.js';

/*
 * Shared steps of the subscription, payment and invoice suites: everything goes through the
 * real HTTP API and the simulator over HTTP; only wallet funding is done in-process (top-ups
 * are another suite's subject).
 */

export type TestUser = Credentials & { id: string };

/** A suite's server on a clock it moves, and the user of the current test (both set by the hooks). */
export interface ServerOnClock {
  clock: ManualClock;
  server: TestServer;
  user: TestUser;
}

/**
 * The setup of suites that move time: one server per suite on a ManualClock with the standard
 * plans, and before each test the clock back at `start` and a fresh user. Call it inside a
 * describe; `server` and `user` are set by its hooks, so read them inside tests, not at once.
 * `beforeStop` runs on the server before it stops (a suite-wide check of what was stored).
 */
export function serverOnClock(kind: DatabaseKind, start: Date, options: { beforeStop?: (server: TestServer) => Promise<void> } = {}): ServerOnClock {
  const suite = { clock: new ManualClock(start) } as ServerOnClock;
  beforeAll(async () => {
    suite.server = await startTestServer(kind, { clock: suite.clock });
    await suite.server.seedPlans(STANDARD_PLANS);
  });
  afterAll(async () => {
    if (!suite.server) return;
    try {
      await options.beforeStop?.(suite.server);
    } finally {
      await suite.server.stop();
    }
  });
  beforeEach(async () => {
    suite.clock.set(start);
    suite.user = await suite.server.createUser();
  });
  return suite;
}

/** A fresh entity manager on the server's database, for asserting stored state. */
export function dbOf(server: TestServer): EntityManager {
  return server.running.billing.orm.em.fork() as EntityManager;
}

export async function fundWallet(server: TestServer, user: TestUser, amount: string): Promise<void> {
  const billing = server.running.billing;
  await billing.orm.em.fork().transactional(async (em) => {
    const owner = await em.findOneOrFail(User, user.id);
    await postWalletEntry(
      { em: em as EntityManager, config: billing.config, clock: billing.clock },
      { user: owner, kind: 'credit', amount, currency: 'IDR', source: 'adjustment', referenceId: `test-${Math.random()}`, description: 'test funding' },
    );
  });
}

export async function walletBalance(server: TestServer, user: TestUser): Promise<string> {
  const res = await server.api('GET', '/wallet/me/', { auth: user });
  return res.body.balance;
}

/**
 * An open renewal-like invoice for a subscription, made in-process (renewals are the billing
 * run's subject): what POST /payments/charge/ collects.
 */
export async function openInvoice(server: TestServer, subscriptionId: string, amount: string): Promise<string> {
  const billing = server.running.billing;
  return billing.orm.em.fork().transactional(async (em) => {
    const sub = await em.findOneOrFail(Subscription, subscriptionId, { populate: ['user', 'plan'] });
    const at = billing.clock.now();
    const invoice = await createInvoice(
      { em: em as EntityManager, config: billing.config, clock: billing.clock },
      { user: sub.user, subscription: sub, currency: sub.plan.currency, billingReason: 'subscription_cycle', taxBehavior: sub.plan.taxBehavior, issuedAt: at, dueAt: at, lines: [{ description: 'Renewal', kind: 'subscription', unitAmount: amount }] },
    );
    await em.flush();
    return invoice.id;
  });
}

/** Moves a transaction at the simulator; it notifies the webhook and waits for the first delivery. */
export async function simulate(server: TestServer, orderId: string, action: string, body?: unknown): Promise<HttpResult> {
  const res = await server.request('POST', `/_simulator/v2/${orderId}/${action}`, body === undefined ? {} : { body });
  if (res.status !== 200) throw new Error(`simulator ${action} ${orderId}: ${res.status} ${res.text}`);
  return res;
}

/** The order as the gateway's status API answers it (signed with the server key, as the service asks). */
export async function gatewayStatus(server: TestServer, orderId: string): Promise<Record<string, any>> {
  const basic = Buffer.from(`${server.config.gateway.serverKey}:`).toString('base64');
  return (await server.request('GET', `/_simulator/v2/${orderId}/status`, { headers: { authorization: `Basic ${basic}` } })).body;
}

export async function subscribe(server: TestServer, user: TestUser, body: Record<string, unknown>, headers?: Record<string, string>): Promise<HttpResult> {
  return server.api('POST', '/subscriptions/', { auth: user, body, headers });
}

/** A subscription that is active: created with a bank transfer and settled through the gateway. */
export async function activeSubscription(
  server: TestServer,
  user: TestUser,
  plan = 'basic-monthly',
  paymentType = 'bank_transfer',
): Promise<{ subscription: any; payment: any }> {
  const created = await subscribe(server, user, { plan_id: plan, payment_type: paymentType });
  if (created.status !== 201) throw new Error(`subscribe: ${created.status} ${created.text}`);
  if (paymentType !== 'wallet') await simulate(server, created.body.payment.order_id, 'settle');
  const subscription = (await server.api('GET', `/subscriptions/${created.body.subscription.id}/`, { auth: user })).body;
  const payment = (await server.api('GET', `/payments/${created.body.payment.id}/`, { auth: user })).body;
  if (subscription.status !== 'active') throw new Error(`expected active, got ${subscription.status}`);
  return { subscription, payment };
}

/** The user's in-app notification types, oldest first. */
export async function notificationTypes(server: TestServer, user: TestUser): Promise<string[]> {
  const rows = await dbOf(server).find(Notification, { user: user.id, channel: 'in_app' }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  return rows.map((n) => n.notificationType);
}

/** Everything stored for a user: to prove a refused request wrote nothing. */
export async function storedCounts(server: TestServer, user: TestUser) {
  const em = dbOf(server);
  return {
    subscriptions: await em.count(Subscription, { user: user.id }),
    invoices: await em.count(Invoice, { user: user.id }),
    payments: await em.count(Payment, { user: user.id }),
    refunds: await em.count(Refund, { payment: { user: user.id } }),
    notifications: await em.count(Notification, { user: user.id }),
  };
}

/** Polls until `check` returns a value other than undefined (background notifications arrive late). */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
