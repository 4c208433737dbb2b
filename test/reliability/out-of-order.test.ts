import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Payment } from '../../src/db/entities/payment.js';
import { Topup } from '../../src/db/entities/topup.js';
import { Wallet } from '../../src/db/entities/wallet.js';
import { DATABASES } from '../helpers/database.js';
import { CreditNote } from '../../src/db/entities/credit-note.js';
import { Notification } from '../../src/db/entities/notification.js';
import { makeSubscriptionWithPayment, makeTopup, signedNotification } from '../helpers/factories.js';
import { noticeBody } from '../helpers/reliability/notification-load.js';
import { expectOrder, type Notice } from '../helpers/reliability/reference-model.js';
import { TEST_SERVER_KEY } from '../helpers/reliability/server-process.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/*
 * The load tests shuffle thousands of notifications; this one tries EVERY arrival order of a few
 * histories, one fresh order per permutation, so a failure names the exact order that breaks.
 */

function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

type Step = Omit<Notice, 'orderId' | 'grossAmount'>;

const SUBSCRIPTION_HISTORIES: Record<string, Step[]> = {
  'settled, partly then fully refunded': [
    { transactionStatus: 'pending' },
    { transactionStatus: 'settlement' },
    { transactionStatus: 'partial_refund', refunds: [{ key: 'r1', amount: 50_000 }] },
    { transactionStatus: 'refund', refunds: [{ key: 'r1', amount: 50_000 }, { key: 'r2', amount: 100_000 }] },
  ],
  'settled, partly refunded, stale expire': [
    { transactionStatus: 'pending' },
    { transactionStatus: 'settlement' },
    { transactionStatus: 'partial_refund', refunds: [{ key: 'r1', amount: 30_000 }] },
    { transactionStatus: 'expire' },
  ],
  'card challenged, accepted, settled, stale deny': [
    { transactionStatus: 'capture', fraudStatus: 'challenge' },
    { transactionStatus: 'capture', fraudStatus: 'accept' },
    { transactionStatus: 'settlement' },
    { transactionStatus: 'pending' },
  ],
};

const TOPUP_HISTORIES: Record<string, Step[]> = {
  'settled, stale pending and expire': [{ transactionStatus: 'pending' }, { transactionStatus: 'settlement' }, { transactionStatus: 'expire' }],
};

describe.each(DATABASES)('every arrival order of a notification history ends the same (%s)', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind, { env: { GATEWAY_SERVER_KEY: TEST_SERVER_KEY } });
  });
  afterAll(() => server?.stop());
  const em = () => server.running.billing.orm.em.fork() as EntityManager;
  const send = async (notice: Notice) => {
    const res = await server.api('POST', '/webhook/notification/', { rawBody: noticeBody(notice), headers: { 'content-type': 'application/json' } });
    expect(res.status, res.text).toBe(200);
  };

  for (const [name, steps] of Object.entries(SUBSCRIPTION_HISTORIES)) {
    it(`subscription payment: ${name}`, async () => {
      for (const order of permutations(steps)) {
        const { payment } = await makeSubscriptionWithPayment(em());
        // Refund keys are the merchant's, unique per order.
        const notices = order.map(
          (s) => ({ ...s, orderId: payment.orderId, grossAmount: 150_000, refunds: s.refunds?.map((r) => ({ ...r, key: `${payment.orderId}-${r.key}` })) }) as Notice,
        );
        for (const n of notices) await send(n);
        const expected = expectOrder({ kind: 'subscription', orderId: payment.orderId, user: 0, amount: 150_000 }, notices);
        const actual = await em().findOneOrFail(Payment, payment.id, { populate: ['subscription', 'invoice'] });
        const arrival = order.map((s) => s.transactionStatus).join(' → ');
        expect({
          status: actual.status,
          refundedAmount: actual.refundedAmount,
          subscriptionStatus: actual.subscription!.status,
          invoiceStatus: actual.invoice!.status,
          invoiceRefunded: actual.invoice!.amountRefunded,
        }, arrival).toEqual({
          status: expected.status,
          refundedAmount: expected.refundedAmount,
          subscriptionStatus: expected.subscriptionStatus,
          invoiceStatus: expected.invoiceStatus,
          invoiceRefunded: expected.invoiceRefunded,
        });
      }
    });
  }

  /*
   * Histories that take money back (docs/gateway.md, "Facts out of order"): the messages carry
   * what real Midtrans writes (settlement_time on the reversal, every chargeback step in
   * refunds[] with a free-text reason), and every arrival order must end as the natural one.
   */
  const signed = (fields: Record<string, unknown> & { order_id: string; transaction_status: string; gross_amount: string }) =>
    send2(signedNotification(TEST_SERVER_KEY, fields));
  const send2 = async (body: Record<string, unknown>) => {
    const res = await server.api('POST', '/webhook/notification/', { body });
    expect(res.status, res.text).toBe(200);
  };
  const SETTLED_AT = '2026-01-15 10:15:00';
  const reversalHistory = (orderId: string, gross: string, paymentType: string) => [
    { order_id: orderId, transaction_status: 'pending', gross_amount: gross, payment_type: paymentType },
    { order_id: orderId, transaction_status: 'settlement', gross_amount: gross, payment_type: paymentType, fraud_status: 'accept', settlement_time: SETTLED_AT },
    { order_id: orderId, transaction_status: 'deny', gross_amount: gross, payment_type: paymentType, fraud_status: 'accept', settlement_time: SETTLED_AT },
  ];

  it('subscription payment: a Permata settlement then its reversal (deny with settlement_time), in every order: reversed, invoice open, past_due', async () => {
    for (const order of permutations([0, 1, 2])) {
      const { payment } = await makeSubscriptionWithPayment(em());
      const history = reversalHistory(payment.orderId, payment.grossAmount, 'bank_transfer');
      for (const i of order) await signed(history[i]!);
      const actual = await em().findOneOrFail(Payment, payment.id, { populate: ['subscription', 'invoice'] });
      const arrival = order.map((i) => history[i]!.transaction_status).join(' → ');
      expect({ status: actual.status, invoice: actual.invoice!.status, subscription: actual.subscription!.status }, arrival).toEqual({
        status: 'reversed',
        invoice: 'open',
        subscription: 'past_due',
      });
    }
  });

  it('top-up: a Permata settlement then its reversal, in every order: reversed, the wallet back to zero', async () => {
    for (const order of permutations([0, 1, 2])) {
      const topup = await makeTopup(em(), { amount: '40000.00' });
      const history = reversalHistory(topup.orderId, '40000.00', 'bank_transfer');
      for (const i of order) await signed(history[i]!);
      const arrival = order.map((i) => history[i]!.transaction_status).join(' → ');
      expect((await em().findOneOrFail(Topup, topup.id)).status, arrival).toBe('reversed');
      expect((await em().findOneOrFail(Wallet, { user: topup.user.id })).balance, arrival).toBe('0.00');
    }
  });

  it('card payment: settled, partly then fully charged back (free-text reasons), in every order: one chargeback credit note, two notices, no refund', async () => {
    for (const order of permutations([0, 1, 2])) {
      const { payment } = await makeSubscriptionWithPayment(em(), { payment: { paymentType: 'credit_card' } });
      const gross = payment.grossAmount;
      const part = { refund_chargeback_id: 1, refund_amount: '20000.00', created_at: '2026-02-01 09:00:00', reason: 'Cardholder disputes the transaction' };
      const rest = { refund_chargeback_id: 2, refund_amount: `${Number(gross) - 20000}.00`, created_at: '2026-02-20 09:00:00', reason: 'Dispute lost by merchant' };
      const base = { order_id: payment.orderId, gross_amount: gross, payment_type: 'credit_card', fraud_status: 'accept', settlement_time: SETTLED_AT };
      const history = [
        { ...base, transaction_status: 'settlement' },
        { ...base, transaction_status: 'partial_chargeback', refund_amount: '20000.00', refunds: [part] },
        { ...base, transaction_status: 'chargeback', refund_amount: gross, refunds: [part, rest] },
      ];
      for (const i of order) await signed(history[i]!);
      const arrival = order.map((i) => history[i]!.transaction_status).join(' → ');
      const actual = await em().findOneOrFail(Payment, payment.id, { populate: ['subscription', 'invoice'] });
      expect({ status: actual.status, chargeback: actual.chargebackAmount, refunded: actual.refundedAmount, invoice: actual.invoice!.status }, arrival).toEqual({
        status: 'charged_back',
        chargeback: gross,
        refunded: '0.00',
        invoice: 'open',
      });
      const notes = await em().find(CreditNote, { payment: payment.id });
      expect(notes.map((n) => [n.reason, n.amount]), arrival).toEqual([['chargeback', '20000.00']]);
      const notices = await em().find(Notification, { user: payment.user.id, notificationType: 'payment_charged_back', channel: 'in_app' });
      expect(notices.map((n) => n.data.chargeback_amount).sort(), arrival).toEqual(['20000.00', gross].sort());
    }
  });

  for (const [name, steps] of Object.entries(TOPUP_HISTORIES)) {
    it(`top-up: ${name}`, async () => {
      for (const order of permutations(steps)) {
        const topup = await makeTopup(em(), { amount: '40000.00' });
        for (const s of order) await send({ ...s, orderId: topup.orderId, grossAmount: 40_000 } as Notice);
        const arrival = order.map((s) => s.transactionStatus).join(' → ');
        expect((await em().findOneOrFail(Topup, topup.id)).status, arrival).toBe('success');
        expect((await em().findOneOrFail(Wallet, { user: topup.user.id })).balance, arrival).toBe('40000.00');
      }
    });
  }
});
