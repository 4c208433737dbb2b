import { describe, expect, it } from 'vitest';
import { Invoice } from '../../../src/db/entities/invoice.js';
import { cycleBoundary } from '../../../src/domain/billing-calendar.js';
import { createTopup } from '../../../src/services/topups/create-topup.js';
import { verifyWallets } from '../../../src/services/wallet/verify-wallets.js';
import { DATABASES } from '../../helpers/database.js';
import { iso, startBilling } from '../../helpers/billing.js';

describe.each(DATABASES)('two years of monthly billing in seconds (%s)', (kind) => {
  it('bills every cycle of a bank-transfer and a wallet subscription for 24 months: invoices, payments, periods, notifications', async () => {
    const start = new Date('2027-01-31T10:00:00.000Z');
    const h = await startBilling(kind, start);
    try {
      const simulator = h.server.running.billing.simulator!;
      const bankUser = await h.user();
      const bank = await h.subscribe(bankUser, 'basic-monthly', 'bank_transfer');
      await simulator.act((await h.payments(bank.id))[0].orderId, 'settle');
      const walletUser = await h.user();
      await h.fund(walletUser, '50000');
      const wallet = await h.subscribe(walletUser, 'basic-monthly', 'wallet');

      for (let month = 1; month <= 24; month += 1) {
        const boundary = cycleBoundary(start, 1, 'month', month);
        // The wallet user tops up a week before each renewal, through the gateway and the webhook.
        h.clock.set(new Date(boundary.getTime() - 7 * 24 * 3600 * 1000));
        const topup = await createTopup(h.ctx(), walletUser, { amount: 50000, paymentType: 'bank_transfer' });
        await simulator.act(topup.orderId, 'settle');
        expect(await h.balance(walletUser)).toBe('50000.00');

        h.clock.set(boundary);
        const report = await h.run();
        expect(report, `month ${month}`).toMatchObject({ renewed: 2, charged: 1, pending: 1, failed: 0, past_due: 0, errors: [] });
        // The bank-transfer customer pays two days later.
        h.clock.set(new Date(boundary.getTime() + 2 * 24 * 3600 * 1000));
        const pending = (await h.payments(bank.id)).at(-1)!;
        expect(pending.status).toBe('pending');
        await simulator.act(pending.orderId, 'settle');
        // Dunning has nothing to do for paid invoices.
        expect((await h.run()).past_due).toBe(0);
      }

      for (const sub of [bank, wallet]) {
        const final = await h.sub(sub.id);
        expect(final).toMatchObject({ status: 'active', cyclesCompleted: 25 });
        expect(iso(final.currentPeriodStart)).toBe('2029-01-31T10:00:00.000Z');
        expect(iso(final.currentPeriodEnd)).toBe('2029-02-28T10:00:00.000Z');
        const invoices = await h.invoices(sub.id);
        expect(invoices).toHaveLength(25);
        invoices.slice(1).forEach((invoice, i) => {
          expect(invoice).toMatchObject({ status: 'paid', billingReason: 'subscription_cycle', totalAmount: '50000.00', currency: 'IDR' });
          expect(iso(invoice.periodStart)).toBe(cycleBoundary(start, 1, 'month', i + 1).toISOString());
          expect(iso(invoice.periodEnd)).toBe(cycleBoundary(start, 1, 'month', i + 2).toISOString());
          expect(invoice.issueDate).toBe(cycleBoundary(start, 1, 'month', i + 1).toISOString().slice(0, 10));
        });
        const payments = await h.payments(sub.id);
        expect(payments).toHaveLength(25);
        expect(payments.every((p) => p.status === 'settled' && p.grossAmount === '50000.00')).toBe(true);
        const notes = await h.notifications(final.user);
        expect(notes.filter((n) => n === 'subscription_renewed')).toHaveLength(24);
        expect(notes.filter((n) => n === 'payment_succeeded')).toHaveLength(25);
        expect(notes).not.toContain('subscription_past_due');
      }
      // Month ends clamp and come back: 28 Feb 2027, 31 Mar, 30 Apr … 29 Feb 2028 (leap year).
      const ends = (await h.invoices(wallet.id)).slice(1).map((i) => iso(i.periodEnd)!.slice(0, 10));
      expect(ends.slice(0, 3)).toEqual(['2027-03-31', '2027-04-30', '2027-05-31']);
      expect(ends).toContain('2028-02-29');
      expect(ends).toContain('2029-02-28');

      // Invoice numbers are gap-free within each year, across both subscriptions.
      const all = await h.server.running.billing.orm.em.fork().find(Invoice, {}, { orderBy: { number: 'asc' } });
      for (const year of ['2027', '2028', '2029']) {
        const seq = all.filter((i) => i.number.startsWith(`INV-${year}-`)).map((i) => Number(i.number.slice(-6)));
        expect(seq).toEqual(seq.map((_, i) => i + 1));
      }
      expect(all).toHaveLength(50);
      expect(await h.balance(walletUser)).toBe('0.00');
      expect(await verifyWallets(h.ctx())).toMatchObject({ ok: true, discrepancies: [] });
    } finally {
      await h.stop();
    }
  }, 240_000);
});
