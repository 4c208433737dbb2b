import { randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Notification, type NotificationType } from '../../src/db/entities/notification.js';
import { Payment, Refund, type PaymentStatus } from '../../src/db/entities/payment.js';
import { PeriodFund } from '../../src/db/entities/period-fund.js';
import type { Plan } from '../../src/db/entities/plan.js';
import { Subscription, type PaymentType, type SubscriptionStatus } from '../../src/db/entities/subscription.js';
import { Topup } from '../../src/db/entities/topup.js';
import type { User } from '../../src/db/entities/user.js';
import { Wallet, WalletTransaction } from '../../src/db/entities/wallet.js';
import { ManualClock } from '../../src/domain/clock.js';
import { add, subtract } from '../../src/domain/money.js';
import { migrateUp, openOrm, type Orm } from '../../src/db/orm.js';
import type { DataContext } from '../../src/services/context.js';
import { churnReport } from '../../src/services/reports/churn-report.js';
import { mrrReport } from '../../src/services/reports/mrr-report.js';
import { revenueReport } from '../../src/services/reports/revenue-report.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';
import { runCli } from '../helpers/cli.js';
import { makePlan, makeUser } from '../helpers/factories.js';

/*
 * The reports against a history written by hand (done-when of issue 30: "the reports match the
 * hand-computed fixture to the rupiah"). Months of history cannot be made through the API, so the
 * rows are stored as the services leave them: settled payments with the period funds they bought
 * (period-funds.ts), refunds, a top-up refunded at the gateway (its wallet debit), a partial
 * chargeback (its in-app notification), plan changes (their in-app notifications) and an open
 * renewal invoice of a past-due subscription. BILLING_TIMEZONE is Asia/Jakarta (UTC+7): January
 * ends at 2026-01-31T17:00Z. docs/reports.md walks through the same fixture.
 *
 * Plans: basic 100,000/month (sort 1), pro 250,000/month (2), annual 1,200,000 per 12 months
 * (3: 100,000 a month), weekly 30,000/week (4: 30,000 × 52 / 12 = 130,000 a month).
 *
 * Gateway money (time UTC → Jakarta month):
 *   A (alice, bank_transfer)  A1 2025-12-10 100,000 basic; A2 2026-01-10 100,000; A3 2026-02-10 100,000
 *                             (10,000 of it refunded to the wallet 02-12: not gateway money);
 *                             upgrade to pro 02-15, A4 90,000; A5 2026-03-10 250,000 pro.
 *                             Top-ups, gopay: T1 2026-01-15 50,000 (20,000 refunded at the gateway
 *                             2026-03-03); T2 2026-01-31T16:30Z 50,000 (23:30 in Jakarta: January);
 *                             T4 2026-03-31T17:00Z 75,000 (00:00 on 1 April: outside the report).
 *   B (bob, credit_card)      pro: B1 2025-12-05, B2 2026-01-05, B3 2026-02-05, 250,000 each; B3 partly
 *                             charged back 50,000 on 2026-03-02; downgrade to basic scheduled 02-20,
 *                             applied at the renewal of 03-05: B4 2026-03-05 100,000.
 *   C (carol, gopay)          basic: C1 2025-12-20, C2 2026-01-20, 100,000 each; 40,000 of C2 refunded at
 *                             the gateway 2026-02-03; canceled at period end (paid to 02-20).
 *   D (dave)                  basic, bank_transfer: D0 2025-11-01 100,000 (paid to 12-01), then a failed
 *                             payment and a reversed one in January (neither counts); returns
 *                             with a new subscription, echannel: D2 2026-02-10, D3 2026-03-10, 100,000 each.
 *   E (erin, qris)            annual: E1 2026-01-31T18:30Z 1,200,000 (01:30 on 1 February: February).
 *   F (frank)                 basic, trial 2026-01-25 to 02-08; F1 gopay 2026-02-08 100,000; top-up T3
 *                             bank_transfer 2026-02-20 100,000; F2 2026-03-08 100,000 from the wallet.
 *   G (gina, shopeepay)       weekly: G1 2026-01-26 30,000 (paid to 02-02), then canceled.
 *   H (hana)                  basic, trialing from 2026-02-20 to 04-15: never paying.
 *   I (ivan, bank_transfer)   basic: I1 2026-02-01 100,000 (paid to 03-01); renewal for 03-01 to 04-01
 *                             unpaid, past due.
 *
 * Revenue          collected   refunded  charged_back  net
 *   2026-01          580,000          0            0     580,000
 *     bank_transfer  100,000 (A2)                        100,000
 *     credit_card    250,000 (B2)                        250,000
 *     gopay          200,000 (C2, T1, T2)                200,000
 *     shopeepay       30,000 (G1)                         30,000
 *   2026-02        2,040,000     40,000            0   2,000,000
 *     bank_transfer  390,000 (A3, A4, T3, I1)            390,000
 *     credit_card    250,000 (B3)                        250,000
 *     echannel       100,000 (D2)                        100,000
 *     gopay          100,000 (F1)  40,000 (C2)            60,000
 *     qris         1,200,000 (E1)                      1,200,000
 *   2026-03          450,000     20,000       50,000     380,000
 *     bank_transfer  250,000 (A5)                        250,000
 *     credit_card    100,000 (B4)          50,000 (B3)   50,000
 *     echannel       100,000 (D3)                        100,000
 *     gopay                0     20,000 (T1)             -20,000
 *
 * MRR at each month's end (Jakarta), per customer:
 *            A        B        C        D        E        F        G        I        total
 *   Dec    100,000  250,000  100,000       0        0        0        0        0      450,000
 *   Jan    100,000  250,000  100,000       0        0  (trial)  130,000       0      580,000
 *   Feb    250,000  250,000       0  100,000  100,000  100,000       0  100,000      900,000
 *   Mar    250,000  100,000       0  100,000  100,000  100,000       0  100,000 (past due) 750,000
 *   Jan: new 130,000 (G)                                                       net_new  130,000
 *   Feb: new 300,000 (E, F, I), expansion 150,000 (A), reactivated 100,000 (D),
 *        churned 230,000 (C 100,000, G 130,000)                               net_new  320,000
 *   Mar: contraction 150,000 (B)                                              net_new -150,000
 *   by plan: Jan basic 200,000 (A, C), pro 250,000 (B), weekly 130,000 (G);
 *            Feb basic 300,000 (D, F, I), pro 500,000 (A, B), annual 100,000 (E);
 *            Mar basic 400,000 (B, D, F, I), pro 250,000 (A), annual 100,000 (E).
 *
 * Churn: Jan 3 at start, 0 churned, 0.00 %; MRR at start 450,000, rates 0.00 and 0.00.
 *        Feb 4 at start (A, B, C, G), 2 churned: 50.00 %; MRR at start 580,000; gross revenue churn
 *            230,000 / 580,000 = 39.655… → 39.66; net (230,000 − 150,000 − 100,000) / 580,000 = −3.448… → −3.45.
 *        Mar 6 at start (A, B, D, E, F, I), 0 churned: 0.00 %; MRR at start 900,000; contraction
 *            150,000: 16.666… → 16.67 both.
 */

const at = (iso: string) => new Date(iso);
// NOTE: ids are given here, not left to the flush: the notifications' data names them before it.
const id = () => randomBytes(6).toString('hex').toUpperCase();

class Fixture {
  constructor(private readonly em: EntityManager) {}

  subscription(user: User, plan: Plan, status: SubscriptionStatus, paymentType: PaymentType, extra: Partial<Subscription> = {}): Subscription {
    return this.em.create(Subscription, { id: randomUUID(), user, plan, status, paymentType, metadata: {}, customerDetails: {}, cyclesCompleted: 0, cancelAtPeriodEnd: false, ...extra } as unknown as Subscription);
  }

  payment(
    sub: Subscription,
    paymentType: PaymentType,
    amount: string,
    paidAt: string | null,
    funds: [string, string, string][] = [],
    status: PaymentStatus = 'settled',
  ): Payment {
    const payment = this.em.create(Payment, {
      id: randomUUID(),
      orderId: `SUB-${id()}`,
      user: sub.user,
      subscription: sub,
      status,
      paymentType,
      grossAmount: amount,
      currency: 'IDR',
      paymentDetails: {},
      paidAt: paidAt ? at(paidAt) : null,
      createdAt: at(paidAt ?? '2026-01-12T03:00:00Z'),
    } as unknown as Payment);
    for (const [start, end, fund] of funds) {
      this.em.create(PeriodFund, { subscription: sub, payment, amount: fund, periodStart: at(start), periodEnd: at(end), createdAt: at(start) } as PeriodFund);
    }
    return payment;
  }

  refund(payment: Payment, amount: string, when: string, destination: 'gateway' | 'wallet'): void {
    this.em.create(Refund, { payment, refundKey: `RF-${id()}`, amount, status: 'succeeded', destination, createdAt: at(when) } as unknown as Refund);
  }

  topup(user: User, paymentType: Exclude<PaymentType, 'wallet'>, amount: string, paidAt: string): Topup {
    return this.em.create(Topup, { id: randomUUID(), orderId: `TOPUP-${id()}`, user, amount, currency: 'IDR', status: 'success', paymentType, paymentDetails: {}, paidAt: at(paidAt) } as unknown as Topup);
  }

  note(user: User, type: NotificationType, data: Record<string, unknown>, when: string): void {
    this.em.create(Notification, { user, notificationType: type, channel: 'in_app', status: 'queued', title: type, message: type, data, createdAt: at(when) } as unknown as Notification);
  }
}

async function seed(em: EntityManager): Promise<void> {
  const basic = await makePlan(em, { slug: 'basic', name: 'Basic', price: '100000.00', sortOrder: 1 });
  const pro = await makePlan(em, { slug: 'pro', name: 'Pro', price: '250000.00', sortOrder: 2 });
  const annual = await makePlan(em, { slug: 'annual', name: 'Annual', price: '1200000.00', interval: 12, sortOrder: 3 });
  const weekly = await makePlan(em, { slug: 'weekly', name: 'Weekly', price: '30000.00', intervalUnit: 'week', sortOrder: 4 });
  const user = (name: string) => makeUser(em, { username: `${name}_${id().toLowerCase()}` });
  const alice = await user('alice');
  const bob = await user('bob');
  const carol = await user('carol');
  const dave = await user('dave');
  const erin = await user('erin');
  const frank = await user('frank');
  const gina = await user('gina');
  const hana = await user('hana');
  const ivan = await user('ivan');
  const x = new Fixture(em);

  // A: basic, upgraded to pro on 02-15 (the change's funds run from then), top-ups.
  const subA = x.subscription(alice, pro, 'active', 'bank_transfer');
  x.payment(subA, 'bank_transfer', '100000.00', '2025-12-10T03:00:00Z', [['2025-12-10T03:00:00Z', '2026-01-10T03:00:00Z', '100000.00']]);
  x.payment(subA, 'bank_transfer', '100000.00', '2026-01-10T03:00:00Z', [['2026-01-10T03:00:00Z', '2026-02-10T03:00:00Z', '100000.00']]);
  const a3 = x.payment(subA, 'bank_transfer', '100000.00', '2026-02-10T03:00:00Z', [
    ['2026-02-10T03:00:00Z', '2026-02-15T03:00:00Z', '17857.00'],
    ['2026-02-15T03:00:00Z', '2026-03-10T03:00:00Z', '72143.00'],
  ]);
  x.refund(a3, '10000.00', '2026-02-12T03:00:00Z', 'wallet');
  x.payment(subA, 'bank_transfer', '90000.00', '2026-02-15T03:00:00Z', [['2026-02-15T03:00:00Z', '2026-03-10T03:00:00Z', '90000.00']]);
  x.note(alice, 'subscription_plan_changed', { subscription_id: subA.id, plan_name: 'Pro', plan_slug: 'pro', old_plan_name: 'Basic', proration: '90000.00', credited: '0.00' }, '2026-02-15T03:00:00Z');
  x.payment(subA, 'bank_transfer', '250000.00', '2026-03-10T03:00:00Z', [['2026-03-10T03:00:00Z', '2026-04-10T03:00:00Z', '250000.00']]);
  const t1 = x.topup(alice, 'gopay', '50000.00', '2026-01-15T10:00:00Z');
  x.topup(alice, 'gopay', '50000.00', '2026-01-31T16:30:00Z');
  x.topup(alice, 'gopay', '75000.00', '2026-03-31T17:00:00Z');
  const wallet = em.create(Wallet, { user: alice, balance: '0.00', currency: 'IDR', entries: 1 } as unknown as Wallet);
  em.create(WalletTransaction, {
    wallet, kind: 'debit', amount: '20000.00', balanceAfter: '0.00', source: 'topup', referenceId: `gateway-refund:${t1.id}:20000.00`,
    description: 'Top-up refunded at the gateway', position: 1, createdAt: at('2026-03-03T04:00:00Z'),
  } as unknown as WalletTransaction);

  // B: pro, partly charged back, downgraded to basic at the renewal of 03-05.
  const subB = x.subscription(bob, basic, 'active', 'credit_card');
  x.payment(subB, 'credit_card', '250000.00', '2025-12-05T03:00:00Z', [['2025-12-05T03:00:00Z', '2026-01-05T03:00:00Z', '250000.00']]);
  x.payment(subB, 'credit_card', '250000.00', '2026-01-05T03:00:00Z', [['2026-01-05T03:00:00Z', '2026-02-05T03:00:00Z', '250000.00']]);
  const b3 = x.payment(subB, 'credit_card', '250000.00', '2026-02-05T03:00:00Z', [['2026-02-05T03:00:00Z', '2026-03-02T02:00:00Z', '223214.00']]);
  b3.chargebackAmount = '50000.00';
  x.note(bob, 'payment_charged_back', { payment_id: b3.id, order_id: b3.orderId, amount: '250000.00', currency: 'IDR', payment_type: 'credit_card', chargeback_amount: '50000.00', fully_charged_back: false }, '2026-03-02T02:00:00Z');
  x.note(bob, 'subscription_plan_changed', { subscription_id: subB.id, plan_name: 'Basic', plan_slug: 'pro', old_plan_name: 'Pro', scheduled: true }, '2026-02-20T03:00:00Z');
  x.note(bob, 'subscription_plan_changed', { subscription_id: subB.id, plan_name: 'Basic', plan_slug: 'basic', old_plan_name: 'Pro', applied_at_renewal: true, current_period_end: '2026-03-05T03:00:00.000Z' }, '2026-03-02T03:00:00Z');
  x.payment(subB, 'credit_card', '100000.00', '2026-03-05T03:00:00Z', [['2026-03-05T03:00:00Z', '2026-04-05T03:00:00Z', '100000.00']]);

  // C: basic, 40,000 of January's payment refunded at the gateway, canceled at the period's end.
  const subC = x.subscription(carol, basic, 'canceled', 'gopay', { canceledAt: at('2026-02-03T05:00:00Z'), cancelAtPeriodEnd: true });
  x.payment(subC, 'gopay', '100000.00', '2025-12-20T03:00:00Z', [['2025-12-20T03:00:00Z', '2026-01-20T03:00:00Z', '100000.00']]);
  const c2 = x.payment(
    subC,
    'gopay',
    '100000.00',
    '2026-01-20T03:00:00Z',
    [
      ['2026-01-20T03:00:00Z', '2026-02-03T05:00:00Z', '45000.00'],
      ['2026-02-03T05:00:00Z', '2026-02-20T03:00:00Z', '15000.00'],
    ],
    'partially_refunded',
  );
  c2.refundedAmount = '40000.00';
  x.refund(c2, '40000.00', '2026-02-03T05:00:00Z', 'gateway');

  // D: paid November, gone by December, back in February on a new subscription.
  const subD0 = x.subscription(dave, basic, 'canceled', 'bank_transfer', { canceledAt: at('2025-12-01T03:00:00Z') });
  x.payment(subD0, 'bank_transfer', '100000.00', '2025-11-01T03:00:00Z', [['2025-11-01T03:00:00Z', '2025-12-01T03:00:00Z', '100000.00']]);
  x.payment(subD0, 'bank_transfer', '100000.00', null, [], 'failed');
  x.payment(subD0, 'bank_transfer', '100000.00', '2026-01-13T03:00:00Z', [], 'reversed');
  const subD = x.subscription(dave, basic, 'active', 'echannel');
  x.payment(subD, 'echannel', '100000.00', '2026-02-10T03:00:00Z', [['2026-02-10T03:00:00Z', '2026-03-10T03:00:00Z', '100000.00']]);
  x.payment(subD, 'echannel', '100000.00', '2026-03-10T03:00:00Z', [['2026-03-10T03:00:00Z', '2026-04-10T03:00:00Z', '100000.00']]);

  // E: annual, paid half an hour after midnight on 1 February in Jakarta.
  const subE = x.subscription(erin, annual, 'active', 'qris');
  x.payment(subE, 'qris', '1200000.00', '2026-01-31T18:30:00Z', [['2026-01-31T18:30:00Z', '2027-01-31T18:30:00Z', '1200000.00']]);

  // F: a trial over January's end, then gopay, then the wallet.
  const subF = x.subscription(frank, basic, 'active', 'gopay', { trialEnd: at('2026-02-08T03:00:00Z') });
  x.payment(subF, 'gopay', '100000.00', '2026-02-08T03:00:00Z', [['2026-02-08T03:00:00Z', '2026-03-08T03:00:00Z', '100000.00']]);
  x.topup(frank, 'bank_transfer', '100000.00', '2026-02-20T03:00:00Z');
  x.payment(subF, 'wallet', '100000.00', '2026-03-08T03:00:00Z', [['2026-03-08T03:00:00Z', '2026-04-08T03:00:00Z', '100000.00']]);

  // G: one week of the weekly plan over January's end.
  const subG = x.subscription(gina, weekly, 'canceled', 'shopeepay', { canceledAt: at('2026-01-28T03:00:00Z'), cancelAtPeriodEnd: true });
  x.payment(subG, 'shopeepay', '30000.00', '2026-01-26T03:00:00Z', [['2026-01-26T03:00:00Z', '2026-02-02T03:00:00Z', '30000.00']]);

  // H: trialing at the ends of February and March, never paying.
  x.subscription(hana, basic, 'trialing', 'gopay', { trialEnd: at('2026-04-15T03:00:00Z'), liveUserId: hana.id });

  // I: paid February, March's renewal open: past due.
  const subI = x.subscription(ivan, basic, 'past_due', 'bank_transfer', { liveUserId: ivan.id });
  x.payment(subI, 'bank_transfer', '100000.00', '2026-02-01T03:00:00Z', [['2026-02-01T03:00:00Z', '2026-03-01T03:00:00Z', '100000.00']]);
  em.create(Invoice, {
    number: `INV-T-${id()}`, user: ivan, subscription: subI, status: 'open', billingReason: 'subscription_cycle', currency: 'IDR',
    issueDate: '2026-02-26', dueDate: '2026-03-01', subtotal: '100000.00', totalAmount: '100000.00', amountRefunded: '0.00',
    periodStart: at('2026-03-01T03:00:00Z'), periodEnd: at('2026-04-01T03:00:00Z'),
  } as unknown as Invoice);

  await em.flush();
}

const RANGE = { from: '2026-01', to: '2026-03' };

describe.each(DATABASES)('reports on %s', (kind) => {
  let db: TestDatabase;
  let orm: Orm;
  let ctx: DataContext;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    orm = await openOrm(db.url, { create: true });
    await migrateUp(orm);
    await seed(orm.em.fork());
    const config = loadConfig({ BILLING_TIMEZONE: 'Asia/Jakarta', WALLET_CURRENCY: 'IDR', DATABASE_URL: db.url }, {});
    ctx = { em: orm.em.fork(), config, clock: new ManualClock(at('2026-04-05T00:00:00Z')) };
  }, 60_000);

  afterAll(async () => {
    await orm?.close(true);
    await db?.drop();
  });

  it('revenue: collected, refunded, charged back and net by month and method, to the rupiah', async () => {
    const zero = '0.00';
    const m = (payment_type: string, collected: string, refunded = zero, charged_back = zero, net = collected) => ({ payment_type, collected, refunded, charged_back, net });
    expect(await revenueReport(ctx, RANGE)).toEqual({
      from: '2026-01',
      to: '2026-03',
      timezone: 'Asia/Jakarta',
      currency: 'IDR',
      rows: [
        {
          month: '2026-01', collected: '580000.00', refunded: zero, charged_back: zero, net: '580000.00',
          by_method: [m('bank_transfer', '100000.00'), m('credit_card', '250000.00'), m('gopay', '200000.00'), m('shopeepay', '30000.00')],
        },
        {
          month: '2026-02', collected: '2040000.00', refunded: '40000.00', charged_back: zero, net: '2000000.00',
          by_method: [
            m('bank_transfer', '390000.00'),
            m('credit_card', '250000.00'),
            m('echannel', '100000.00'),
            m('gopay', '100000.00', '40000.00', zero, '60000.00'),
            m('qris', '1200000.00'),
          ],
        },
        {
          month: '2026-03', collected: '450000.00', refunded: '20000.00', charged_back: '50000.00', net: '380000.00',
          by_method: [
            m('bank_transfer', '250000.00'),
            m('credit_card', '100000.00', zero, '50000.00', '50000.00'),
            m('echannel', '100000.00'),
            m('gopay', zero, '20000.00', zero, '-20000.00'),
          ],
        },
      ],
    });
  });

  it('MRR: month-end MRR by plan and its movements per customer, to the rupiah', async () => {
    const report = await mrrReport(ctx, RANGE);
    const plan = (slug: string, mrr: string, subscriptions: number) => ({ plan_slug: slug, plan_name: slug[0].toUpperCase() + slug.slice(1), mrr, subscriptions });
    const zero = '0.00';
    expect(report).toMatchObject({ from: '2026-01', to: '2026-03', timezone: 'Asia/Jakarta', currency: 'IDR' });
    expect(report.rows.map(({ by_plan, ...row }) => ({ ...row, by_plan: by_plan.map(({ plan_id, ...p }) => (expect(plan_id).toMatch(/^[0-9a-f-]{36}$/), p)) }))).toEqual([
      {
        month: '2026-01', partial: false, mrr: '580000.00', new: '130000.00', expansion: zero, contraction: zero, churned: zero, reactivated: zero, net_new: '130000.00',
        by_plan: [plan('basic', '200000.00', 2), plan('pro', '250000.00', 1), plan('weekly', '130000.00', 1)],
      },
      {
        month: '2026-02', partial: false, mrr: '900000.00', new: '300000.00', expansion: '150000.00', contraction: zero, churned: '230000.00', reactivated: '100000.00', net_new: '320000.00',
        by_plan: [plan('basic', '300000.00', 3), plan('pro', '500000.00', 2), plan('annual', '100000.00', 1)],
      },
      {
        month: '2026-03', partial: false, mrr: '750000.00', new: zero, expansion: zero, contraction: '150000.00', churned: zero, reactivated: zero, net_new: '-150000.00',
        by_plan: [plan('basic', '400000.00', 4), plan('pro', '250000.00', 1), plan('annual', '100000.00', 1)],
      },
    ]);
  });

  it('MRR: each month moves by its net new MRR from the month before', async () => {
    const report = await mrrReport(ctx, { from: '2025-11', to: '2026-04' });
    let previous: string | null = null;
    for (const row of report.rows) {
      if (previous !== null) expect(subtract(row.mrr, previous)).toBe(row.net_new);
      expect(add(row.new, row.expansion, row.reactivated)).toBe(add(row.net_new, row.contraction, row.churned));
      previous = row.mrr;
    }
  });

  it('churn: logo churn and gross and net revenue churn, consistent with the MRR report', async () => {
    expect(await churnReport(ctx, RANGE)).toEqual({
      from: '2026-01',
      to: '2026-03',
      timezone: 'Asia/Jakarta',
      currency: 'IDR',
      rows: [
        {
          month: '2026-01', customers_at_start: 3, customers_churned: 0, logo_churn_rate: '0.00', mrr_at_start: '450000.00',
          churned_mrr: '0.00', contraction_mrr: '0.00', expansion_mrr: '0.00', revenue_churn_rate: '0.00', net_revenue_churn_rate: '0.00',
        },
        {
          month: '2026-02', customers_at_start: 4, customers_churned: 2, logo_churn_rate: '50.00', mrr_at_start: '580000.00',
          churned_mrr: '230000.00', contraction_mrr: '0.00', expansion_mrr: '150000.00', revenue_churn_rate: '39.66', net_revenue_churn_rate: '-3.45',
        },
        {
          month: '2026-03', customers_at_start: 6, customers_churned: 0, logo_churn_rate: '0.00', mrr_at_start: '900000.00',
          churned_mrr: '0.00', contraction_mrr: '150000.00', expansion_mrr: '0.00', revenue_churn_rate: '16.67', net_revenue_churn_rate: '16.67',
        },
      ],
    });
  });

  it('when nothing was paying at the start, the rates are null', async () => {
    const report = await churnReport(ctx, { from: '2025-10', to: '2025-10' });
    expect(report.rows).toEqual([
      expect.objectContaining({ month: '2025-10', customers_at_start: 0, mrr_at_start: '0.00', logo_churn_rate: null, revenue_churn_rate: null, net_revenue_churn_rate: null }),
    ]);
  });

  it('a month with no money has zeros and no methods', async () => {
    const report = await revenueReport(ctx, { from: '2025-10', to: '2025-10' });
    expect(report.rows).toEqual([{ month: '2025-10', collected: '0.00', refunded: '0.00', charged_back: '0.00', net: '0.00', by_method: [] }]);
  });

  it.each([
    [{ from: '2026-1', to: '2026-03' }, 'from'],
    [{ from: '2026-01', to: '2026-13' }, 'to'],
    [{ from: '2026-03', to: '2026-01' }, 'to'],
    [{ from: '2016-01', to: '2026-01' }, 'to'],
  ])('when the range is %o it is refused naming %s', async (range, field) => {
    for (const report of [revenueReport, mrrReport, churnReport]) {
      await expect(report(ctx, range)).rejects.toMatchObject({ code: 'validation_error', errors: [expect.objectContaining({ field })] });
    }
  });

  it('when the range is exactly 120 months it is answered', async () => {
    const report = await revenueReport(ctx, { from: '2016-02', to: '2026-01' });
    expect(report.rows).toHaveLength(120);
  });
  describe('billing-admin reports', () => {
    const env = () => ({ DATABASE_URL: db.url, BILLING_TIMEZONE: 'Asia/Jakarta', SESSION_SECRET: 'cli-test' });

    it('--json prints the same object as the service', async () => {
      for (const [name, report] of [['revenue', revenueReport], ['mrr', mrrReport], ['churn', churnReport]] as const) {
        const run = await runCli(['reports', name, '--from', '2026-01', '--to', '2026-03', '--json'], env());
        expect(run.code, run.stderr).toBe(0);
        expect(run.json).toEqual(await report(ctx, RANGE));
      }
    });

    it('prints a table by default and CSV with --csv', async () => {
      const text = await runCli(['reports', 'revenue', '--from', '2026-03', '--to', '2026-03'], env());
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toMatch(/^2026-03\s+credit_card\s+100000\.00\s+0\.00\s+50000\.00\s+50000\.00$/m);
      const csv = await runCli(['reports', 'churn', '--from', '2026-02', '--to', '2026-02', '--csv'], env());
      expect(csv.code, csv.stderr).toBe(0);
      expect(csv.stdout.trim().split('\n')).toEqual([
        'month,customers_at_start,customers_churned,logo_churn_rate,mrr_at_start,churned_mrr,contraction_mrr,expansion_mrr,revenue_churn_rate,net_revenue_churn_rate',
        '2026-02,4,2,50.00,580000.00,230000.00,0.00,150000.00,39.66,-3.45',
      ]);
    });

    it('when the range is not valid it refuses with the usage exit status', async () => {
      const run = await runCli(['reports', 'mrr', '--from', '2026-03', '--to', '2026-01'], env());
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/to/);
    });
  });
});
