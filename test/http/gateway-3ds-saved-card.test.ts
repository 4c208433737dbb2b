import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { iso, startBilling, type BillingHarness } from '../helpers/billing.js';
import { DATABASES } from '../helpers/database.js';
import { completeThreeDs } from '../helpers/three-ds.js';
import type { TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 15, bug 1: a card saved after 3-D Secure was lost. The first card charge goes to 3-D
 * Secure; the capture notification carries saved_token_id, but only the charge answer and
 * `subscriptions sync` stored it, so the next billing run found "no saved card to charge".
 */
describe.each(DATABASES)('a card saved after 3-D Secure (%s)', (kind) => {
  let h: BillingHarness;
  let user: TestUser;
  beforeEach(async () => {
    // The simulator in its faithful mode: 3-D Secure whenever the charge asks for it, as Midtrans does.
    h = await startBilling(kind, undefined, { SIMULATOR_3DS: 'when_asked' });
    user = await h.server.createUser();
  });
  afterEach(async () => {
    await h.stop();
  });

  /** Opens the simulator's 3-D Secure page over HTTP and passes it, as the customer's browser does. */
  async function pass3ds(redirectUrl: string): Promise<void> {
    expect(await completeThreeDs(redirectUrl, 'authenticate')).toBe('capture');
    // The gateway pushes its capture notification on its own time, as Midtrans does: wait until the
    // service has applied it and confirmed the card it announces (a status call of its own).
    const billing = h.server.running.billing;
    const tx = billing.simulator!.transaction(redirectUrl.split('/').pop()!);
    await vi.waitFor(async () => {
      const payment = await billing.orm.em.fork().findOneOrFail(Payment, { orderId: tx!.order_id }, { populate: ['subscription'] });
      expect(payment.subscription?.cardToken).toBe(tx!.card!.saved_token_id);
    }, { timeout: 10_000, interval: 50 });
  }

  const sub = (id: string) => h.server.running.billing.orm.em.fork().findOneOrFail(Subscription, id);

  it('is stored from the capture notification (confirmed by a status call) and charged at the next billing run, merchant-initiated', async () => {
    const created = await h.server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'pro-monthly', payment_type: 'credit_card', token: 'tok-3ds-481111-1114' } });
    expect(created.status).toBe(201);
    const payment = created.body.payment;
    expect(payment).toMatchObject({ status: 'pending', payment_type: 'credit_card', payment_details: { redirect_url: expect.any(String) } });
    expect((await sub(created.body.subscription.id)).cardToken).toBeNull();

    const simulator = h.server.running.billing.simulator!;
    const statusCallsBefore = simulator.requests().filter((r) => r.operation === 'status').length;
    await pass3ds(payment.payment_details.redirect_url);

    const active = await sub(created.body.subscription.id);
    expect(active.status).toBe('active');
    const atGateway = simulator.transaction(payment.order_id)!;
    expect(atGateway.card!.saved_token_id).toEqual(expect.any(String));
    expect(active.cardToken).toBe(atGateway.card!.saved_token_id);
    // To the second: the gateway's time format carries no milliseconds.
    expect(Math.floor(active.cardTokenExpiresAt!.getTime() / 1000)).toBe(Math.floor(atGateway.card!.saved_token_id_expired_at!.getTime() / 1000));
    // The notification's word alone is not enough (its signature does not cover the token): a status call confirmed it.
    expect(simulator.requests().filter((r) => r.operation === 'status').length).toBeGreaterThan(statusCallsBefore);
    const logs = await h.server.running.billing.orm.em.fork().find(WebhookLog, { orderId: payment.order_id, source: 'gateway', transactionStatus: 'capture' });
    expect(logs.map((l) => l.status)).toEqual(['processed']);

    h.clock.set(new Date(active.nextBillingDate!.getTime() + 60_000));
    const report = await h.run();
    expect(report).toMatchObject({ renewed: 1, charged: 1, failed: 0, errors: [] });
    const renewed = await sub(created.body.subscription.id);
    expect(renewed.status).toBe('active');
    expect(renewed.cyclesCompleted).toBe(2);
    const payments = await h.payments(created.body.subscription.id);
    expect(payments.map((p) => [p.paymentType, p.status])).toEqual([
      ['credit_card', 'settled'],
      ['credit_card', 'settled'],
    ]);
    expect(simulator.transaction(payments[1]!.orderId)!.card).toMatchObject({ token_id: active.cardToken, initiated_by: 'merchant' });
  });

  it('a forged notification cannot plant a card: only the token the status answer names is stored', async () => {
    const created = await h.server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'pro-monthly', payment_type: 'credit_card', token: 'tok-3ds-481111-1114' } });
    const payment = created.body.payment;
    await pass3ds(payment.payment_details.redirect_url);
    const saved = (await sub(created.body.subscription.id)).cardToken;
    // The genuine capture notification replayed with another saved_token_id (not signed): the card stays.
    const log = await h.server.running.billing.orm.em.fork().findOneOrFail(WebhookLog, { orderId: payment.order_id, source: 'gateway', transactionStatus: 'capture' });
    const forged = { ...JSON.parse(log.payload), saved_token_id: 'attacker-token' };
    const res = await h.server.api('POST', '/webhook/notification/', { body: forged });
    expect(res.status).toBe(200);
    expect((await sub(created.body.subscription.id)).cardToken).toBe(saved);
  });

  it('the customer pays again by hand with the saved card as a customer-initiated charge', async () => {
    const created = await h.server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'pro-monthly', payment_type: 'credit_card', token: 'tok-3ds-481111-1114' } });
    await pass3ds(created.body.payment.payment_details.redirect_url);
    const subscriptionId = created.body.subscription.id;
    const active = await sub(subscriptionId);
    // A renewal whose saved-card charge was declined leaves the invoice open.
    await h.server.running.billing.orm.em.fork().nativeUpdate(Subscription, { id: subscriptionId }, { cardToken: 'sim-card-deny-saved' });
    h.clock.set(new Date(active.nextBillingDate!.getTime() + 60_000));
    expect(await h.run()).toMatchObject({ renewed: 1, failed: 1, errors: [] });
    expect((await sub(subscriptionId)).status).toBe('past_due');

    // A new card fixes it: the charge is the customer's, and the new card becomes the saved one.
    const paid = await h.server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: subscriptionId, token: 'sim-card-accept-new-card' } });
    expect(paid.status).toBe(201);
    // A customer-initiated charge asks for 3-D Secure: the customer passes it on the gateway's page.
    expect(paid.body.payment).toMatchObject({ status: 'pending', payment_type: 'credit_card' });
    await pass3ds(paid.body.payment.payment_details.redirect_url);
    const settledPayment = await h.server.api('GET', `/payments/${paid.body.payment.id}/`, { auth: user });
    expect(settledPayment.body).toMatchObject({ status: 'settled', payment_type: 'credit_card' });
    const simulator = h.server.running.billing.simulator!;
    expect(simulator.transaction(paid.body.payment.order_id)!.card).toMatchObject({ token_id: 'sim-card-accept-new-card', initiated_by: 'customer' });
    const fixed = await sub(subscriptionId);
    expect(fixed.status).toBe('active');
    expect(fixed.cardToken).toBe(simulator.transaction(paid.body.payment.order_id)!.card!.saved_token_id);
    expect(fixed.cardToken).not.toBe('sim-card-deny-saved');
  });
});
