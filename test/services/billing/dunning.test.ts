import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { billSubscriptionStep } from '../../../src/services/billing/bill-subscription.js';
import { DATABASES } from '../../helpers/database.js';
import { iso, startBilling, type BillingHarness } from '../../helpers/billing.js';
import { signedNotification } from '../../helpers/factories.js';

const at = (s: string) => new Date(s);

describe.each(DATABASES)('billing run: dunning (%s)', (kind) => {
  let h: BillingHarness;
  beforeEach(async () => {
    h = await startBilling(kind);
  });
  afterEach(async () => {
    await h.stop();
  });

  async function renewedUnpaid() {
    const user = await h.user();
    const sub = await h.subscribe(user, 'pro-monthly', 'bank_transfer');
    await h.server.running.billing.simulator!.act((await h.payments(sub.id))[0].orderId, 'settle');
    h.clock.set(at('2027-02-28T10:00:00.000Z'));
    expect(await h.run()).toMatchObject({ renewed: 1, pending: 1 });
    return { user, sub };
  }

  it('walks the whole schedule: past_due at the due date, retries after 1, 3 and 7 days, canceled one day after the last', async () => {
    const { user, sub } = await renewedUnpaid();
    const simulator = h.server.running.billing.simulator!;

    h.clock.set(at('2027-03-03T09:59:59.000Z'));
    expect(await h.run()).toMatchObject({ past_due: 0, retried: 0 });
    expect((await h.sub(sub.id)).status).toBe('active');

    h.clock.set(at('2027-03-03T10:00:00.000Z'));
    expect(await h.run()).toMatchObject({ past_due: 1, retried: 0 });
    expect((await h.sub(sub.id)).status).toBe('past_due');
    expect(await h.payments(sub.id)).toHaveLength(2);

    const retryTimes = ['2027-03-04T10:00:00.000Z', '2027-03-06T10:00:00.000Z', '2027-03-10T10:00:00.000Z'];
    for (const [i, time] of retryTimes.entries()) {
      h.clock.set(new Date(at(time).getTime() - 1000));
      expect((await h.run()).retried).toBe(0);
      h.clock.set(at(time));
      expect(await h.run()).toMatchObject({ retried: 1, pending: 1, errors: [] });
      const payments = await h.payments(sub.id);
      expect(payments).toHaveLength(3 + i);
      // Each retry is a fresh payment; the one it replaces is canceled here and at the gateway.
      const [replaced, fresh] = payments.slice(-2);
      expect(replaced.status).toBe('canceled');
      expect(simulator.transaction(replaced.orderId)?.transaction_status).toBe('cancel');
      expect(fresh).toMatchObject({ status: 'pending', grossAmount: '150000.00' });
      expect(fresh.invoice!.id).toBe(payments[1].invoice!.id);
      expect((await h.invoices(sub.id))[1].retryCount).toBe(i + 1);
    }
    // The first payment, the renewal and three retries: each told the user what to pay.
    expect((await h.notifications(user)).filter((n) => n === 'payment_pending')).toHaveLength(5);

    h.clock.set(at('2027-03-11T09:59:59.000Z'));
    expect((await h.run()).canceled).toBe(0);
    h.clock.set(at('2027-03-11T10:00:00.000Z'));
    expect(await h.run()).toMatchObject({ canceled: 1 });
    const ended = await h.sub(sub.id);
    expect(ended).toMatchObject({ status: 'canceled', cancelReason: 'dunning_exhausted', nextBillingDate: null });
    const invoice = (await h.invoices(sub.id))[1];
    expect(invoice).toMatchObject({ status: 'uncollectible', nextRetryAt: null });
    const last = (await h.payments(sub.id)).at(-1)!;
    expect(last.status).toBe('canceled');
    expect(simulator.transaction(last.orderId)?.transaction_status).toBe('cancel');
    expect(await h.notifications(user)).toContain('subscription_canceled');

    h.clock.set(at('2027-06-01T00:00:00.000Z'));
    expect((await h.run()).subscriptions).toBe(0);
  });

  it('a settlement during dunning makes the subscription active again and stops the retries', async () => {
    const { sub } = await renewedUnpaid();
    h.clock.set(at('2027-03-04T10:00:00.000Z'));
    expect(await h.run()).toMatchObject({ past_due: 1, retried: 1 });
    const fresh = (await h.payments(sub.id)).at(-1)!;
    await h.server.running.billing.simulator!.act(fresh.orderId, 'settle');
    const revived = await h.sub(sub.id);
    expect(revived.status).toBe('active');
    expect(revived.cyclesCompleted).toBe(2);
    expect((await h.invoices(sub.id))[1].status).toBe('paid');
    h.clock.set(at('2027-03-20T00:00:00.000Z'));
    expect(await h.run()).toMatchObject({ retried: 0, canceled: 0 });
  });

  it('a superseded payment that settles after all pays the invoice once: the second payment buys no second period', async () => {
    const { user, sub } = await renewedUnpaid();
    h.clock.set(at('2027-03-04T10:00:00.000Z'));
    expect(await h.run()).toMatchObject({ retried: 1 });
    const [, superseded, fresh] = await h.payments(sub.id);
    expect(superseded.status).toBe('canceled');
    // The customer had paid the old virtual account just before it was canceled.
    const key = h.server.running.billing.config.gateway.serverKey;
    const late = await h.server.api('POST', '/webhook/notification/', {
      body: signedNotification(key, { order_id: superseded.orderId, transaction_status: 'settlement', gross_amount: '150000.00' }),
    });
    expect(late.status).toBe(200);
    const revived = await h.sub(sub.id);
    expect(revived).toMatchObject({ status: 'active', cyclesCompleted: 2 });
    expect(iso(revived.currentPeriodEnd)).toBe('2027-03-31T10:00:00.000Z');

    await h.server.running.billing.simulator!.act(fresh.orderId, 'settle');
    const after = await h.sub(sub.id);
    expect(after).toMatchObject({ status: 'active', cyclesCompleted: 2 });
    expect(iso(after.currentPeriodEnd)).toBe('2027-03-31T10:00:00.000Z');
    expect((await h.notifications(user)).filter((n) => n === 'subscription_activated')).toHaveLength(2); // first payment, revival
  });

  it('one run far past the whole schedule cancels at once', async () => {
    const { sub } = await renewedUnpaid();
    h.clock.set(at('2027-06-01T00:00:00.000Z'));
    expect(await h.run()).toMatchObject({ canceled: 1, retried: 0 });
    expect((await h.sub(sub.id)).cancelReason).toBe('dunning_exhausted');
    expect((await h.invoices(sub.id)).map((i) => i.status)).toEqual(['paid', 'uncollectible']);
  });

  it('a gateway down for a whole run (its 5xx may come after a charge): clear errors, complete invoice, the payment pending with an unknown outcome, the next run asks and sends it', async () => {
    const user = await h.user();
    const sub = await h.subscribe(user, 'pro-monthly', 'bank_transfer');
    await h.server.running.billing.simulator!.act((await h.payments(sub.id))[0].orderId, 'settle');
    const walletUser = await h.user();
    await h.fund(walletUser, '100000');
    const walletSub = await h.subscribe(walletUser, 'basic-monthly', 'wallet');

    const down = await h.server.request('POST', '/_simulator/faults', { body: { mode: 'http_500' } });
    expect(down.status).toBeLessThan(300);
    h.clock.set(at('2027-02-28T10:00:00.000Z'));
    const report = await h.run();
    expect(report).toMatchObject({ renewed: 2, charged: 1, failed: 0, pending: 1 });
    expect(report.errors).toEqual([{ subscription_id: sub.id, message: expect.stringMatching(/gateway unavailable: .*500/) }]);
    expect((await h.sub(walletSub.id)).cyclesCompleted).toBe(2);
    const [, invoice] = await h.invoices(sub.id);
    expect(invoice).toMatchObject({ status: 'open', totalAmount: '150000.00' });
    expect(invoice.lines).toHaveLength(1);
    expect((await h.payments(sub.id))[1]).toMatchObject({ status: 'pending', outcomeUnknown: true });
    expect((await h.sub(sub.id)).status).toBe('active');

    await h.server.request('POST', '/_simulator/faults', { body: { mode: 'none' } });
    h.clock.set(at('2027-02-28T11:00:00.000Z'));
    const next = await h.run();
    expect(next).toMatchObject({ renewed: 0, pending: 1, errors: [] });
    const payments = await h.payments(sub.id);
    // The gateway had no such order (the 500 came before it acted): the same payment is sent now.
    expect(payments.map((p) => p.status)).toEqual(['settled', 'pending']);
    expect(payments[1]).toMatchObject({ outcomeUnknown: false, transactionId: expect.any(String) });
    expect(payments[1].invoice!.id).toBe(invoice.id);
    expect(await h.invoices(sub.id)).toHaveLength(2);
  });

  it('a renewal committed but never sent (the process died before the gateway call) is sent by a later run', async () => {
    const user = await h.user();
    const sub = await h.subscribe(user, 'pro-monthly', 'bank_transfer');
    await h.server.running.billing.simulator!.act((await h.payments(sub.id))[0].orderId, 'settle');
    h.clock.set(at('2027-02-28T10:00:00.000Z'));
    // The transaction of the step commits; its gateway half never runs.
    const step = await billSubscriptionStep(h.ctx(), sub.id);
    expect(step?.action).toBe('renew');
    const lost = (await h.payments(sub.id))[1];
    expect(lost).toMatchObject({ status: 'pending', transactionId: null });
    expect(h.server.running.billing.simulator!.transaction(lost.orderId)).toBeUndefined();

    // A run at the same time leaves it alone: a live run may still be sending it.
    expect((await h.run()).renewed).toBe(0);
    expect(h.server.running.billing.simulator!.transaction(lost.orderId)).toBeUndefined();

    h.clock.set(at('2027-02-28T10:10:00.000Z'));
    const report = await h.run();
    expect(report).toMatchObject({ renewed: 0, pending: 1, errors: [] });
    expect(h.server.running.billing.simulator!.transaction(lost.orderId)?.transaction_status).toBe('pending');
    const sent = (await h.payments(sub.id))[1];
    expect(sent.id).toBe(lost.id);
    expect(sent.transactionId).not.toBeNull();
    expect(await h.payments(sub.id)).toHaveLength(2);
  });

  it('a charge that timed out stays pending with an unknown outcome; a later run asks the gateway and sends it', async () => {
    await h.stop();
    h = await startBilling(kind, undefined, { GATEWAY_TIMEOUT_MS: '500' });
    const user = await h.user();
    const sub = await h.subscribe(user, 'pro-monthly', 'bank_transfer');
    const simulator = h.server.running.billing.simulator!;
    await simulator.act((await h.payments(sub.id))[0].orderId, 'settle');

    simulator.setFault({ mode: 'timeout' });
    h.clock.set(at('2027-02-28T10:00:00.000Z'));
    const report = await h.run();
    expect(report).toMatchObject({ renewed: 1, pending: 1 });
    expect(report.errors).toEqual([{ subscription_id: sub.id, message: expect.stringContaining('gateway timeout') }]);
    const unknown = (await h.payments(sub.id))[1];
    expect(unknown).toMatchObject({ status: 'pending', outcomeUnknown: true });

    // Still down ten minutes later: reported again, nothing new made.
    h.clock.set(at('2027-02-28T10:10:00.000Z'));
    expect((await h.run()).errors).toHaveLength(1);
    expect(await h.payments(sub.id)).toHaveLength(2);

    simulator.setFault({ mode: 'none' });
    h.clock.set(at('2027-02-28T10:20:00.000Z'));
    expect(await h.run()).toMatchObject({ pending: 1, errors: [] });
    const sent = (await h.payments(sub.id))[1];
    expect(sent.id).toBe(unknown.id);
    expect(sent).toMatchObject({ status: 'pending', outcomeUnknown: false });
    expect(simulator.transaction(sent.orderId)?.transaction_status).toBe('pending');
    expect(await h.payments(sub.id)).toHaveLength(2);
  });
});
