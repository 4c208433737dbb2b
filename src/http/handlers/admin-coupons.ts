import { archiveCoupon, createCoupon, listCoupons } from '../../services/coupons/manage-coupons.js';
import { createPromotionCode, listPromotionCodes, setPromotionCodeActive } from '../../services/coupons/manage-promotion-codes.js';
import { findCoupon, findPromotionCode } from '../../services/coupons/find-coupon.js';
import { staffActor } from '../auth/staff-gate.js';
import { serializeCoupon, serializePromotionCode } from '../coupon-serializers.js';
import type { OperationHandlers } from '../operations.js';
import { envelope, pageRequest } from '../pagination.js';

/**
 * Coupons and promotion codes made, looked up and archived or (de)activated by staff
 * (/admin/coupons/, /admin/promotion-codes/); every change is audited with the staff actor.
 */
export const adminCouponHandlers: OperationHandlers = {
  async adminListCoupons(req) {
    const page = pageRequest(req.query);
    const found = await listCoupons(req.services, { active: req.query.active }, page);
    return { status: 200, body: envelope(req.koa, found, page, serializeCoupon) };
  },

  async adminCreateCoupon(req) {
    const b = req.body;
    const coupon = await createCoupon(req.services, staffActor(req.koa), {
      code: b.code,
      name: b.name,
      percentOff: b.percent_off,
      amountOff: b.amount_off,
      currency: b.currency,
      duration: b.duration,
      durationInCycles: b.duration_in_cycles,
      maxRedemptions: b.max_redemptions,
      redeemBy: b.redeem_by,
      plans: b.plans,
      reason: b.reason,
    });
    return { status: 201, body: serializeCoupon(coupon) };
  },

  async adminGetCoupon(req) {
    return { status: 200, body: serializeCoupon(await findCoupon(req.services, req.path.coupon)) };
  },

  async adminArchiveCoupon(req) {
    return { status: 200, body: serializeCoupon(await archiveCoupon(req.services, staffActor(req.koa), req.path.coupon, req.body.reason)) };
  },

  async adminListPromotionCodes(req) {
    const page = pageRequest(req.query);
    const found = await listPromotionCodes(req.services, { coupon: req.query.coupon, active: req.query.active }, page);
    return { status: 200, body: envelope(req.koa, found, page, serializePromotionCode) };
  },

  async adminCreatePromotionCode(req) {
    const b = req.body;
    const promo = await createPromotionCode(req.services, staffActor(req.koa), {
      code: b.code,
      coupon: b.coupon,
      maxRedemptions: b.max_redemptions,
      expiresAt: b.expires_at,
      firstTimeOnly: b.first_time_only,
      minimumAmount: b.minimum_amount,
      customer: b.customer,
      reason: b.reason,
    });
    return { status: 201, body: serializePromotionCode(promo) };
  },

  async adminGetPromotionCode(req) {
    return { status: 200, body: serializePromotionCode(await findPromotionCode(req.services, req.path.code)) };
  },

  async adminUpdatePromotionCode(req) {
    const promo = await setPromotionCodeActive(req.services, staffActor(req.koa), req.path.code, req.body.active, req.body.reason);
    return { status: 200, body: serializePromotionCode(promo) };
  },
};
