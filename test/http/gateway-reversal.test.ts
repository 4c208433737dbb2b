import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Invoice } from '../../src/db/entities/invoice.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { verifyWallets } from '../../src/services/wallet/verify-wallets.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf, notificationTypes, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';
import { postTopup, settleTopup, walletBalance } from '../helpers/topups.js';

/*
 * Issue 15, bug 2: a reversal was ignored. A `deny` after `settlement` (Permata VA, Mandiri bill,
 * Indomaret: docs/gateway.md, 'Wire details') was logged `processed` with no effect.
 */
describe.each(DATABASES)('a reversal after settlement (%s)', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  it('reverses the payment: invoice open again, subscription past_due, customer notified; paying again revives it', async () => {
    const user: TestUser = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer', metadata: { bank: 'permata' } });
    expect(created.status).toBe(201);
    const { payment, subscription } = created.body;
    await simulate(server, payment.order_id, 'settle');
    expect((await server.api('GET', `/subscriptions/${subscription.id}/`, { auth: user })).body.status).toBe('active');

    const denied = await simulate(server, payment.order_id, 'deny');
    expect(denied.body.notification.http_status).toBe(200);

    const reversed = (await server.api('GET', `/payments/${payment.id}/`, { auth: user })).body;
    expect(reversed).toMatchObject({ status: 'reversed' });
    const invoice = (await server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: user })).body;
    expect(invoice).toMatchObject({ status: 'open', paid_at: null });
    expect((await server.api('GET', `/subscriptions/${subscription.id}/`, { auth: user })).body.status).toBe('past_due');
    expect(await notificationTypes(server, user)).toEqual(expect.arrayContaining(['payment_reversed', 'subscription_past_due']));
    const log = await dbOf(server).findOneOrFail(WebhookLog, { orderId: payment.order_id, transactionStatus: 'deny' });
    expect(log.status).toBe('processed');
    // Due at once for dunning.
    expect((await dbOf(server).findOneOrFail(Invoice, payment.invoice_id)).nextRetryAt).not.toBeNull();

    // The same notification again changes nothing.
    await simulate(server, payment.order_id, 'pending').catch(() => undefined);
    expect((await server.api('GET', `/payments/${payment.id}/`, { auth: user })).body.status).toBe('reversed');

    const again = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: subscription.id, payment_type: 'qris' } });
    expect(again.status).toBe(201);
    expect(again.body.payment).toMatchObject({ payment_type: 'qris', status: 'pending', invoice_id: payment.invoice_id });
    await simulate(server, again.body.payment.order_id, 'settle');
    expect((await server.api('GET', `/subscriptions/${subscription.id}/`, { auth: user })).body.status).toBe('active');
    expect((await server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: user })).body.status).toBe('paid');
  });

  it('a reversed top-up debits the wallet, even below zero when the money was spent; wallet verify shows it and passes', async () => {
    const user: TestUser = await server.createUser();
    const topup = await postTopup(server, user, { amount: 100000, payment_type: 'bank_transfer', bank: 'permata' });
    expect(topup.status).toBe(201);
    await settleTopup(server, topup.body.order_id);
    expect(await walletBalance(server, user)).toBe('100000.00');
    // Spent at once on a wallet-paid subscription.
    expect((await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'wallet' })).status).toBe(201);
    expect(await walletBalance(server, user)).toBe('50000.00');

    const denied = await simulate(server, topup.body.order_id, 'deny');
    expect(denied.body.notification.http_status).toBe(200);
    expect((await server.api('GET', `/topups/${topup.body.id}/`, { auth: user })).body.status).toBe('reversed');
    expect(await walletBalance(server, user)).toBe('-50000.00');
    expect(await notificationTypes(server, user)).toContain('payment_reversed');
    // Debited once, however often the gateway repeats itself.
    await simulate(server, topup.body.order_id, 'deny').catch(() => undefined);
    expect(await walletBalance(server, user)).toBe('-50000.00');

    const billing = server.running.billing;
    const verified = await verifyWallets({ em: billing.orm.em.fork() });
    expect(verified.ok).toBe(true);
    expect(verified.negative_balances).toEqual(expect.arrayContaining([expect.objectContaining({ user_id: user.id, balance: '-50000.00' })]));
  });
});
