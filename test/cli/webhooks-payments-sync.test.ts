import { describe, expect, it } from 'vitest';
import { Notification } from '../../src/db/entities/notification.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Topup } from '../../src/db/entities/topup.js';
import { Wallet } from '../../src/db/entities/wallet.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { runCli } from '../helpers/cli.js';
import { serverForCli } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { makeSubscriptionWithPayment, makeTopup, signedNotification } from '../helpers/factories.js';

// Notifications for these charges go nowhere: the gateway "loses" them, as in an incident.
const LOST = 'http://127.0.0.1:9/lost';

describe.each(DATABASES)('billing-admin payments sync on %s', (kind) => {
  const stage = serverForCli(kind);
  const em = stage.em;
  const sync = (...args: string[]) => runCli(['payments', 'sync', ...args, '--json'], stage.env);
  const charge = (orderId: string, amount: string) =>
    stage.server.running.billing.gateway.charge({ orderId, grossAmount: amount, currency: 'IDR', paymentType: 'bank_transfer', bank: 'bca', notificationUrl: LOST });
  const result = (json: any, orderId: string) => json.results.find((r: { order_id: string }) => r.order_id === orderId);

  it('applies what the gateway says about pending payments and top-ups whose notifications were lost, once', async () => {
    const since = new Date();
    const settled = await makeSubscriptionWithPayment(em());
    const waiting = await makeSubscriptionWithPayment(em());
    const topup = await makeTopup(em());
    await charge(settled.payment.orderId, '150000.00');
    await charge(waiting.payment.orderId, '150000.00');
    await charge(topup.orderId, '100000.00');
    const lost = await stage.server.running.billing.simulator!.act(settled.payment.orderId, 'settle');
    expect(lost.notification!.http_status).toBeNull();
    await stage.server.running.billing.simulator!.act(topup.orderId, 'expire');
    expect((await em().findOneOrFail(Payment, settled.payment.id)).status).toBe('pending');

    const dry = await sync('--since', since.toISOString(), '--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.json).toMatchObject({ dry_run: true, count: 3 });
    // The dry run says what the real run will do (status_after, changes), and changes nothing.
    expect(result(dry.json, settled.payment.orderId)).toMatchObject({ kind: 'payment', gateway_status: 'settlement', result: 'would_process', status_after: 'settled', webhook_log: null });
    expect((await em().findOneOrFail(Payment, settled.payment.id)).status).toBe('pending');
    expect(await em().count(WebhookLog, { source: 'sync' })).toBe(0);

    const run = await sync('--since', since.toISOString());
    expect(run.code).toBe(0);
    expect(run.json).toMatchObject({ dry_run: false, count: 3 });
    expect(result(run.json, settled.payment.orderId)).toMatchObject({
      status_before: 'pending',
      status_after: 'settled',
      gateway_status: 'settlement',
      result: 'processed',
      webhook_log: { source: 'sync', status: 'processed', order_id: settled.payment.orderId, transaction_status: 'settlement', ip_address: null },
    });
    expect(result(run.json, settled.payment.orderId).changes).toContain('payment settled');
    expect(result(run.json, topup.orderId)).toMatchObject({ kind: 'topup', status_before: 'pending', status_after: 'expired', gateway_status: 'expire', result: 'processed' });
    expect(result(run.json, waiting.payment.orderId)).toMatchObject({ status_after: 'pending', gateway_status: 'pending' });

    const paid = await em().findOneOrFail(Payment, settled.payment.id, { populate: ['subscription', 'invoice'] });
    expect(paid.status).toBe('settled');
    expect(paid.invoice!.status).toBe('paid');
    expect(paid.subscription!.status).toBe('active');
    expect((await em().findOneOrFail(Topup, topup.id)).status).toBe('expired');

    // Twice is safe: settled ones are no longer asked about; the pending one is a duplicate now.
    const again = await sync('--since', since.toISOString());
    expect(again.code).toBe(0);
    expect(again.json.count).toBe(1);
    expect(result(again.json, waiting.payment.orderId)).toMatchObject({ result: 'duplicate', changes: [] });

    // The lost notification turns up after all: nothing is applied twice.
    const late = await stage.server.api('POST', '/webhook/notification/', {
      body: signedNotification(stage.server.config.gateway.serverKey, { order_id: settled.payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' }),
    });
    expect(late.body.status).toBe('duplicate');
    expect(await em().count(Notification, { user: settled.user.id, notificationType: 'payment_succeeded' })).toBe(1);
  });

  it('credits a top-up the gateway settled exactly once, and reports orders the gateway does not know', async () => {
    const since = new Date();
    const topup = await makeTopup(em(), { amount: '25000.00' });
    await charge(topup.orderId, '25000.00');
    await stage.server.running.billing.simulator!.act(topup.orderId, 'settle');
    // A charge whose answer never came back and that never reached the gateway.
    const unknown = await makeSubscriptionWithPayment(em(), { payment: { outcomeUnknown: true } });

    const run = await sync('--since', since.toISOString());
    expect(run.code).toBe(0);
    expect(result(run.json, topup.orderId)).toMatchObject({ status_after: 'success', result: 'processed' });
    expect(result(run.json, unknown.payment.orderId)).toMatchObject({ result: 'not_found', status_after: 'pending', webhook_log: null });
    expect(result(run.json, unknown.payment.orderId).error).toMatch(/not_found/);
    expect((await em().findOneOrFail(Wallet, { user: topup.user.id })).balance).toBe('25000.00');

    const again = await sync('--since', since.toISOString());
    expect(again.json.results.map((r: { order_id: string }) => r.order_id)).toEqual([unknown.payment.orderId]);
    expect((await em().findOneOrFail(Wallet, { user: topup.user.id })).balance).toBe('25000.00');
  });

  it('honours --limit, prints a table by default, and exits 5 when the gateway cannot be reached', async () => {
    const since = new Date();
    await makeSubscriptionWithPayment(em());
    await makeSubscriptionWithPayment(em());
    const limited = await sync('--since', since.toISOString(), '--limit', '1', '--dry-run');
    expect(limited.json.count).toBe(1);

    const human = await runCli(['payments', 'sync', '--since', since.toISOString(), '--dry-run'], stage.env);
    expect(human.stdout).toMatch(/kind\s+order_id\s+gateway\s+before\s+after\s+result/);

    const unreachable = await runCli(['payments', 'sync', '--since', since.toISOString(), '--json'], { ...stage.env, BILLING_URL: 'http://127.0.0.1:9', GATEWAY_TIMEOUT_MS: '2000' });
    expect(unreachable.code).toBe(5);
    expect(unreachable.json.results.every((r: { result: string }) => r.result === 'gateway_error')).toBe(true);

    expect((await runCli(['payments', 'sync', '--limit', 'zero'], stage.env)).code).toBe(2);
  });
});
