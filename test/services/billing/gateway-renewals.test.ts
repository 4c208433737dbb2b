import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { runBilling } from '../../../src/services/billing/run-billing.js';
import { DATABASES } from '../../helpers/database.js';
import { Invoice } from '../../../src/db/entities/invoice.js';
import { MidtransClient } from '../../../src/gateway/midtrans-client.js';
import { runCli } from '../../helpers/cli.js';
import { cliEnv } from '../../helpers/cli-server.js';
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

  // Issue 27 (docs/billing.md, 'Dunning'): a wrong server key (the gateway answers 401) or a gateway outage
  // during renewals is the merchant's failure, not the customer's. It was counted as dunning:
  // every renewing customer went past_due and was then canceled.
  it('a wrong server key: the charge fails on our side; no past_due, no retry counted, no cancellation, the run reports it; the right key renews', async () => {
    const user = await h.user();
    const sub = await h.subscribe(user, 'pro-monthly', 'credit_card', 'sim-card-accept-4811');
    const { config, orm } = h.server.running.billing;
    const wrongKey = new MidtransClient({ baseUrl: `${h.server.url}/_simulator`, serverKey: 'SB-Mid-server-rotated-by-mistake', timeoutMs: 5000 });
    const runWithWrongKey = () => runBilling({ ...h.ctx(), gateway: wrongKey });

    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    const first = await runWithWrongKey();
    expect(first).toMatchObject({ renewed: 1, charged: 0, merchant_failed: 1, past_due: 0 });
    expect(first.errors).toHaveLength(1);
    expect(first.errors[0].message).toMatch(/unauthorized|401/);
    expect((await h.payments(sub.id))[1]).toMatchObject({ status: 'failed', failureReason: 'gateway_rejected_credentials' });

    // Past the due date, every retry and the cancellation date: still the key, never the customer.
    for (const day of ['2027-03-04T10:00:00.000Z', '2027-03-05T10:00:00.000Z', '2027-03-08T10:00:00.000Z', '2027-03-12T10:00:00.000Z', '2027-03-20T10:00:00.000Z']) {
      h.clock.set(new Date(day));
      const report = await runWithWrongKey();
      expect(report, day).toMatchObject({ past_due: 0, canceled: 0, retried: 0, merchant_failed: 1 });
      expect(report.errors, day).toHaveLength(1);
      expect((await h.sub(sub.id)).status, day).toBe('active');
    }
    const [, renewal] = await h.invoices(sub.id);
    expect(renewal).toMatchObject({ status: 'open', retryCount: 0 });
    const notes = await h.notifications(user);
    expect(notes).not.toContain('subscription_past_due');
    expect(notes).not.toContain('subscription_canceled');

    // billing-admin billing run exits 1 with the reason (the CLI with the wrong key).
    const cli = await runCli(['billing', 'run', '--at', '2027-03-20T11:00:00.000Z', '--force', '--json'], { ...cliEnv(h.server), GATEWAY_BASE_URL: `${h.server.url}/_simulator`, GATEWAY_SERVER_KEY: 'SB-Mid-server-rotated-by-mistake' });
    expect(cli.code, cli.stderr).toBe(1);
    expect(cli.json).toMatchObject({ merchant_failed: 1, past_due: 0, canceled: 0 });

    // The key is fixed: the next run charges the saved card and the period is paid.
    h.clock.set(new Date('2027-03-20T12:00:00.000Z'));
    const fixed = await h.run();
    expect(fixed).toMatchObject({ charged: 1, merchant_failed: 0, errors: [] });
    const renewed = await h.sub(sub.id);
    expect(renewed.status).toBe('active');
    expect(iso(renewed.currentPeriodEnd)).toBe('2027-03-31T10:00:00.000Z');
    expect((await orm.em.fork().findOneOrFail(Invoice, renewal.id)).status).toBe('paid');
    expect(config.gateway.serverKey).not.toBe('SB-Mid-server-rotated-by-mistake');
  });
});
