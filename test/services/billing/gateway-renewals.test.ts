import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { DATABASES } from '../../helpers/database.js';
import { iso, startBilling, type BillingHarness } from '../../helpers/billing.js';

describe.each(DATABASES)('billing run: gateway renewals (%s)', (kind) => {
  let h: BillingHarness;
  beforeEach(async () => {
    h = await startBilling(kind);
  });
  afterEach(async () => {
    await h.stop();
  });

  async function activeBankTransfer() {
    const user = await h.user();
    const sub = await h.subscribe(user, 'pro-monthly', 'bank_transfer');
    const [first] = await h.payments(sub.id);
    await h.server.running.billing.simulator!.act(first.orderId, 'settle');
    expect((await h.sub(sub.id)).status).toBe('active');
    return { user, sub };
  }

  it('bank transfer: a new invoice and a pending payment to make, notified; the period advances when it is paid', async () => {
    const { user, sub } = await activeBankTransfer();
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    const report = await h.run();
    expect(report).toMatchObject({ subscriptions: 1, renewed: 1, pending: 1, charged: 0, errors: [] });

    const waiting = await h.sub(sub.id);
    expect(waiting.status).toBe('active');
    expect(iso(waiting.currentPeriodEnd)).toBe('2027-02-28T10:00:00.000Z'); // not advanced before payment
    const payments = await h.payments(sub.id);
    expect(payments).toHaveLength(2);
    const renewalPayment = payments[1];
    expect(renewalPayment).toMatchObject({ status: 'pending', paymentType: 'bank_transfer', grossAmount: '150000.00' });
    expect(renewalPayment.paymentDetails).toMatchObject({ bank: 'bca' });
    expect(renewalPayment.invoice!.billingReason).toBe('subscription_cycle');
    // Payable at the gateway until the invoice is due (3 days), not for the gateway's default day.
    const atGateway = h.server.running.billing.simulator!.transaction(renewalPayment.orderId)!;
    expect(atGateway.expiry_time!.getTime() - atGateway.transaction_time.getTime()).toBe(3 * 24 * 3600 * 1000);
    expect(await h.notifications(user)).toContain('payment_pending');

    // A second run at the same time issues nothing more.
    expect((await h.run()).renewed).toBe(0);
    expect(await h.payments(sub.id)).toHaveLength(2);

    h.clock.set(new Date('2027-03-01T08:00:00.000Z'));
    await h.server.running.billing.simulator!.act(renewalPayment.orderId, 'settle');
    const paid = await h.sub(sub.id);
    expect(paid.status).toBe('active');
    expect(iso(paid.currentPeriodStart)).toBe('2027-02-28T10:00:00.000Z');
    expect(iso(paid.currentPeriodEnd)).toBe('2027-03-31T10:00:00.000Z');
    expect(paid.cyclesCompleted).toBe(2);
    expect((await h.invoices(sub.id))[1].status).toBe('paid');
    expect((await h.notifications(user)).slice(-2).sort()).toEqual(['payment_succeeded', 'subscription_renewed']);
  });

  it('credit card: charged with the saved token, merchant-initiated, settled at once', async () => {
    const user = await h.user();
    const sub = await h.subscribe(user, 'pro-monthly', 'credit_card', 'sim-card-accept-4811');
    const first = await h.sub(sub.id);
    expect(first.status).toBe('active');
    expect(first.cardToken).toMatch(/^sim-card-accept/);

    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    const report = await h.run();
    expect(report).toMatchObject({ renewed: 1, charged: 1, failed: 0, errors: [] });
    const renewed = await h.sub(sub.id);
    expect(iso(renewed.currentPeriodEnd)).toBe('2027-03-31T10:00:00.000Z');
    const payments = await h.payments(sub.id);
    expect(payments.map((p) => [p.paymentType, p.status])).toEqual([
      ['credit_card', 'settled'],
      ['credit_card', 'settled'],
    ]);
    const atGateway = h.server.running.billing.simulator!.transaction(payments[1].orderId)!;
    expect(atGateway.card).toMatchObject({ token_id: first.cardToken, initiated_by: 'merchant' });
  });

  it('credit card: a declined saved card makes the subscription past_due at once', async () => {
    const user = await h.user();
    const sub = await h.subscribe(user, 'pro-monthly', 'credit_card', 'sim-card-accept-4811');
    const em = h.server.running.billing.orm.em.fork();
    await em.nativeUpdate(Subscription, { id: sub.id }, { cardToken: 'sim-card-deny-saved' });

    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    const report = await h.run();
    expect(report).toMatchObject({ renewed: 1, charged: 0, failed: 1, past_due: 1 });
    expect((await h.sub(sub.id)).status).toBe('past_due');
    expect((await h.payments(sub.id))[1]).toMatchObject({ status: 'failed', gatewayStatus: 'deny' });
    const notes = await h.notifications(user);
    expect(notes).toContain('payment_failed');
    expect(notes).toContain('subscription_past_due');
  });
});
