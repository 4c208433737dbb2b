import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { User } from '../../src/db/entities/user.js';
import { migrateUp, openOrm, type Orm } from '../../src/db/orm.js';
import { rowReader } from '../../src/db/row-fields.js';
import { ManualClock } from '../../src/domain/clock.js';
import { AccessCache } from '../../src/http/auth/access-cache.js';
import { serializePayment, serializeSubscription, serializeUser, USER_FIELDS, type UserFields } from '../../src/http/serializers.js';
import { listPaymentFields, listPayments } from '../../src/services/payments/list-payments.js';
import { paidAccessEndsAtFor } from '../../src/services/subscriptions/has-access.js';
import { getActiveSubscription, getActiveSubscriptionAnswer } from '../../src/services/subscriptions/get-subscription.js';
import type { Config } from '../../src/config.js';
import { DATABASES, createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { makePlan, makeSubscriptionWithPayment, makeUser } from '../helpers/factories.js';

/*
 * Hot reads serialise rows read by fixed SQL; everything else serialises entities. Both go
 * through the same serialiser (src/http/serializers.ts), and this compares them on every such
 * resource, on both databases, with values that the two drivers return differently: money
 * with cents, dates with milliseconds and nulls, booleans, JSON, relations present and absent.
 */
describe.each(DATABASES)('rows and entities serialise alike on %s', (kind) => {
  let db: TestDatabase;
  let orm: Orm;
  let userId: string;
  const fork = () => orm.em.fork() as EntityManager;
  // Within the subscriptions' paid periods, so that they answer as active.
  const clock = new ManualClock(new Date('2026-01-15T00:00:00.000Z'));
  const config = { accessGraceMinutes: 60, renewalDueDays: 3 } as Config;
  const data = () => ({ em: fork(), config, clock });

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    orm = await openOrm(db.url, { create: true });
    await migrateUp(orm);
    const em = fork();
    const user = await makeUser(em, { isStaff: true, firstName: 'Ñoño', lastName: "O'Brien", email: null });
    userId = user.id;
    const plan = await makePlan(em, { price: '149999.99' });
    const next = await makePlan(em, { price: '250000.50', intervalUnit: 'week' });
    const change = await makePlan(em, { price: '10.01' });
    const { subscription } = await makeSubscriptionWithPayment(em, {
      user,
      plan,
      payment: {
        status: 'settled',
        grossAmount: '149999.99',
        refundedAmount: '0.01',
        paidAt: new Date('2026-01-02T03:04:05.678Z'),
        transactionId: 'tx-1',
        fraudStatus: 'accept',
        paymentDetails: { va_numbers: [{ bank: 'bca', va_number: '123' }], nested: { deep: [1, 'two', null, true] } },
      },
    });
    Object.assign(subscription, {
      status: 'active',
      liveUserId: user.id,
      currentPeriodStart: new Date('2026-01-02T03:04:05.678Z'),
      currentPeriodEnd: new Date('2026-02-02T03:04:05.678Z'),
      nextBillingDate: new Date('2026-02-02T03:04:05.678Z'),
      trialEnd: null,
      cancelAtPeriodEnd: true,
      cancelReason: 'too dear',
      cyclesCompleted: 3,
      metadata: { source: 'test', flags: [true, false], n: 1.5 },
      pendingPlan: next,
      pendingChangePlan: change,
      pendingChange: {
        payment_id: '00000000-0000-4000-8000-000000000001',
        requested_at: '2026-01-10T00:00:00.000Z',
        period_start: '2026-01-10T00:00:00.000Z',
        period_end: '2026-02-10T00:00:00.000Z',
        resets_period: true,
        credit: '100.10',
        charge: '250.20',
        prior_period_end: null,
      },
    });
    await em.flush();
    // More payments than a page, with ties on created_at, and one without subscription or invoice.
    const at = new Date('2026-03-01T00:00:00.000Z');
    for (let i = 0; i < 23; i++) {
      await makeSubscriptionWithPayment(em, {
        user: await em.findOneOrFail(User, user.id),
        plan,
        subscription: { status: 'canceled', liveUserId: null },
        payment: { grossAmount: `${1000 + i}.${String(i).padStart(2, '0')}`, status: i % 3 ? 'pending' : 'failed', createdAt: i % 4 ? at : new Date(at.getTime() + i), expiresAt: null },
      });
    }
  });

  afterAll(async () => {
    await orm?.close(true);
    await db?.drop();
  });

  it('users: the entity, a row, and the access cache give the same /auth/me/ body', async () => {
    const entity = await fork().findOneOrFail(User, userId);
    const em = fork();
    const reader = rowReader<UserFields>(em, User, USER_FIELDS, 'u');
    const [row] = (await em.execute(`select ${reader.columns} from users u where u.id = ?`, [userId], 'all')) as Record<string, unknown>[];
    const cached = await new AccessCache(0, { config, clock }).user(fork(), userId);
    expect(serializeUser(reader.read(row))).toStrictEqual(serializeUser(entity));
    expect(serializeUser(cached!.fields)).toStrictEqual(serializeUser(entity));
    expect(serializeUser(cached!.entity())).toStrictEqual(serializeUser(entity));
  });

  it('the active subscription: with its plan, scheduled plan and pending change', async () => {
    const user = await fork().findOneOrFail(User, userId);
    const entity = serializeSubscription(await getActiveSubscription(data(), user));
    const row = serializeSubscription((await getActiveSubscriptionAnswer(data(), userId)).subscription);
    expect(row).toStrictEqual(entity);
    expect(row.pending_change?.amount_due).toBe('150.10');
    expect(row.plan.price).toBe('149999.99');
  });

  it('the access answer ends at the granting period end plus the grace, read alike from either driver', async () => {
    expect(await paidAccessEndsAtFor(data(), userId)).toBe(new Date('2026-02-02T04:04:05.678Z').getTime());
  });

  it('the active subscription without scheduled plans', async () => {
    const em = fork();
    const plan = await makePlan(em);
    const { user } = await makeSubscriptionWithPayment(em, { plan, subscription: { status: 'trialing', trialEnd: new Date('2026-05-05T05:05:05.005Z') } });
    const entity = serializeSubscription(await getActiveSubscription(data(), user));
    expect(serializeSubscription((await getActiveSubscriptionAnswer(data(), user.id)).subscription)).toStrictEqual(entity);
    expect(entity.pending_plan).toBeNull();
  });

  const pages = [
    { filters: {}, page: { page: 1, pageSize: 20 } },
    { filters: {}, page: { page: 2, pageSize: 20 } },
    { filters: {}, page: { page: 9, pageSize: 20 } },
    { filters: { ordering: 'gross_amount' }, page: { page: 1, pageSize: 7 } },
    { filters: { ordering: '-gross_amount' }, page: { page: 2, pageSize: 7 } },
    { filters: { ordering: 'created_at' }, page: { page: 3, pageSize: 5 } },
    { filters: { ordering: '-created_at', status: 'failed' as const }, page: { page: 1, pageSize: 100 } },
    { filters: { paymentType: 'gopay' as const }, page: { page: 1, pageSize: 20 } },
  ];
  it.each(pages)('payment pages: $filters $page', async ({ filters, page }) => {
    const user = await fork().findOneOrFail(User, userId);
    const entities = await listPayments({ em: fork() }, user, filters, page);
    const rows = await listPaymentFields({ em: fork() }, userId, filters, page);
    expect(rows.count).toBe(entities.count);
    expect(rows.items.map(serializePayment)).toStrictEqual(entities.items.map(serializePayment));
  });
});
