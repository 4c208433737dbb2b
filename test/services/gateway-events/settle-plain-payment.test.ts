import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Invoice } from '../../../src/db/entities/invoice.js';
import { Notification } from '../../../src/db/entities/notification.js';
import { Payment } from '../../../src/db/entities/payment.js';
import { PeriodFund } from '../../../src/db/entities/period-fund.js';
import type { Plan } from '../../../src/db/entities/plan.js';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { ManualClock } from '../../../src/domain/clock.js';
import type { DataContext } from '../../../src/services/context.js';
import { applyGatewayEvent } from '../../../src/services/gateway-events/apply-gateway-event.js';
import { eventFromPayload } from '../../../src/services/gateway-events/gateway-event.js';
import { settlePlainPayment } from '../../../src/services/gateway-events/settle-plain-payment.js';
import { DATABASES } from '../../helpers/database.js';
import { makePlan, makeSubscriptionWithPayment, makeUser } from '../../helpers/factories.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';

/*
 * The webhook settles the common case with set-based statements (settle-plain-payment.ts) and
 * everything else through applyToPayment's entities. The two must write the same rows: this
 * settles twin payments, one through each, and compares everything a user can see (payment,
 * invoice, subscription, period fund, notifications, the log's change list), on both databases.
 * Where the plain path must not apply, it must write nothing and leave the event to the other.
 */

type Twin = Parameters<typeof makeSubscriptionWithPayment>[1];

const AT = new Date('2026-03-04T05:06:07.891Z');

describe.each(DATABASES)('the plain settlement writes what applyToPayment writes, on %s', (kind) => {
  let server: TestServer;
  let plan: Plan;
  const clock = new ManualClock(AT);
  const em = (): EntityManager => server.running.billing.orm.em.fork() as EntityManager;

  beforeAll(async () => {
    server = await startTestServer(kind);
    plan = await makePlan(em(), { price: '149999.99', interval: 1, intervalUnit: 'month' });
  });
  afterAll(() => server?.stop());

  /** Every channel on, so that each notification row is written once per channel. */
  const ctx = (tx: EntityManager): DataContext => ({
    em: tx,
    config: { ...server.config, smtpUrl: 'smtp://mail.invalid:25', outboundWebhookUrl: 'https://hooks.invalid/billing' },
    clock,
  });

  async function twin(overrides: Twin) {
    const user = await makeUser(em(), { email: `twin-${Math.random().toString(36).slice(2)}@example.com` });
    return makeSubscriptionWithPayment(em(), { ...overrides, user, plan });
  }

  function settlementOf(orderId: string, extra: Record<string, unknown> = {}) {
    return eventFromPayload({ order_id: orderId, transaction_status: 'settlement', status_code: '200', gross_amount: '149999.99', transaction_id: `tx-${orderId}`, ...extra });
  }

  /** What a user sees of a settled twin, with its own ids, numbers and order id written as placeholders. */
  async function seen(paymentId: string, changes: string[]) {
    const e = em();
    const payment = await e.findOneOrFail(Payment, paymentId, { populate: ['invoice', 'subscription'] });
    const invoice = payment.invoice as Invoice;
    const sub = payment.subscription as Subscription;
    const names = (text: string) =>
      text
        .replaceAll(payment.orderId, '<order>')
        .replaceAll(`tx-${payment.orderId}`, '<tx>')
        .replaceAll(payment.id, '<payment>')
        .replaceAll(invoice.number, '<invoice>')
        .replaceAll(sub.id, '<subscription>');
    const funds = await e.find(PeriodFund, { payment: paymentId }, { orderBy: { periodStart: 'asc' } });
    const notifications = await e.find(Notification, { user: payment.user.id }, { orderBy: { notificationType: 'asc', channel: 'asc' } });
    return {
      changes: changes.map(names),
      payment: {
        status: payment.status,
        paidAt: payment.paidAt,
        transactionId: payment.transactionId && names(payment.transactionId),
        gatewayStatus: payment.gatewayStatus,
        fraudStatus: payment.fraudStatus,
        outcomeUnknown: payment.outcomeUnknown,
        refundedAmount: payment.refundedAmount,
        creditedAmount: payment.creditedAmount,
      },
      invoice: { status: invoice.status, paidAt: invoice.paidAt, amountRefunded: invoice.amountRefunded },
      subscription: {
        status: sub.status,
        live: sub.liveUserId === payment.user.id,
        cancelReason: sub.cancelReason,
        billingAnchor: sub.billingAnchor,
        currentPeriodStart: sub.currentPeriodStart,
        currentPeriodEnd: sub.currentPeriodEnd,
        nextBillingDate: sub.nextBillingDate,
        cyclesCompleted: sub.cyclesCompleted,
        paymentType: sub.paymentType,
      },
      funds: funds.map((f) => ({ amount: f.amount, periodStart: f.periodStart, periodEnd: f.periodEnd, createdAt: f.createdAt })),
      notifications: notifications.map((n) => ({
        type: n.notificationType,
        channel: n.channel,
        status: n.status,
        title: n.title,
        message: names(n.message),
        data: JSON.parse(names(JSON.stringify(n.data))),
        nextAttemptAt: n.nextAttemptAt,
        createdAt: n.createdAt,
      })),
    };
  }

  const cycle = { billingReason: 'subscription_cycle' as const, periodStart: new Date('2026-03-01T00:00:00.000Z'), periodEnd: new Date('2026-04-01T00:00:00.000Z') };
  const active = {
    status: 'active' as const,
    billingAnchor: new Date('2026-02-01T00:00:00.000Z'),
    currentPeriodStart: new Date('2026-02-01T00:00:00.000Z'),
    currentPeriodEnd: new Date('2026-03-01T00:00:00.000Z'),
    nextBillingDate: new Date('2026-03-01T00:00:00.000Z'),
    cyclesCompleted: 1,
  };

  const plainCases: [string, Twin, Record<string, unknown>?][] = [
    ['a first payment of a pending subscription', {}],
    ['a first payment with payment details, a fraud status and a transaction id already known', {
      payment: { paymentDetails: { va_numbers: [{ bank: 'bca', va_number: '8800123' }], nested: { n: 1.5, ok: true } }, transactionId: 'tx-known', fraudStatus: 'challenge' },
    }, { fraud_status: 'accept' }],
    ['a renewal of an active subscription', { subscription: active, invoice: cycle }],
    ['a renewal that brings a past-due subscription back, clearing its cancel reason', { subscription: { ...active, status: 'past_due', cancelReason: 'card declined' }, invoice: cycle }],
    ['a renewal of an uncollectible invoice of a paused subscription', { subscription: { ...active, status: 'paused', pausedAt: new Date('2026-03-02T00:00:00.000Z') }, invoice: { ...cycle, status: 'uncollectible' } }],
    ['a first payment of a trialing subscription', { subscription: { status: 'trialing', trialEnd: new Date('2026-03-04T00:00:00.000Z') } }],
  ];

  it.each(plainCases)('%s', async (_name, overrides, extra) => {
    const viaRows = await twin(overrides);
    const viaEntities = await twin(overrides);

    const plain = await em().transactional((tx) => settlePlainPayment(ctx(tx as EntityManager), settlementOf(viaRows.payment.orderId, extra)));
    expect(plain, 'the plain path took it').not.toBeNull();
    const general = await em().transactional(async (tx) => {
      const outcome = await applyGatewayEvent(ctx(tx as EntityManager), settlementOf(viaEntities.payment.orderId, extra));
      await tx.flush();
      return outcome;
    });

    const a = await seen(viaRows.payment.id, plain!.changes);
    const b = await seen(viaEntities.payment.id, general.changes);
    expect(a).toEqual(b);
    // And it did settle: the comparison is not of two untouched twins.
    expect(a.payment.status).toBe('settled');
    expect(a.subscription.status).toBe('active');
    expect(a.funds).toHaveLength(1);
  });

  const notPlain: [string, Twin, Record<string, unknown>?][] = [
    ['a payment that had failed', { payment: { status: 'failed' } }],
    ['refunds that overtook the settlement', { payment: { refundedAmount: '10000.00' } }],
    ['a canceled subscription (the money goes to the wallet)', { subscription: { status: 'canceled', liveUserId: null } }],
    ['an invoice already paid', { invoice: { status: 'paid' } }],
    ['a plan change', { invoice: { billingReason: 'subscription_update' } }],
    ['an amount that does not match', {}, { gross_amount: '1.00' }],
    ['a verified answer that saves the card', { payment: { paymentType: 'credit_card' } }, { saved_token_id: 'tok-1', verified: true }],
  ];

  it.each(notPlain)('not plain: %s — nothing written, the event left to applyToPayment', async (_name, overrides, extra) => {
    const { payment } = await twin(overrides);
    const { verified, ...fields } = extra ?? {};
    const event = { ...settlementOf(payment.orderId, fields), verified: verified === true };
    const before = await seen(payment.id, []);
    const outcome = await em().transactional((tx) => settlePlainPayment(ctx(tx as EntityManager), event));
    expect(outcome).toBeNull();
    expect(await seen(payment.id, [])).toEqual(before);
  });
});
