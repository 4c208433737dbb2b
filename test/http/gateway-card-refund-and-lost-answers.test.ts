import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment, Refund } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { reconcilePayments } from '../../src/services/gateway-events/reconcile-payments.js';
import { startBilling, type BillingHarness } from '../helpers/billing.js';
import { DATABASES } from '../helpers/database.js';
import { eventually, notificationTypes, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 15, bugs 3 and 4: a same-day card refund failed (the gateway answers 412 until the capture
 * settles the next day and expects a cancel), and an unreadable answer to a charge or a refund
 * counted as a refusal (a retry then used a new refund_key: the money could go back twice).
 */
describe.each(DATABASES)('card refunds and lost gateway answers (%s)', (kind) => {
  let h: BillingHarness;
  let user: TestUser;
  beforeEach(async () => {
    h = await startBilling(kind);
    user = await h.server.createUser();
  });
  afterEach(async () => {
    await h.stop();
  });

  const em = () => h.server.running.billing.orm.em.fork();
  const simulator = () => h.server.running.billing.simulator!;
  const refund = (paymentId: string, body?: unknown) => h.server.api('POST', `/payments/${paymentId}/refund/`, { auth: user, body: body ?? {} });

  async function cardSubscription() {
    const created = await h.server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'pro-monthly', payment_type: 'credit_card', token: 'sim-card-accept-4811' } });
    expect(created.status).toBe(201);
    expect(created.body.payment.status).toBe('settled');
    return created.body as { subscription: { id: string }; payment: { id: string; order_id: string; invoice_id: string } };
  }

  it('a same-day refund of a captured card payment cancels it at the gateway instead, in full, and says so', async () => {
    const { payment } = await cardSubscription();
    expect(simulator().transaction(payment.order_id)!.transaction_status).toBe('capture');

    const partial = await refund(payment.id, { amount: 50000 });
    expect(partial.status).toBe(409);
    expect(partial.body.code).toBe('invalid_state');
    expect(await em().count(Refund, { payment: payment.id })).toBe(0);

    const res = await refund(payment.id);
    expect(res.status).toBe(200);
    expect(res.body.refund).toMatchObject({ amount: '150000.00', status: 'succeeded', destination: 'gateway', method: 'cancel' });
    expect(res.body.payment).toMatchObject({ status: 'refunded', refunded_amount: '150000.00' });
    expect(simulator().transaction(payment.order_id)!.transaction_status).toBe('cancel');
    expect(simulator().requests().filter((r) => r.operation === 'refund')).toHaveLength(0);

    // The gateway's cancel notification confirms the void; it is no reversal.
    await eventually(async () => ((await em().count(WebhookLog, { orderId: payment.order_id, transactionStatus: 'cancel', status: 'processed' })) > 0 ? true : undefined), 'the cancel notification');
    expect((await em().findOneOrFail(Payment, payment.id)).status).toBe('refunded');
    expect(await notificationTypes(h.server, user)).not.toContain('payment_reversed');
  });

  it('once the capture settled, the refund is an ordinary refund', async () => {
    const { payment } = await cardSubscription();
    await simulator().act(payment.order_id, 'settle');
    const res = await refund(payment.id, { amount: 50000 });
    expect(res.status).toBe(200);
    expect(res.body.refund).toMatchObject({ amount: '50000.00', status: 'succeeded', method: 'refund' });
    expect(res.body.payment.status).toBe('partially_refunded');
  });

  it('an unreadable answer to a first charge leaves it unknown, never failed; payments sync closes it once the gateway surely never saw it', async () => {
    simulator().setFault({ mode: 'malformed', count: 1, operations: ['charge'] });
    const created = await h.server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'pro-monthly', payment_type: 'credit_card', token: 'sim-card-accept-4811' } });
    expect(created.status).toBeGreaterThanOrEqual(502);
    const payment = await em().findOneOrFail(Payment, { user: user.id }, { populate: ['subscription', 'invoice'] });
    // Before issue 15 the payment was failed and the subscription canceled on the spot.
    expect(payment).toMatchObject({ status: 'pending', outcomeUnknown: true });
    expect(payment.subscription!.status).toBe('pending');
    expect(payment.invoice!.status).toBe('open');

    // The gateway does not know the order, but the charge may still be on its way: left alone.
    const early = await reconcilePayments(h.ctx());
    expect(early.find((i) => i.orderId === payment.orderId)).toMatchObject({ result: 'not_found', statusAfter: 'pending' });

    h.clock.set(new Date(h.clock.now().getTime() + 5 * 60_000));
    // A dry run rehearses the closing and keeps nothing of it (it once committed the failure for
    // real on PostgreSQL, in a transaction of its own beside the rehearsal's).
    const rehearsed = await reconcilePayments(h.ctx(), { dryRun: true });
    expect(rehearsed.find((i) => i.orderId === payment.orderId)).toMatchObject({ result: 'would_close', statusAfter: 'failed' });
    expect(await em().findOneOrFail(Payment, payment.id)).toMatchObject({ status: 'pending', outcomeUnknown: true });
    expect((await em().findOneOrFail(Subscription, payment.subscription!.id)).status).toBe('pending');

    const late = await reconcilePayments(h.ctx());
    expect(late.find((i) => i.orderId === payment.orderId)).toMatchObject({ result: 'closed', statusAfter: 'failed' });
    const closed = await em().findOneOrFail(Payment, payment.id, { populate: ['subscription', 'invoice'] });
    expect(closed).toMatchObject({ status: 'failed', failureReason: 'never_reached_gateway', outcomeUnknown: false });
    expect(closed.invoice!.status).toBe('open');
    expect(closed.subscription!.status).toBe('past_due');
    const shown = await h.server.api('GET', `/payments/${payment.id}/`, { auth: user });
    expect(shown.body).toMatchObject({ status: 'failed', failure_reason: 'never_reached_gateway' });

    // A second sync changes nothing.
    const again = await reconcilePayments(h.ctx());
    expect(again.find((i) => i.orderId === payment.orderId)).toBeUndefined();
  });

  it('an unreadable answer to a renewal charge keeps the subscription active until the gateway tells', async () => {
    const { subscription } = await cardSubscription();
    await simulator().act((await h.payments(subscription.id))[0]!.orderId, 'settle');
    simulator().setFault({ mode: 'malformed', count: 1, operations: ['charge'] });
    const sub = await em().findOneOrFail(Subscription, subscription.id);
    h.clock.set(new Date(sub.nextBillingDate!.getTime() + 60_000));
    const report = await h.run();
    // The run could not learn the outcome: reported (exit 1) for the operator, never counted a refusal.
    expect(report).toMatchObject({ failed: 0, past_due: 0, pending: 1 });
    expect(report.errors).toEqual([{ subscription_id: subscription.id, message: expect.stringContaining('bad_response') }]);
    const renewal = (await h.payments(subscription.id))[1]!;
    expect(renewal).toMatchObject({ status: 'pending', outcomeUnknown: true });
    expect((await em().findOneOrFail(Subscription, subscription.id)).status).toBe('active');
    expect((await em().findOneOrFail(Invoice, renewal.invoice!.id)).status).toBe('open');
  });

  it('an unreadable answer to a refund leaves it pending; the retry reuses its refund_key, so the money goes back once', async () => {
    const { payment } = await cardSubscription();
    await simulator().act(payment.order_id, 'settle');
    simulator().setFault({ mode: 'malformed', count: 1, operations: ['refund'] });
    const lost = await refund(payment.id);
    // The outcome is unknown, so the refund is pending and nothing else moved.
    expect(lost.status, lost.text).toBe(202);
    expect(lost.body).toMatchObject({ refund: { status: 'pending' }, payment: { status: 'settled', refunded_amount: '0.00' } });
    const pending = await em().find(Refund, { payment: payment.id });
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({ status: 'pending', method: 'refund' });

    const retried = await refund(payment.id);
    expect(retried.status).toBe(200);
    expect(retried.body.refund).toMatchObject({ refund_key: pending[0]!.refundKey, status: 'succeeded', amount: '150000.00' });
    expect(retried.body.payment.status).toBe('refunded');
    expect(await em().count(Refund, { payment: payment.id })).toBe(1);
    expect(simulator().transaction(payment.order_id)!.refunds).toHaveLength(1);
  });
});
