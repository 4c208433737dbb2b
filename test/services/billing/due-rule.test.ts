import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Invoice } from '../../../src/db/entities/invoice.js';
import type { Plan } from '../../../src/db/entities/plan.js';
import { Subscription, type PaymentType, type SubscriptionStatus } from '../../../src/db/entities/subscription.js';
import { migrateUp, openOrm, type Orm } from '../../../src/db/orm.js';
import { dueAction, dueSubscriptionIds, openRenewalInvoice } from '../../../src/services/billing/billing-actions.js';
import { DUE, holds, PLAIN_WALLET_RENEWAL, selectSubscriptionIds, type Rule } from '../../../src/services/billing/due-rule.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../helpers/database.js';
import { makePlan, makeUser } from '../../helpers/factories.js';

/*
 * The due rule is written once (due-rule.ts) and read two ways: `holds` on a loaded subscription
 * (dueAction) and SQL (dueSubscriptionIds, the batch renewal's claim). Generated subscriptions,
 * stored for real, must be selected by the SQL exactly when dueAction has something to do.
 */

const AT = new Date('2026-06-15T10:00:00.000Z');
const DAY = 86_400_000;
/** The usage grace the rule is evaluated with: a plan with usage charges is due only this long after its period's end. */
const GRACE_MINUTES = 60;
const DUE_AT = { at: AT, usageGraceMinutes: GRACE_MINUTES };
const GRACE_AGO = AT.getTime() - GRACE_MINUTES * 60_000;
const STATUSES: SubscriptionStatus[] = ['pending', 'trialing', 'active', 'paused', 'past_due', 'canceled', 'expired'];
const PAYMENT_TYPES: PaymentType[] = ['wallet', 'bank_transfer', 'credit_card'];

/** A time near AT: exactly AT, or some hours or days either side (the boundaries are where copies drift). */
const nearAt = fc.oneof(
  fc.constant(AT),
  fc.integer({ min: -10 * 24, max: 10 * 24 }).map((h) => new Date(AT.getTime() + h * 3_600_000)),
  fc.constantFrom(-1, 1).map((ms) => new Date(AT.getTime() + ms)),
  // Either side of the usage grace's end: a metered plan's period ended exactly so long ago.
  fc.constantFrom(-1, 0, 1).map((ms) => new Date(GRACE_AGO + ms)),
  fc.constantFrom(3, 4, 7).map((d) => new Date(AT.getTime() + d * DAY)),
);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null });

const invoiceShape = fc.record({
  status: fc.constantFrom('open', 'paid', 'void'),
  billingReason: fc.constantFrom('subscription_cycle', 'subscription_create'),
  nextRetryAt: maybe(nearAt),
});

const subscriptionShape = fc.record({
  status: fc.constantFrom(...STATUSES),
  paymentType: fc.constantFrom(...PAYMENT_TYPES),
  nextBillingDate: maybe(nearAt),
  trialEnd: maybe(nearAt),
  trialWillEndNotifiedAt: maybe(fc.constant(new Date(AT.getTime() - DAY))),
  cancelAtPeriodEnd: fc.boolean(),
  cyclesCompleted: fc.integer({ min: 0, max: 3 }),
  planIndex: fc.integer({ min: 0, max: 4 }),
  pendingPlanIndex: maybe(fc.integer({ min: 0, max: 5 })),
  pendingQuantity: maybe(fc.integer({ min: 1, max: 3 })),
  discounted: fc.boolean(),
  // NOTE: at most one open renewal invoice, as the run keeps it (the period advances only when
  // it is paid, and the next one is issued only then); other invoices are noise the rule must ignore.
  invoices: fc.array(invoiceShape, { maxLength: 3 }).filter((list) => list.filter((i) => i.status === 'open' && i.billingReason === 'subscription_cycle').length <= 1),
});

type Shape = typeof subscriptionShape extends fc.Arbitrary<infer T> ? T : never;

describe.each(DATABASES)('the due rule on %s', (kind) => {
  let db: TestDatabase;
  let orm: Orm;
  let plans: Plan[];

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    orm = await openOrm(db.url, { create: true });
    await migrateUp(orm);
    const em = orm.em.fork();
    // Unlimited, one paid cycle, three; the same two with usage charges (due after the grace);
    // and one in another currency (a blocked plan change).
    const charges = [{ metric: 'due_calls', metric_name: 'Calls', model: 'standard', properties: { unit_amount: '10' } }] as unknown as Plan['charges'];
    plans = [
      await makePlan(em, { maxCycles: 0 }),
      await makePlan(em, { maxCycles: 1 }),
      await makePlan(em, { maxCycles: 3 }),
      await makePlan(em, { maxCycles: 0, charges }),
      await makePlan(em, { maxCycles: 1, charges }),
      await makePlan(em, { maxCycles: 0, currency: 'USD', price: '10.00' }),
    ];
  }, 60_000);

  afterAll(async () => {
    await orm?.close(true);
    await db?.drop();
  });

  /** Stores the subscriptions (each with its own user) and their invoices; returns their ids. */
  async function store(shapes: Shape[]): Promise<string[]> {
    const em = orm.em.fork();
    const ids: string[] = [];
    for (const shape of shapes) {
      const user = await makeUser(em);
      const sub = em.create(Subscription, {
        id: randomUUID(),
        user,
        plan: plans[shape.planIndex],
        pendingPlan: shape.pendingPlanIndex === null ? null : plans[shape.pendingPlanIndex],
        status: shape.status,
        paymentType: shape.paymentType,
        nextBillingDate: shape.nextBillingDate,
        trialEnd: shape.trialEnd,
        trialWillEndNotifiedAt: shape.trialWillEndNotifiedAt,
        cancelAtPeriodEnd: shape.cancelAtPeriodEnd,
        cyclesCompleted: shape.cyclesCompleted,
        pendingQuantity: shape.pendingQuantity,
        discount: shape.discounted
          ? { coupon_id: randomUUID(), coupon: 'DUE', promotion_code: null, percent_off: '10.00', amount_off: null, currency: null, duration: 'forever', plans: null, starts_at: AT.toISOString(), ends_at: null, cycles_left: null }
          : null,
        metadata: {},
        customerDetails: {},
      } as unknown as Subscription);
      shape.invoices.forEach((inv, n) => {
        em.create(Invoice, {
          number: `D-${sub.id.slice(0, 8)}-${sub.id.slice(-8)}-${n}`,
          user,
          subscription: sub,
          status: inv.status,
          billingReason: inv.billingReason,
          currency: 'IDR',
          issueDate: '2026-06-01',
          dueDate: '2026-06-01',
          subtotal: '1000.00',
          totalAmount: '1000.00',
          amountRefunded: '0.00',
          nextRetryAt: inv.nextRetryAt,
          createdAt: new Date(AT.getTime() - (10 - n) * DAY),
        } as unknown as Invoice);
      });
      ids.push(sub.id);
    }
    await em.flush();
    return ids;
  }

  /** Each stored subscription as the run loads it, with the open renewal invoice it would pass to dueAction. */
  async function loaded(ids: string[]) {
    const em = orm.em.fork();
    const subs = await em.find(Subscription, { id: { $in: ids } }, { populate: ['plan', 'pendingPlan'] });
    return Promise.all(subs.map(async (sub) => ({ sub, openInvoice: await openRenewalInvoice(em, sub) })));
  }

  const selected = async (rule: Rule | 'due', ids: string[]) => {
    const em = orm.em.fork();
    const found = rule === 'due' ? await dueSubscriptionIds(em, DUE_AT, null, 1_000_000) : await selectSubscriptionIds(em, rule, DUE_AT, null, 1_000_000);
    const mine = new Set(ids);
    return found.filter((id) => mine.has(id)).sort();
  };

  it('selects in SQL exactly the subscriptions dueAction has something to do for, clause by clause', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(subscriptionShape, { minLength: 1, maxLength: 6 }), async (shapes) => {
        const ids = await store(shapes);
        const subjects = await loaded(ids);
        const where = (test: (s: (typeof subjects)[number]) => boolean) => subjects.filter(test).map((s) => s.sub.id).sort();

        expect(await selected('due', ids)).toEqual(where((s) => dueAction(s.sub, s.openInvoice, DUE_AT) !== null));
        for (const clause of [...Object.values(DUE), PLAIN_WALLET_RENEWAL]) {
          expect(await selected(clause, ids)).toEqual(where((s) => holds(clause, s, DUE_AT)));
        }
        // The batch's plain renewals are the renewals dueAction would make without a plan change.
        for (const s of subjects) {
          if (holds(PLAIN_WALLET_RENEWAL, s, DUE_AT)) expect(dueAction(s.sub, s.openInvoice, DUE_AT)).toEqual({ kind: 'renew', planChange: null });
        }
      }),
      { numRuns: kind === 'sqlite' ? 60 : 40 },
    );
  }, 240_000);

  it('pages through the due subscriptions in id order without skipping or repeating one', async () => {
    const ids = await store(
      Array.from({ length: 7 }, (_, n) => ({
        status: 'active' as const, paymentType: 'wallet' as const, nextBillingDate: AT, trialEnd: null, trialWillEndNotifiedAt: null,
        cancelAtPeriodEnd: n % 2 === 0, cyclesCompleted: 0, planIndex: 0, pendingPlanIndex: null, pendingQuantity: null, discounted: false, invoices: [],
      })),
    );
    const em = orm.em.fork();
    const all = await dueSubscriptionIds(em, DUE_AT, null, 1_000_000);
    const pages: string[] = [];
    for (let after: string | null = null; ; ) {
      const page = await dueSubscriptionIds(em, DUE_AT, after, 3);
      if (page.length === 0) break;
      pages.push(...page);
      after = page[page.length - 1];
    }
    expect(pages).toEqual(all);
    expect(all).toEqual(expect.arrayContaining(ids));
  });
});
