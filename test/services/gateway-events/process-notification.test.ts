import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Notification } from '../../../src/db/entities/notification.js';
import { Payment } from '../../../src/db/entities/payment.js';
import { Wallet, WalletTransaction } from '../../../src/db/entities/wallet.js';
import { WebhookLog } from '../../../src/db/entities/webhook-log.js';
import type { DataContext } from '../../../src/services/context.js';
import { eventFromPayload } from '../../../src/services/gateway-events/gateway-event.js';
import {
  processRecordedNotification,
  recordAndApplyGatewayEvent,
  recordNotification,
} from '../../../src/services/gateway-events/process-notification.js';
import { DATABASES } from '../../helpers/database.js';
import { makeSubscriptionWithPayment, makeTopup, signedNotification } from '../../helpers/factories.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';

describe.each(DATABASES)('the notification pipeline on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
  });
  afterAll(() => server?.stop());

  const em = (): EntityManager => server.running.billing.orm.em.fork() as EntityManager;
  const ctx = (): DataContext => ({ em: em(), config: server.config, clock: server.running.billing.clock });
  const sign = (fields: Parameters<typeof signedNotification>[1]) => signedNotification(server.config.gateway.serverKey, fields);

  describe('recordAndApplyGatewayEvent (sync and charge answers)', () => {
    it('applies a charge answer as a `charge` log, and the gateway notification of the same status is then a duplicate', async () => {
      const { payment, user } = await makeSubscriptionWithPayment(em());
      const answer = { order_id: payment.orderId, transaction_status: 'pending', status_code: '201', gross_amount: '150000.00', transaction_id: 'tx-1' };
      const outcome = await recordAndApplyGatewayEvent(ctx(), { event: eventFromPayload(answer), source: 'charge' });
      expect(outcome.result).toBe('processed');
      expect(outcome.changes).toEqual(['payment pending notified']);
      expect(outcome.log).toMatchObject({ source: 'charge', status: 'processed', orderId: payment.orderId, ipAddress: null, attempts: 1 });
      expect(JSON.parse(outcome.log.payload)).toMatchObject(answer);

      const res = await server.api('POST', '/webhook/notification/', { body: sign({ order_id: payment.orderId, transaction_status: 'pending', gross_amount: '150000.00' }) });
      expect(res.body.status).toBe('duplicate');
      expect(await em().count(Notification, { user: user.id, notificationType: 'payment_pending' })).toBe(1);
    });

    it('needs no signature for a status answer we asked for, but still fails an amount mismatch', async () => {
      const { payment } = await makeSubscriptionWithPayment(em());
      const outcome = await recordAndApplyGatewayEvent(ctx(), {
        event: eventFromPayload({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '1.00' }),
        source: 'sync',
      });
      expect(outcome.result).toBe('failed');
      expect(outcome.log.status).toBe('failed');
      expect(outcome.error).toMatch(/gross_amount/);
      expect((await em().findOneOrFail(Payment, payment.id)).status).toBe('pending');
    });

    it('refuses to run inside a caller transaction (it commits on its own)', async () => {
      const { payment } = await makeSubscriptionWithPayment(em());
      const event = eventFromPayload({ order_id: payment.orderId, transaction_status: 'pending', gross_amount: '150000.00' });
      await expect(
        em().transactional((tx) => recordAndApplyGatewayEvent({ ...ctx(), em: tx }, { event, source: 'sync' })),
      ).rejects.toThrow(/outside a transaction/);
    });
  });

  describe('processing a stored log again', () => {
    it('the same ignored log (an order not known yet) processed by several replays at once is applied exactly once', async () => {
      const orderId = `TOPUP-RACE${Date.now()}`;
      const log = await recordNotification(ctx(), {
        rawPayload: JSON.stringify(sign({ order_id: orderId, transaction_status: 'settlement', gross_amount: '100000.00' })),
        source: 'gateway',
      });
      expect((await processRecordedNotification(ctx(), log.id)).result).toBe('ignored');
      const topup = await makeTopup(em(), { orderId });

      const outcomes = await Promise.all(Array.from({ length: 8 }, () => processRecordedNotification(ctx(), log.id)));
      const results = outcomes.map((o) => o.result);
      expect(results.filter((r) => r === 'processed')).toHaveLength(1);
      expect(results.filter((r) => r !== 'processed').every((r) => r === 'skipped')).toBe(true);
      const stored = await em().findOneOrFail(WebhookLog, log.id);
      expect(stored.status).toBe('processed');
      expect(stored.attempts).toBe(2);
      const wallet = await em().findOneOrFail(Wallet, { user: topup.user.id });
      expect(wallet.balance).toBe('100000.00');
      expect(await em().count(WalletTransaction, { wallet })).toBe(1);
    });

    it('different ignored logs of one notification replayed at once: one processed, the rest duplicates', async () => {
      const orderId = `TOPUP-MANY${Date.now()}`;
      const raw = JSON.stringify(sign({ order_id: orderId, transaction_status: 'settlement', gross_amount: '100000.00' }));
      const logs = [];
      for (let i = 0; i < 6; i++) {
        const log = await recordNotification(ctx(), { rawPayload: raw, source: 'gateway', ip: '::ffff:10.1.2.3' });
        await processRecordedNotification(ctx(), log.id);
        logs.push(log);
      }
      const topup = await makeTopup(em(), { orderId });
      const outcomes = await Promise.all(logs.map((l) => processRecordedNotification(ctx(), l.id)));
      expect(outcomes.filter((o) => o.result === 'processed')).toHaveLength(1);
      expect(outcomes.filter((o) => o.result === 'duplicate')).toHaveLength(5);
      expect(outcomes[0].log.ipAddress).toBe('10.1.2.3');
      const wallet = await em().findOneOrFail(Wallet, { user: topup.user.id });
      expect(wallet.balance).toBe('100000.00');
    });

    it('a processed or duplicate log is never processed again', async () => {
      const { payment } = await makeSubscriptionWithPayment(em());
      const raw = JSON.stringify(sign({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' }));
      const first = await recordNotification(ctx(), { rawPayload: raw, source: 'gateway' });
      const second = await recordNotification(ctx(), { rawPayload: raw, source: 'gateway' });
      expect((await processRecordedNotification(ctx(), first.id)).result).toBe('processed');
      expect((await processRecordedNotification(ctx(), second.id)).result).toBe('duplicate');
      for (const id of [first.id, second.id]) {
        const again = await processRecordedNotification(ctx(), id);
        expect(again.result).toBe('skipped');
      }
      expect((await em().findOneOrFail(WebhookLog, first.id)).attempts).toBe(1);
      expect(await em().count(Notification, { user: payment.user.id, notificationType: 'payment_succeeded' })).toBe(1);
    });
  });
});
