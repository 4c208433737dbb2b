import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import { Coupon, PromotionCode } from '../../src/db/entities/coupon.js';
import { promotionCodeKey } from '../../src/services/coupons/redeem.js';

/*
 * Coupons and promotion codes made directly through the ORM, so tests of redemption, invoices
 * and tax do not depend on the staff API. Each factory takes overrides and flushes.
 */

const suffix = () => randomBytes(3).toString('hex').toUpperCase();

export async function makeCoupon(em: EntityManager, overrides: Partial<Coupon> = {}): Promise<Coupon> {
  const coupon = em.create(Coupon, {
    code: `C${suffix()}`,
    name: 'Test coupon',
    percentOff: overrides.amountOff ? null : '25.00',
    amountOff: null,
    currency: overrides.amountOff ? 'IDR' : null,
    duration: 'forever',
    durationInCycles: null,
    maxRedemptions: null,
    timesRedeemed: 0,
    redeemBy: null,
    plans: null,
    active: true,
    archivedAt: null,
    ...overrides,
  } as Coupon);
  await em.flush();
  return coupon;
}

/** A promotion code of `coupon` (made with makeCoupon's defaults when none is given). */
export async function makePromotionCode(em: EntityManager, overrides: Partial<PromotionCode> & { coupon?: Coupon } = {}): Promise<PromotionCode> {
  const coupon = overrides.coupon ?? (await makeCoupon(em));
  const code = overrides.code ?? `promo${suffix().toLowerCase()}`;
  const promo = em.create(PromotionCode, {
    code,
    codeKey: promotionCodeKey(code),
    maxRedemptions: null,
    timesRedeemed: 0,
    expiresAt: null,
    firstTimeOnly: false,
    minimumAmount: null,
    customer: null,
    active: true,
    ...overrides,
    coupon,
  } as PromotionCode);
  await em.flush();
  return promo;
}
