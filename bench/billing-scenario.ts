/**
 * The billing-run scenario: N active wallet-paid subscriptions all due at one instant, each
 * with a funded wallet; one billing pass renews them all. Reports renewals per second.
 */
import { loadConfig } from '../src/config.js';
import { Plan, Subscription, User, Wallet, WalletTransaction } from '../src/db/entities/index.js';
import { migrateUp, openOrm } from '../src/db/orm.js';
import { ManualClock } from '../src/domain/clock.js';
import { MidtransClient } from '../src/gateway/midtrans-client.js';
import { runBilling } from '../src/services/billing/run-billing.js';
import { seedPlans } from '../src/services/plans/seed-plans.js';

export interface BillingFigures {
  database: string;
  subscriptions: number;
  renewed: number;
  errors: number;
  seconds: number;
  renewalsPerSecond: number;
}

const DUE_AT = new Date('2027-01-01T00:00:00.000Z');
const PERIOD_START = new Date('2026-12-01T00:00:00.000Z');

export async function runBillingScenario(
  kind: string,
  size: number,
  freshDatabase: (kind: 'sqlite' | 'postgresql') => Promise<{ url: string; drop: () => Promise<void> }>,
): Promise<BillingFigures> {
  const db = await freshDatabase(kind as 'sqlite' | 'postgresql');
  const orm = await openOrm(db.url);
  try {
    await migrateUp(orm);
    const config = loadConfig({ DATABASE_URL: db.url, SESSION_SECRET: 'bench', LOG_REQUESTS: 'false' });
    const clock = new ManualClock(DUE_AT);
    await seedPlans({ em: orm.em.fork(), config, clock }, [
      { slug: 'wallet-monthly', name: 'Wallet monthly', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month' },
    ]);
    const plan = await orm.em.fork().findOneOrFail(Plan, { slug: 'wallet-monthly' });
    for (let i = 0; i < size; i += 2000) {
      const em = orm.em.fork();
      for (let j = i; j < Math.min(size, i + 2000); j++) {
        const user = em.create(User, { username: `renew-${j}`, passwordHash: 'scrypt$1$1$1$AAAA$AAAA' } as User);
        const wallet = em.create(Wallet, { user, currency: 'IDR', balance: '1000000.00', isActive: true } as unknown as Wallet);
        em.create(WalletTransaction, {
          wallet, kind: 'credit', amount: '1000000.00', balanceAfter: '1000000.00', source: 'adjustment', referenceId: `bench-${j}`, description: 'bench funding', createdAt: PERIOD_START,
        } as WalletTransaction);
        em.create(Subscription, {
          user, plan, status: 'active', liveUserId: user.id, paymentType: 'wallet', metadata: {}, customerDetails: {},
          billingAnchor: PERIOD_START, currentPeriodStart: PERIOD_START, currentPeriodEnd: DUE_AT, nextBillingDate: DUE_AT, cyclesCompleted: 1,
          createdAt: PERIOD_START,
        } as unknown as Subscription);
      }
      await em.flush();
    }
    // Wallet renewals never reach the gateway; the client is there because the context needs one.
    const gateway = new MidtransClient({ baseUrl: 'http://127.0.0.1:9', serverKey: 'bench' });
    const started = performance.now();
    const report = await runBilling({ em: orm.em.fork(), config, clock, gateway }, { at: DUE_AT });
    const seconds = (performance.now() - started) / 1000;
    return {
      database: kind,
      subscriptions: size,
      renewed: report.renewed,
      errors: report.errors.length,
      seconds: Math.round(seconds * 10) / 10,
      renewalsPerSecond: Math.round(report.renewed / seconds),
    };
  } finally {
    await orm.close(true);
    await db.drop();
  }
}
