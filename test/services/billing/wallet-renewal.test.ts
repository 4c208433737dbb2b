import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DATABASES } from '../../helpers/database.js';
import { DAY, iso, startBilling, type BillingHarness } from '../../helpers/billing.js';

describe.each(DATABASES)('billing run: wallet renewals (%s)', (kind) => {
  let h: BillingHarness;
  beforeEach(async () => {
    h = await startBilling(kind);
  });
  afterEach(async () => {
    await h.stop();
  });

  it('debits the wallet at the period end, advances the period from the anchor and notifies', async () => {
    const user = await h.user();
    await h.fund(user, '200000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    expect(sub.status).toBe('active');
    expect(iso(sub.currentPeriodEnd)).toBe('2027-02-28T10:00:00.000Z');

    // Nothing is due before the period ends.
    h.clock.set(new Date('2027-02-28T09:59:59.000Z'));
    const early = await h.run();
    expect(early.subscriptions).toBe(0);

    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    const report = await h.run();
    expect(report).toMatchObject({ subscriptions: 1, renewed: 1, charged: 1, failed: 0, errors: [] });
    const renewed = await h.sub(sub.id);
    expect(renewed.status).toBe('active');
    expect(iso(renewed.currentPeriodStart)).toBe('2027-02-28T10:00:00.000Z');
    expect(iso(renewed.currentPeriodEnd)).toBe('2027-03-31T10:00:00.000Z'); // back to the 31st
    expect(iso(renewed.nextBillingDate)).toBe('2027-03-31T10:00:00.000Z');
    expect(renewed.cyclesCompleted).toBe(2);
    expect(await h.balance(user)).toBe('100000.00');

    const invoices = await h.invoices(sub.id);
    expect(invoices).toHaveLength(2);
    const renewal = invoices[1];
    expect(renewal).toMatchObject({ billingReason: 'subscription_cycle', status: 'paid', totalAmount: '50000.00', issueDate: '2027-02-28', dueDate: '2027-03-03' });
    expect(iso(renewal.periodStart)).toBe('2027-02-28T10:00:00.000Z');
    expect(iso(renewal.periodEnd)).toBe('2027-03-31T10:00:00.000Z');
    expect(renewal.number).toBe('INV-2027-000002');
    expect(renewal.lines.getItems().map((l) => [l.kind, l.amount])).toEqual([['subscription', '50000.00']]);
    const payments = await h.payments(sub.id);
    expect(payments.map((p) => [p.paymentType, p.status, p.grossAmount])).toEqual([
      ['wallet', 'settled', '50000.00'],
      ['wallet', 'settled', '50000.00'],
    ]);
    expect((await h.notifications(user)).slice(-2).sort()).toEqual(['payment_succeeded', 'subscription_renewed']);

    // Running again at the same time does nothing.
    const again = await h.run();
    expect(again.subscriptions).toBe(0);
    expect(await h.invoices(sub.id)).toHaveLength(2);
  });

  it('--limit bills at most that many subscriptions; the next run does the rest', async () => {
    const subs = [];
    for (let i = 0; i < 3; i += 1) {
      const user = await h.user();
      await h.fund(user, '100000');
      subs.push(await h.subscribe(user, 'basic-monthly', 'wallet'));
    }
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    expect(await h.run({ limit: 2 })).toMatchObject({ subscriptions: 2, renewed: 2 });
    expect(await h.run()).toMatchObject({ subscriptions: 1, renewed: 1 });
    for (const sub of subs) expect((await h.sub(sub.id)).cyclesCompleted).toBe(2);
  });

  it('catches up on every missed cycle in one run far in the future', async () => {
    const user = await h.user();
    await h.fund(user, '300000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    h.clock.set(new Date('2027-05-15T00:00:00.000Z'));
    const report = await h.run();
    expect(report).toMatchObject({ subscriptions: 1, renewed: 3, charged: 3 });
    const after = await h.sub(sub.id);
    expect(iso(after.currentPeriodStart)).toBe('2027-04-30T10:00:00.000Z');
    expect(iso(after.currentPeriodEnd)).toBe('2027-05-31T10:00:00.000Z');
    expect(after.cyclesCompleted).toBe(4);
    const periods = (await h.invoices(sub.id)).slice(1).map((i) => [iso(i.periodStart), iso(i.periodEnd)]);
    expect(periods).toEqual([
      ['2027-02-28T10:00:00.000Z', '2027-03-31T10:00:00.000Z'],
      ['2027-03-31T10:00:00.000Z', '2027-04-30T10:00:00.000Z'],
      ['2027-04-30T10:00:00.000Z', '2027-05-31T10:00:00.000Z'],
    ]);
    expect(await h.balance(user)).toBe('100000.00');
  });

  it('goes past_due with a failed payment when the balance is short, then dunning charges again after a top-up', async () => {
    const user = await h.user();
    await h.fund(user, '60000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    const report = await h.run();
    expect(report).toMatchObject({ renewed: 1, charged: 0, failed: 1, past_due: 1, errors: [] });
    expect((await h.sub(sub.id)).status).toBe('past_due');
    const [, renewal] = await h.invoices(sub.id);
    expect(renewal.status).toBe('open');
    const declined = (await h.payments(sub.id))[1];
    expect(declined).toMatchObject({ status: 'failed', paymentType: 'wallet', gatewayStatus: 'deny' });
    expect((await h.notifications(user)).slice(-2).sort()).toEqual(['payment_failed', 'subscription_past_due']);
    expect(await h.balance(user)).toBe('10000.00');

    // Due 3 days after issue; the first retry is one day after that.
    await h.fund(user, '50000');
    h.clock.set(new Date(new Date('2027-03-03T10:00:00.000Z').getTime() + 1 * DAY - 1));
    expect((await h.run()).charged).toBe(0);
    h.clock.advance(1);
    const retry = await h.run();
    expect(retry).toMatchObject({ retried: 1, charged: 1 });
    const revived = await h.sub(sub.id);
    expect(revived.status).toBe('active');
    expect(iso(revived.currentPeriodEnd)).toBe('2027-03-31T10:00:00.000Z');
    expect((await h.invoices(sub.id))[1].status).toBe('paid');
    expect(await h.balance(user)).toBe('10000.00');
  });
});
