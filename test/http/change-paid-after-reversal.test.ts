import { describe, expect, it } from 'vitest';
import { CouponRedemption, PromotionCode } from '../../src/db/entities/coupon.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { DATABASES } from '../helpers/database.js';
import { dbOf, serverOnClock, simulate, subscribe, walletBalance } from '../helpers/subscriptions.js';

/*
 * A plan change with a promotion code, paid after the gateway took back the period's own payment
 * (found by the long property test, seed 15345): the change can no longer apply as priced (its
 * credit was for money the gateway took back), so its money goes to the wallet; but its invoice
 * was paid at the discounted price, so the code it redeemed was spent by money and still counts
 * (docs/pricing.md, 'Promotion codes').
 */

const START = new Date('2026-03-02T03:00:00.000Z');
const DAY = 24 * 60 * 60 * 1000;

describe.each(DATABASES)('a plan change paid after its period was reversed (%s)', (kind) => {
  const suite = serverOnClock(kind, START);

  it('the change is dropped, its money goes to the wallet, its paid invoice keeps the code it redeemed', async () => {
    const { server, user, clock } = suite;
    const em = dbOf(server);
    const promo = await makePromotionCode(em, { maxRedemptions: 1, coupon: await makeCoupon(em, { percentOff: '25.00', duration: 'forever' }) });
    const created = await subscribe(server, user, { plan_id: 'weekly', payment_type: 'bank_transfer', metadata: { bank: 'permata' } });
    expect(created.status, created.text).toBe(201);
    const first = created.body.payment;
    await simulate(server, first.order_id, 'settle');
    const subId = created.body.subscription.id;

    clock.set(new Date(START.getTime() + 2 * DAY));
    const change = await server.api('POST', `/subscriptions/${subId}/change-plan/`, { auth: user, body: { plan_id: 'basic-monthly', immediate: true, promotion_code: promo.code } });
    expect(change.status, change.text).toBe(200);
    const changePayment = change.body.payment;
    expect(changePayment).toMatchObject({ status: 'pending' });

    // The gateway takes the first payment back: the period the change was priced against is unpaid.
    await simulate(server, first.order_id, 'deny');
    expect((await server.api('GET', `/subscriptions/${subId}/`, { auth: user })).body.status).toBe('past_due');

    await simulate(server, changePayment.order_id, 'settle');
    const sub = (await server.api('GET', `/subscriptions/${subId}/`, { auth: user })).body;
    expect(sub).toMatchObject({ status: 'past_due', plan: { slug: 'weekly' }, pending_change: null });
    const invoice = (await server.api('GET', `/invoices/${changePayment.invoice_id}/`, { auth: user })).body;
    expect(invoice.status).toBe('paid');
    expect(Number(invoice.discount_amount)).toBeGreaterThan(0);
    expect(await walletBalance(server, user)).toBe(changePayment.gross_amount);

    // The paid invoice shows the code's discount: the code counts that redemption.
    const counted = await dbOf(server).findOneOrFail(PromotionCode, promo.id, { populate: ['coupon'] });
    expect([counted.timesRedeemed, counted.coupon.timesRedeemed, await dbOf(server).count(CouponRedemption, { promotionCode: promo.id, subscription: subId })]).toEqual([1, 1, 1]);
    const other = await server.createUser();
    const refused = await subscribe(server, other, { plan_id: 'basic-monthly', payment_type: 'bank_transfer', promotion_code: promo.code });
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body).toMatchObject({ code: 'promotion_code_invalid' });
  });
});
