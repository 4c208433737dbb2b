import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Payment } from '../../src/db/entities/payment.js';
import { Topup } from '../../src/db/entities/topup.js';
import { Wallet } from '../../src/db/entities/wallet.js';
import { DATABASES } from '../helpers/database.js';
import { makeSubscriptionWithPayment, makeTopup } from '../helpers/factories.js';
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
