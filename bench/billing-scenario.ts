/**
 * The billing-run scenario: N active wallet-paid subscriptions all due at one instant, each
 * with a funded wallet; one billing pass renews them all. Reports renewals per second.
 */
import { randomUUID } from 'node:crypto';
import type { RequiredEntityData } from '@mikro-orm/core';
import { loadConfig } from '../src/config.js';
import { Plan, Subscription, User, Wallet, WalletTransaction } from '../src/db/entities/index.js';
import { migrateUp, openOrm, type Orm } from '../src/db/orm.js';
import { ManualClock } from '../src/domain/clock.js';
import { MidtransClient } from '../src/gateway/midtrans-client.js';
import { runBilling, type BillingRunOptions } from '../src/services/billing/run-billing.js';
import { seedPlans } from '../src/services/plans/seed-plans.js';
import type { BenchDatabase } from './support.js';
import { cpuPer1000, openRaw, type CpuPer1000 } from './usage-scenarios.js';

export interface BillingFigures {
  database: string;
  subscriptions: number;
  renewed: number;
  errors: number;
  seconds: number;
  renewalsPerSecond: number;
  /** Time to seed the subscriptions (not part of the figure). */
  seedSeconds: number;
  /** CPU ms per 1,000 renewals: this process (the run) and PostgreSQL's backends (0 on SQLite: in-process). */
  cpu: CpuPer1000;
}

export const DUE_AT = new Date('2027-01-01T00:00:00.000Z');
export const PERIOD_START = new Date('2026-12-01T00:00:00.000Z');
/** Rows per INSERT while seeding. */
const SEED_ROWS = 2000;

/** N users, each with a funded wallet (and its ledger entry) and an active wallet subscription due at DUE_AT, in multi-row INSERTs. */
export async function seedDueSubscriptions(orm: Orm, plan: Plan, size: number): Promise<void> {
  for (let from = 0; from < size; from += SEED_ROWS) {
    const em = orm.em.fork();
    const users: RequiredEntityData<User>[] = [];
    const wallets: RequiredEntityData<Wallet>[] = [];
    const entries: RequiredEntityData<WalletTransaction>[] = [];
    const subs: RequiredEntityData<Subscription>[] = [];
    for (let j = from; j < Math.min(size, from + SEED_ROWS); j++) {
      const userId = randomUUID();
      const walletId = randomUUID();
      const stamps = { createdAt: PERIOD_START, updatedAt: PERIOD_START };
      users.push({ id: userId, username: `renew-${j}`, email: null, passwordHash: 'scrypt$1$1$1$AAAA$AAAA', isStaff: false, firstName: '', lastName: '', phone: null, ...stamps });
      wallets.push({ id: walletId, user: userId, currency: 'IDR', balance: '1000000.00', isActive: true, entries: 1, ...stamps });
      entries.push({
        id: randomUUID(), wallet: walletId, kind: 'credit', amount: '1000000.00', balanceAfter: '1000000.00', source: 'adjustment', referenceId: `bench-${j}`,
        description: 'bench funding', position: 1, createdAt: PERIOD_START,
      });
      subs.push({
        id: randomUUID(), user: userId, plan: plan.id, status: 'active', liveUserId: userId, paymentType: 'wallet', bank: null, cardToken: null, metadata: {}, customerDetails: {},
        billingAnchor: PERIOD_START, currentPeriodStart: PERIOD_START, currentPeriodEnd: DUE_AT, nextBillingDate: DUE_AT, trialEnd: null, trialWillEndNotifiedAt: null,
        cancelAtPeriodEnd: false, canceledAt: null, cancelReason: null, pausedAt: null, pendingPlan: null, cyclesCompleted: 1, ...stamps,
      });
    }
    await em.transactional(async (tx) => {
      await tx.insertMany(User, users);
      await tx.insertMany(Wallet, wallets);
      await tx.insertMany(WalletTransaction, entries);
      await tx.insertMany(Subscription, subs);
    });
  }
}

export async function runBillingScenario(
  kind: string,
  size: number,
  freshDatabase: (kind: 'sqlite' | 'postgresql') => Promise<BenchDatabase>,
  runOptions: Pick<BillingRunOptions, 'batch' | 'chunkSize'> = {},
): Promise<BillingFigures> {
  const db = await freshDatabase(kind as 'sqlite' | 'postgresql');
  // BENCH_BILLING_DEBUG=1 logs the SQL MikroORM sends (not the bound bulk writes of bulk-sql.ts).
  const orm = await openOrm(db.url, { create: true, debug: process.env.BENCH_BILLING_DEBUG === '1' });
  const raw = openRaw(kind as 'sqlite' | 'postgresql', db.url);
  try {
    await migrateUp(orm);
    const config = loadConfig({ DATABASE_URL: db.url, SESSION_SECRET: 'bench', LOG_REQUESTS: 'false' });
    const clock = new ManualClock(DUE_AT);
    await seedPlans({ em: orm.em.fork(), config, clock }, [
      { slug: 'wallet-monthly', name: 'Wallet monthly', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month' },
    ]);
    const plan = await orm.em.fork().findOneOrFail(Plan, { slug: 'wallet-monthly' });
    const seeding = performance.now();
    await seedDueSubscriptions(orm, plan, size);
    // Statistics for what was seeded, as autovacuum would have them. NOTE: not the empty tables the
    // run fills: stats saying "empty" make PostgreSQL cache sequential scans for the foreign-key
    // checks of invoices, and each page of the run then reads every invoice before it.
    if (kind === 'postgresql') await orm.em.fork().execute('analyze users, wallets, wallet_transactions, subscriptions');
    const seedSeconds = (performance.now() - seeding) / 1000;
    // Wallet renewals never reach the gateway; the client is there because the context needs one.
    const gateway = new MidtransClient({ baseUrl: 'http://127.0.0.1:9', serverKey: 'bench' });
    const started = performance.now();
    const { result: report, cpu } = await cpuPer1000(raw, null, size, () => runBilling({ em: orm.em.fork(), config, clock, gateway }, { at: DUE_AT, ...runOptions }));
    const seconds = (performance.now() - started) / 1000;
    return {
      database: kind,
      subscriptions: size,
      renewed: report.renewed,
      errors: report.errors.length,
      seconds: Math.round(seconds * 10) / 10,
      renewalsPerSecond: Math.round(report.renewed / seconds),
      seedSeconds: Math.round(seedSeconds * 10) / 10,
      cpu,
    };
  } finally {
    await raw.close();
    await orm.close(true);
    await db.drop();
  }
}
