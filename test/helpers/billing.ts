import { Invoice } from '../../src/db/entities/invoice.js';
import { Notification } from '../../src/db/entities/notification.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Plan } from '../../src/db/entities/plan.js';
import { Subscription, type PaymentType } from '../../src/db/entities/subscription.js';
import { User } from '../../src/db/entities/user.js';
import { Wallet } from '../../src/db/entities/wallet.js';
import { ManualClock } from '../../src/domain/clock.js';
import { runBilling, type BillingRunOptions, type BillingRunReport } from '../../src/services/billing/run-billing.js';
import type { ServiceContext } from '../../src/services/context.js';
import { createSubscription } from '../../src/services/subscriptions/create-subscription.js';
import { adjustWallet } from '../../src/services/wallet/adjust-wallet.js';
import type { DatabaseKind } from './database.js';
import { makeUser } from './factories.js';
import { startTestServer, STANDARD_PLANS, type TestServer } from './server.js';
import type { PlanSeed } from '../../src/services/plans/seed-plans.js';
import { cliActor } from '../../src/services/audit/actor.js';

export const DAY = 24 * 60 * 60 * 1000;

/** Plans the billing tests use beside the standard ones. */
export const BILLING_PLANS: PlanSeed[] = [
  ...STANDARD_PLANS,
  { slug: 'three-cycles', name: 'Three months', description: 'Ends after three paid months', price: 30000, currency: 'IDR', interval: 1, interval_unit: 'month', max_cycles: 3 },
  { slug: 'daily', name: 'Daily', description: 'Billed every day', price: 1000, currency: 'IDR', interval: 1, interval_unit: 'day' },
  { slug: 'quarterly', name: 'Quarterly', description: 'Every three months', price: 120000, currency: 'IDR', interval: 3, interval_unit: 'month' },
];

export interface BillingHarness {
  server: TestServer;
  clock: ManualClock;
  ctx(): ServiceContext;
  run(opts?: BillingRunOptions): Promise<BillingRunReport>;
  user(): Promise<User>;
  fund(user: User, amount: string): Promise<void>;
  subscribe(user: User, plan: string, paymentType: PaymentType, token?: string): Promise<Subscription>;
  sub(id: string): Promise<Subscription>;
  invoices(subscriptionId: string): Promise<Invoice[]>;
  payments(subscriptionId: string): Promise<Payment[]>;
  notifications(user: User): Promise<string[]>;
  balance(user: User): Promise<string>;
  stop(): Promise<void>;
}

export async function startBilling(kind: DatabaseKind, start = new Date('2027-01-31T10:00:00.000Z'), env: Record<string, string> = {}): Promise<BillingHarness> {
  const clock = new ManualClock(start);
  const server = await startTestServer(kind, { clock, env });
  await server.seedPlans(BILLING_PLANS);
  const { orm, gateway, config } = server.running.billing;
  const ctx = (): ServiceContext => ({ em: orm.em.fork(), config, gateway, clock });
  const h: BillingHarness = {
    server,
    clock,
    ctx,
    run: (opts = {}) => runBilling(ctx(), opts),
    // Factory users (no password hashing): these customers never log in.
    user: () => makeUser(orm.em.fork()),
    async fund(user, amount) {
      await adjustWallet(ctx(), { actor: cliActor(), user, amount, reason: 'test funds' });
    },
    async subscribe(user, plan, paymentType, token) {
      const { subscription } = await createSubscription(ctx(), user, { planId: plan, paymentType, token });
      return subscription;
    },
    sub: (id) => orm.em.fork().findOneOrFail(Subscription, id, { populate: ['plan', 'pendingPlan', 'user'] }),
    invoices: (id) => orm.em.fork().find(Invoice, { subscription: id }, { populate: ['lines'], orderBy: [{ createdAt: 'asc' }, { number: 'asc' }] }),
    payments: (id) => orm.em.fork().find(Payment, { subscription: id }, { populate: ['invoice'], orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] }),
    async notifications(user) {
      const rows = await orm.em.fork().find(Notification, { user, channel: 'in_app' }, { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
      return rows.map((n) => n.notificationType);
    },
    async balance(user) {
      return (await orm.em.fork().findOneOrFail(Wallet, { user })).balance;
    },
    stop: () => server.stop(),
  };
  return h;
}

export async function planBySlug(h: BillingHarness, slug: string): Promise<Plan> {
  return h.server.running.billing.orm.em.fork().findOneOrFail(Plan, { slug });
}

export const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);
