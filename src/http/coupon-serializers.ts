import type { Coupon, PromotionCode } from '../db/entities/coupon.js';
import type { components } from './generated/openapi.js';

/** A coupon as the staff API and `billing-admin coupons` show it. */
export function serializeCoupon(c: Coupon): components['schemas']['Coupon'] {
  return {
    id: c.id,
    code: c.code,
    name: c.name,
    percent_off: c.percentOff,
    amount_off: c.amountOff,
    currency: c.currency,
    duration: c.duration,
    duration_in_cycles: c.durationInCycles,
    max_redemptions: c.maxRedemptions,
    times_redeemed: c.timesRedeemed,
    redeem_by: c.redeemBy?.toISOString() ?? null,
    plans: c.plans,
    active: c.active,
    archived_at: c.archivedAt?.toISOString() ?? null,
    created_at: c.createdAt.toISOString(),
  };
}

/** A promotion code with its coupon, as the staff API and `billing-admin promotion-codes` show it. */
export function serializePromotionCode(p: PromotionCode): components['schemas']['PromotionCode'] {
  return {
    id: p.id,
    code: p.code,
    coupon: serializeCoupon(p.coupon),
    max_redemptions: p.maxRedemptions,
    times_redeemed: p.timesRedeemed,
    expires_at: p.expiresAt?.toISOString() ?? null,
    first_time_only: p.firstTimeOnly,
    minimum_amount: p.minimumAmount,
    customer_id: p.customer?.id ?? null,
    active: p.active,
    created_at: p.createdAt.toISOString(),
  };
}
