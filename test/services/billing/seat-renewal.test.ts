import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { createSubscription } from '../../../src/services/subscriptions/create-subscription.js';
import { DATABASES } from '../../helpers/database.js';
import { makePlan } from '../../helpers/factories.js';
import { makeCoupon, makePromotionCode } from '../../helpers/coupons.js';
import { iso, startBilling, type BillingHarness } from '../../helpers/billing.js';

/*
 * The billing run with seats and discounts: the batched wallet renewal prices each
 * subscription by its own quantity (two quantities of one plan in one batch), and a quantity
 * decrease waiting for the period's end or a discount counting down takes the one-by-one path,
 * which applies them.
 */
describe.each(DATABASES)('billing run: seats and discounts (%s)', (kind) => {
  let h: BillingHarness;
  beforeEach(async () => {
    h = await startBilling(kind);
    await makePlan(h.server.running.billing.orm.em.fork(), { slug: 'seat-monthly', name: 'Seat', price: '40000.00', perUnit: true });
  });
  afterEach(async () => {
    await h.stop();
  });

  const subscribe = async (quantity: number, promotionCode?: string) => {
    const user = await h.user();
    await h.fund(user, '2000000');
    const { subscription } = await createSubscription(h.ctx(), user, { planId: 'seat-monthly', paymentType: 'wallet', quantity, promotionCode });
    return { user, sub: subscription };
  };

  it('renews 3 and 7 seats of one plan in one batch at 120,000 and 280,000', async () => {
    const three = await subscribe(3);
    const seven = await subscribe(7);
    expect(three.sub.status).toBe('active');
    expect(await h.balance(three.user)).toBe('1880000.00');
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    expect(await h.run()).toMatchObject({ renewed: 2, charged: 2, errors: [] });
    for (const [{ user, sub }, total] of [[three, '120000.00'], [seven, '280000.00']] as const) {
      const renewal = (await h.invoices(sub.id))[1];
      expect(renewal).toMatchObject({ billingReason: 'subscription_cycle', status: 'paid', subtotal: total, discountAmount: '0.00', totalAmount: total });
      expect(renewal.lines.getItems().map((l) => [l.quantity, l.unitAmount, l.amount])).toEqual([[sub.quantity, '40000.00', total]]);
      expect(await h.balance(user)).toBe(String(2000000 - 2 * Number(total)) + '.00');
    }
  });

  it('applies a decrease asked for the period end at the renewal, and bills the new quantity', async () => {
    const { user, sub } = await subscribe(5);
    const em = h.server.running.billing.orm.em.fork();
    await em.nativeUpdate(Subscription, { id: sub.id }, { pendingQuantity: 2 });
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    expect(await h.run()).toMatchObject({ renewed: 1, errors: [] });
    const after = await h.sub(sub.id);
    expect([after.quantity, after.pendingQuantity]).toEqual([2, null]);
    expect((await h.invoices(sub.id))[1].totalAmount).toBe('80000.00');
    expect(await h.balance(user)).toBe(String(2000000 - 200000 - 80000) + '.00');
  });

  it('a discount for two periods covers the first invoice and one renewal, then ends with that period', async () => {
    const coupon = await makeCoupon(h.server.running.billing.orm.em.fork(), { percentOff: '10.00', duration: 'repeating', durationInCycles: 2 });
    await makePromotionCode(h.server.running.billing.orm.em.fork(), { code: 'twoseats', coupon });
    const { sub } = await subscribe(2, 'TWOSEATS');
    expect(sub.discount).toMatchObject({ coupon: coupon.code, promotion_code: 'twoseats', cycles_left: 1, ends_at: null });
    for (const at of ['2027-02-28T10:00:00.000Z', '2027-03-31T10:00:00.000Z']) {
      h.clock.set(new Date(at));
      expect(await h.run()).toMatchObject({ renewed: 1, errors: [] });
    }
    const invoices = await h.invoices(sub.id);
    expect(invoices.map((i) => [i.subtotal, i.discountAmount, i.totalAmount])).toEqual([
      ['80000.00', '8000.00', '72000.00'],
      ['80000.00', '8000.00', '72000.00'],
      ['80000.00', '0.00', '80000.00'],
    ]);
    const after = await h.sub(sub.id);
    expect(after.discount).toMatchObject({ cycles_left: 0, ends_at: iso(invoices[1].periodEnd) });
  });
});
