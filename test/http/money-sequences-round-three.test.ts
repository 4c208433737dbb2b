import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { ManualClock } from '../../src/domain/clock.js';
import { runBilling } from '../../src/services/billing/run-billing.js';
import { DATABASES } from '../helpers/database.js';
import { signedNotification } from '../helpers/factories.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { activeSubscription, dbOf, fundWallet, gatewayStatus as gatewayStatusOf, simulate, subscribe, walletBalance, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 28, rows 3-6, 8 and 9: the money sequences a hostile customer (and the gateway's own
 * ordering) found, each replayed against the real server over HTTP with the simulator, each now
 * held by a rule of docs/billing.md, 'Money rules' ("When money moves back").
 */

const DAY = 24 * 60 * 60 * 1000;
const START = new Date('2026-03-02T03:00:00.000Z');

describe.each(DATABASES)('money sequences of round three on %s', (kind) => {
  let server: TestServer;
  let user: TestUser;
  const clock = new ManualClock(START);
  beforeAll(async () => {
    server = await startTestServer(kind, { clock });
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());
  beforeEach(async () => {
    clock.set(START);
    user = await server.createUser();
  });

  const billingRun = () => {
    const { orm, gateway, config } = server.running.billing;
    return runBilling({ em: orm.em.fork(), config, gateway, clock }, {});
  };
  const getSub = async (id: string) => (await server.api('GET', `/subscriptions/${id}/`, { auth: user })).body;
  const getPayment = async (id: string) => (await server.api('GET', `/payments/${id}/`, { auth: user })).body;
  const invoicesOf = (subscriptionId: string) => dbOf(server).find(Invoice, { subscription: subscriptionId }, { orderBy: [{ createdAt: 'asc' }, { number: 'asc' }] });
  const paymentsOf = (subscriptionId: string) => dbOf(server).find(Payment, { subscription: subscriptionId }, { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  const gatewayStatus = (orderId: string) => gatewayStatusOf(server, orderId);
  const webhook = (body: Record<string, unknown>) => server.api('POST', '/webhook/notification/', { body });

  it('row 3: paying an immediate upgrade while a renewal invoice is open voids that invoice; dunning never cancels the paid subscription', async () => {
    const { subscription } = await activeSubscription(server, user, 'basic-monthly');
    clock.set(new Date(subscription.next_billing_date));
    await billingRun();
    const renewal = (await invoicesOf(subscription.id)).find((i) => i.billingReason === 'subscription_cycle');
    expect(renewal?.status).toBe('open');

    const up = await server.api('POST', `/subscriptions/${subscription.id}/change-plan/`, { auth: user, body: { plan_id: 'pro-monthly' } });
    expect(up.status, up.text).toBe(200);
    expect(up.body.payment).not.toBeNull();
    await simulate(server, up.body.payment.order_id, 'settle');
    expect(await getSub(subscription.id)).toMatchObject({ status: 'active', plan: { slug: 'pro-monthly' }, pending_change: null });

    const after = await dbOf(server).findOneOrFail(Invoice, renewal!.id);
    expect(after.status).toBe('void');
    // Its payment is withdrawn here and at the gateway: nobody can pay the replaced invoice.
    const renewalPayments = (await paymentsOf(subscription.id)).filter((p) => (p.invoice as any)?.id === renewal!.id);
    expect(renewalPayments.length).toBeGreaterThan(0);
    // The change was settled by a notification: the next billing pass cancels the replaced order.
    await billingRun();
    for (const p of renewalPayments) {
      expect(p.status).toBe('canceled');
      expect((await gatewayStatus(p.orderId)).transaction_status).toBe('cancel');
    }

    // Well past the old invoice's due date and every dunning retry: still paid, never canceled.
    clock.set(new Date(clock.now().getTime() + 12 * DAY));
    await billingRun();
    const sub = await getSub(subscription.id);
    expect(sub.status).not.toBe('canceled');
    expect(sub.cancel_reason).toBeNull();
  });

  it('row 9: charging from the wallet for a pending change completes the change', async () => {
    const { subscription } = await activeSubscription(server, user, 'basic-monthly');
    clock.set(new Date(START.getTime() + 10 * DAY));
    const up = await server.api('POST', `/subscriptions/${subscription.id}/change-plan/`, { auth: user, body: { plan_id: 'pro-monthly' } });
    expect(up.status, up.text).toBe(200);
    const owed = up.body.payment.gross_amount;
    await fundWallet(server, user, owed);

    const charged = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: subscription.id, payment_type: 'wallet' } });
    expect(charged.status, charged.text).toBe(201);
    expect(charged.body.payment).toMatchObject({ status: 'settled', payment_type: 'wallet', gross_amount: owed });
    expect(await getSub(subscription.id)).toMatchObject({ plan: { slug: 'pro-monthly' }, pending_change: null });
    expect(await walletBalance(server, user)).toBe('0.00');
    // The bank-transfer order of the change is no longer payable.
    expect((await gatewayStatus(up.body.payment.order_id)).transaction_status).toBe('cancel');
  });

  it('row 8: concurrent charges of one invoice leave exactly one payable order; every other is canceled at the gateway', async () => {
    const { subscription } = await activeSubscription(server, user, 'basic-monthly');
    clock.set(new Date(subscription.next_billing_date));
    await billingRun();
    const results = await Promise.all(
      Array.from({ length: 8 }, () => server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: subscription.id } })),
    );
    for (const r of results) expect([201, 409, 503], r.text).toContain(r.status);
    const payments = (await paymentsOf(subscription.id)).filter((p) => p.status === 'pending');
    expect(payments).toHaveLength(1);
    for (const p of await paymentsOf(subscription.id)) {
      if (p.status === 'settled' || p.status === 'pending') continue;
      const gw = await gatewayStatus(p.orderId);
      if (gw.status_code === '404') continue; // never reached the gateway
      expect(gw.transaction_status, p.orderId).not.toBe('pending');
    }
  });

  it('row 4: a top-up refund that arrives before its settlement is applied when the settlement arrives', async () => {
    const created = await server.api('POST', '/topups/', { auth: user, body: { amount: 100000, payment_type: 'bank_transfer' } });
    expect(created.status, created.text).toBe(201);
    const orderId = created.body.order_id;
    const key = server.config.gateway.serverKey;
    const refund = signedNotification(key, {
      order_id: orderId,
      transaction_status: 'refund',
      gross_amount: '100000.00',
      refund_amount: '100000.00',
      refunds: [{ refund_chargeback_id: 1, refund_amount: '100000.00', created_at: '2026-03-02 10:00:00', reason: 'test', refund_key: 'rk-1' }],
    });
    const early = await webhook(refund);
    expect(early.status, early.text).toBe(200);
    const settle = await webhook(signedNotification(key, { order_id: orderId, transaction_status: 'settlement', gross_amount: '100000.00' }));
    expect(settle.status, settle.text).toBe(200);
    // Credited by the settlement, taken back for the refund that came first: nothing to spend.
    expect(await walletBalance(server, user)).toBe('0.00');
    const ledger = (await server.api('GET', '/wallet/transactions/', { auth: user })).body.results;
    expect(ledger.map((e: any) => [e.kind, e.amount]).sort()).toEqual([['credit', '100000.00'], ['debit', '100000.00']]);
    const spend = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'wallet' });
    expect(spend.status).toBe(409);
    // The same notifications again change nothing.
    expect((await webhook(refund)).body.status).toBe('duplicate');
    expect(await walletBalance(server, user)).toBe('0.00');
  });

  it('row 5: a top-up reversed after its money bought a subscription leaves a debt that ends that access and is collected first', async () => {
    const created = await server.api('POST', '/topups/', { auth: user, body: { amount: 50000, payment_type: 'bank_transfer', bank: 'permata' } });
    expect(created.status, created.text).toBe(201);
    await simulate(server, created.body.order_id, 'settle');
    expect(await walletBalance(server, user)).toBe('50000.00');
    const sub = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'wallet' });
    expect(sub.status, sub.text).toBe(201);
    expect(sub.body.subscription.status).toBe('active');

    await simulate(server, created.body.order_id, 'deny');
    expect(await walletBalance(server, user)).toBe('-50000.00');
    expect(await getSub(sub.body.subscription.id)).toMatchObject({ status: 'past_due', cancel_reason: 'wallet_debt' });
    const active = await server.api('GET', '/subscriptions/active/', { auth: user });
    expect(active.status, active.text).not.toBe(200);

    // The next money in pays the debt first: a new top-up of 70 000 leaves 20 000.
    const next = await server.api('POST', '/topups/', { auth: user, body: { amount: 70000, payment_type: 'bank_transfer' } });
    await simulate(server, next.body.order_id, 'settle');
    expect(await walletBalance(server, user)).toBe('20000.00');
    // The debt paid, the period the wallet bought is the customer's again.
    expect(await getSub(sub.body.subscription.id)).toMatchObject({ status: 'active', cancel_reason: null });
    expect((await server.api('GET', '/subscriptions/active/', { auth: user })).status).toBe(200);
  });

  it('row 6: repaying a reversed first payment after an upgrade buys what that payment bought, not a new Pro period', async () => {
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer', metadata: { bank: 'permata' } });
    expect(created.status, created.text).toBe(201);
    await simulate(server, created.body.payment.order_id, 'settle');
    const id = created.body.subscription.id;
    const paid = await getSub(id);
    clock.set(new Date(START.getTime() + DAY));
    const up = await server.api('POST', `/subscriptions/${id}/change-plan/`, { auth: user, body: { plan_id: 'pro-monthly' } });
    expect(up.status, up.text).toBe(200);
    await simulate(server, up.body.payment.order_id, 'settle');
    expect((await getSub(id)).plan.slug).toBe('pro-monthly');

    // The first payment (basic) is reversed; twenty days later the customer repays its 50 000 invoice.
    await simulate(server, created.body.payment.order_id, 'deny');
    expect((await getSub(id)).status).toBe('past_due');
    clock.set(new Date(START.getTime() + 20 * DAY));
    const charged = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: id } });
    expect(charged.status, charged.text).toBe(201);
    expect(charged.body.payment.gross_amount).toBe('50000.00');
    await simulate(server, charged.body.payment.order_id, 'settle');
    const after = await getSub(id);
    // It buys back the month the first payment bought (the upgrade's paid part on top), not a month from now.
    expect(after).toMatchObject({ status: 'active', plan: { slug: 'pro-monthly' } });
    expect(after.current_period_start).toBe(paid.current_period_start);
    expect(after.current_period_end).toBe(paid.current_period_end);
    expect(after.cycles_completed).toBe(paid.cycles_completed);
  });
  it('a settlement that arrives after its period ended grants no access for it: invoice paid, money to the wallet with a period_passed credit note (issue 27)', async () => {
    const created = await subscribe(server, user, { plan_id: 'weekly', payment_type: 'bank_transfer' });
    expect(created.status, created.text).toBe(201);
    await simulate(server, created.body.payment.order_id, 'settle');
    const id = created.body.subscription.id;
    // A week later the renewal is billed; nobody pays it; another week passes.
    clock.set(new Date(START.getTime() + 7 * DAY + 60_000));
    await billingRun();
    const renewal = (await paymentsOf(id)).find((p) => p.status === 'pending')!;
    expect(renewal).toBeDefined();
    clock.set(new Date(START.getTime() + 14 * DAY + 120_000));
    await billingRun();
    const before = await getSub(id);
    expect(before.status).toBe('past_due');

    // The old renewal's order was paid in time at the bank, but its settlement reaches us only now.
    const late = await webhook(signedNotification(server.config.gateway.serverKey, { order_id: renewal.orderId, transaction_status: 'settlement', gross_amount: renewal.grossAmount }));
    expect(late.status, late.text).toBe(200);
    const after = await getSub(id);
    expect(after.status).not.toBe('active');
    expect((await server.api('GET', '/subscriptions/active/', { auth: user })).status).not.toBe(200);
    const invoice = await dbOf(server).findOneOrFail(Invoice, (renewal.invoice as any).id);
    expect(invoice.status).toBe('paid');
    expect(await walletBalance(server, user)).toBe('20000.00');
    const notes = (await server.api('GET', '/credit-notes/', { auth: user })).body.results;
    expect(notes.map((n: any) => [n.reason, n.amount])).toContainEqual(['period_passed', '20000.00']);
    // The next renewal bills the week after the paid one, and the wallet's money pays it: active again, for now.
    await billingRun();
    const next = (await invoicesOf(id)).filter((i) => i.status === 'open');
    expect(next.map((i) => i.periodStart?.toISOString())).toEqual([invoice.periodEnd!.toISOString()]);
    const paid = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: id, payment_type: 'wallet' } });
    expect(paid.status, paid.text).toBe(201);
    const renewed = await getSub(id);
    expect(renewed.status).toBe('active');
    expect(new Date(renewed.current_period_end).getTime()).toBeGreaterThan(clock.now().getTime());
    expect(await walletBalance(server, user)).toBe('0.00');
  });
});
