import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Notification } from '../../src/db/entities/notification.js';
import { commitGroupStats } from '../../src/db/commit-groups.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Topup } from '../../src/db/entities/topup.js';
import { Wallet, WalletTransaction } from '../../src/db/entities/wallet.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { DATABASES } from '../helpers/database.js';
import { makeSubscriptionWithPayment, makeTopup, makeUser, signedNotification } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const PARALLEL = 20;

describe.each(DATABASES)('the webhook under concurrent deliveries on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
  });
  afterAll(() => server?.stop());

  const em = (): EntityManager => server.running.billing.orm.em.fork() as EntityManager;
  const postAll = (bodies: unknown[]) => Promise.all(bodies.map((body) => server.api('POST', '/webhook/notification/', { body })));
  const sign = (fields: Parameters<typeof signedNotification>[1]) => signedNotification(server.config.gateway.serverKey, fields);

  async function walletOf(userId: string) {
    const wallet = await em().findOneOrFail(Wallet, { user: userId });
    return { balance: wallet.balance, entries: await em().find(WalletTransaction, { wallet }) };
  }

  it(`the same top-up settlement posted ${PARALLEL} times at once credits the wallet exactly once`, async () => {
    const topup = await makeTopup(em());
    const body = sign({ order_id: topup.orderId, transaction_status: 'settlement', gross_amount: '100000.00' });
    const answers = await postAll(Array.from({ length: PARALLEL }, () => body));

    expect(answers.map((a) => a.status)).toEqual(Array(PARALLEL).fill(200));
    const statuses = answers.map((a) => a.body.status).sort();
    expect(statuses.filter((s) => s === 'ok')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(PARALLEL - 1);

    const logs = await em().find(WebhookLog, { orderId: topup.orderId });
    expect(logs).toHaveLength(PARALLEL);
    expect(logs.filter((l) => l.status === 'processed')).toHaveLength(1);
    expect(logs.filter((l) => l.status === 'duplicate')).toHaveLength(PARALLEL - 1);

    expect((await em().findOneOrFail(Topup, topup.id)).status).toBe('success');
    const wallet = await walletOf(topup.user.id);
    expect(wallet.balance).toBe('100000.00');
    expect(wallet.entries).toHaveLength(1);
    expect(await em().count(Notification, { user: topup.user.id, notificationType: 'topup_succeeded' })).toBe(1);
  });

  it('capture and settlement of one top-up racing each other still credit once', async () => {
    const topup = await makeTopup(em(), { paymentType: 'credit_card', bank: null });
    const capture = sign({ order_id: topup.orderId, transaction_status: 'capture', fraud_status: 'accept', gross_amount: '100000.00' });
    const settlement = sign({ order_id: topup.orderId, transaction_status: 'settlement', fraud_status: 'accept', gross_amount: '100000.00' });
    const answers = await postAll(Array.from({ length: PARALLEL }, (_, i) => (i % 2 === 0 ? capture : settlement)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    // One capture and one settlement are processed (different keys); the rest are duplicates.
    expect(answers.filter((a) => a.body.status === 'ok')).toHaveLength(2);
    const wallet = await walletOf(topup.user.id);
    expect(wallet.balance).toBe('100000.00');
    expect(wallet.entries).toHaveLength(1);
  });

  it('top-ups of one user settled at once each credit the wallet once', async () => {
    const user = await makeUser(em());
    const topups = [];
    for (let i = 0; i < 5; i++) topups.push(await makeTopup(em(), { user, amount: '10000.00' }));
    const bodies = topups.flatMap((t) => Array.from({ length: 4 }, () => sign({ order_id: t.orderId, transaction_status: 'settlement', gross_amount: '10000.00' })));
    const answers = await postAll(bodies);
    expect(answers.filter((a) => a.body.status === 'ok')).toHaveLength(5);
    const wallet = await walletOf(user.id);
    expect(wallet.balance).toBe('50000.00');
    expect(wallet.entries).toHaveLength(5);
  });

  it(`the same subscription settlement posted ${PARALLEL} times at once is processed once`, async () => {
    const { payment, user } = await makeSubscriptionWithPayment(em());
    const body = sign({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' });
    const answers = await postAll(Array.from({ length: PARALLEL }, () => body));

    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.filter((a) => a.body.status === 'ok')).toHaveLength(1);
    expect(answers.filter((a) => a.body.status === 'duplicate')).toHaveLength(PARALLEL - 1);
    const after = await em().findOneOrFail(Payment, payment.id, { populate: ['subscription', 'invoice'] });
    expect(after.status).toBe('settled');
    expect(after.invoice!.status).toBe('paid');
    expect(after.subscription!.status).toBe('active');
    expect(after.subscription!.cyclesCompleted).toBe(1);
    expect(await em().count(Notification, { user: user.id, notificationType: 'payment_succeeded' })).toBe(1);
    expect(await em().count(WebhookLog, { orderId: payment.orderId, status: 'processed' })).toBe(1);
  });

  it('settlements of many orders at once each keep their own outcome, whatever commit they shared', async () => {
    const made = [];
    for (let i = 0; i < 12; i++) made.push(await makeSubscriptionWithPayment(em()));
    const wrong = await makeSubscriptionWithPayment(em());
    const settle = (orderId: string, amount = '150000.00') => sign({ order_id: orderId, transaction_status: 'settlement', gross_amount: amount });
    const before = { ...commitGroupStats };
    // Twelve orders, the first three times more, one for an order we never made, and one whose
    // amount is not the payment's: on SQLite they share transactions, each in its savepoint.
    const bodies = [
      ...made.map(({ payment }) => settle(payment.orderId)),
      settle(made[0].payment.orderId),
      settle(wrong.payment.orderId, '1.00'),
      settle('SUB-never-made-here'),
      settle(made[0].payment.orderId),
      settle(made[0].payment.orderId),
    ];
    const answers = await postAll(bodies);

    expect(answers.slice(0, 12).map((a) => [a.status, a.body.status])).toEqual(Array(12).fill([200, 'ok']));
    expect([answers[12], answers[15], answers[16]].map((a) => [a.status, a.body.status])).toEqual(Array(3).fill([200, 'duplicate']));
    expect([answers[13].status, answers[13].body.status]).toEqual([503, 'failed']);
    expect([answers[14].status, answers[14].body.status]).toEqual([200, 'ignored']);
    for (const { payment, user } of made) {
      const after = await em().findOneOrFail(Payment, payment.id, { populate: ['subscription', 'invoice'] });
      expect([after.status, after.invoice!.status, after.subscription!.status, after.subscription!.cyclesCompleted]).toEqual(['settled', 'paid', 'active', 1]);
      expect(await em().count(Notification, { user: user.id, notificationType: 'payment_succeeded' })).toBe(1);
      expect(await em().count(WebhookLog, { orderId: payment.orderId, status: 'processed' })).toBe(1);
    }
    // The failed one changed nothing but its log, though its neighbours in the group committed.
    const failed = await em().findOneOrFail(Payment, wrong.payment.id, { populate: ['subscription', 'invoice'] });
    expect([failed.status, failed.invoice!.status, failed.subscription!.status]).toEqual(['pending', 'open', wrong.subscription.status]);
    expect(await em().count(WebhookLog, { orderId: wrong.payment.orderId, status: 'failed' })).toBe(1);
    expect(await em().count(WebhookLog, { orderId: wrong.payment.orderId, status: 'processed' })).toBe(0);
    expect(await em().count(Notification, { user: wrong.user.id, notificationType: 'payment_succeeded' })).toBe(0);
    // SQLite's one writer: notifications that waited were committed together (src/db/commit-groups.ts).
    if (kind === 'sqlite') expect(commitGroupStats.members - before.members).toBeGreaterThan(commitGroupStats.groups - before.groups);
  });

  it('a settlement racing a late expire of the same payment leaves it settled', async () => {
    const { payment } = await makeSubscriptionWithPayment(em());
    const settle = sign({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' });
    const expire = sign({ order_id: payment.orderId, transaction_status: 'expire', gross_amount: '150000.00' });
    // The settlement is posted first; the expires race it and may land either side of it.
    const answers = await postAll([settle, ...Array.from({ length: 9 }, () => expire), settle]);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const after = await em().findOneOrFail(Payment, payment.id, { populate: ['subscription', 'invoice'] });
    expect(after.status).toBe('settled');
    expect(after.invoice!.status).toBe('paid');
    expect(after.subscription!.status).toBe('active');
  });
});
