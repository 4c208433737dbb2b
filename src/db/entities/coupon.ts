import { EntitySchema } from '@mikro-orm/core';
import { createdAtProperty, idProperty, moneyProperty, updatedAtProperty } from './common.js';
import { Subscription } from './subscription.js';
import { User } from './user.js';

export type CouponDuration = 'once' | 'repeating' | 'forever';
export const COUPON_DURATIONS: readonly CouponDuration[] = ['once', 'repeating', 'forever'];

/**
 * A discount's terms (docs/pricing.md). Its amounts never change once made: a subscription keeps
 * a copy of them (`Subscription.discount`), so a renewal prices without reading the coupon.
 * Archived, never deleted: redeemed coupons are named by invoices and the audit trail.
 */
export class Coupon {
  id!: string;
  /** The staff's name for it, unique (`LAUNCH25`); customers type promotion codes, not this. */
  code!: string;
  name!: string;
  /** "25.00" for 25 %; exactly one of percentOff and amountOff is set. */
  percentOff: string | null = null;
  amountOff: string | null = null;
  /** The currency of amountOff (null for a percentage). */
  currency: string | null = null;
  duration: CouponDuration = 'once';
  /** For `repeating`: how many billed periods it covers. */
  durationInCycles: number | null = null;
  maxRedemptions: number | null = null;
  /** Counted by a conditional UPDATE in the redeeming transaction (services/coupons/redeem.ts). */
  timesRedeemed = 0;
  /** No redemption after this instant. */
  redeemBy: Date | null = null;
  /** Plan slugs it applies to; null = every plan. */
  plans: string[] | null = null;
  active = true;
  archivedAt: Date | null = null;
  createdAt!: Date;
  updatedAt!: Date;
}

/** A customer-facing code of a coupon, matched case-insensitively (`codeKey` is its upper-case form). */
export class PromotionCode {
  id!: string;
  code!: string;
  codeKey!: string;
  coupon!: Coupon;
  maxRedemptions: number | null = null;
  timesRedeemed = 0;
  expiresAt: Date | null = null;
  /** Only for a customer who has never paid an invoice. */
  firstTimeOnly = false;
  /** The least first invoice (before discount and PPN) it may be redeemed on. */
  minimumAmount: string | null = null;
  /** Only this customer may redeem it. */
  customer: User | null = null;
  active = true;
  createdAt!: Date;
  updatedAt!: Date;
}

/** One redemption: who redeemed which coupon (by which code) for which subscription. */
export class CouponRedemption {
  id!: string;
  coupon!: Coupon;
  promotionCode: PromotionCode | null = null;
  user!: User;
  subscription: Subscription | null = null;
  createdAt!: Date;
}

export const CouponSchema = new EntitySchema<Coupon>({
  class: Coupon,
  tableName: 'coupons',
  indexes: [{ properties: ['active', 'createdAt'] }],
  properties: {
    id: idProperty,
    code: { type: 'string', length: 64, unique: true },
    name: { type: 'string', length: 200 },
    percentOff: { type: 'string', length: 6, nullable: true },
    amountOff: { ...moneyProperty, nullable: true },
    currency: { type: 'string', length: 3, nullable: true },
    duration: { type: 'string', length: 10 },
    durationInCycles: { type: 'integer', nullable: true },
    maxRedemptions: { type: 'integer', nullable: true },
    timesRedeemed: { type: 'integer', default: 0 },
    redeemBy: { type: 'Date', nullable: true },
    plans: { type: 'json', nullable: true },
    active: { type: 'boolean', default: true },
    archivedAt: { type: 'Date', nullable: true },
    createdAt: createdAtProperty,
    updatedAt: updatedAtProperty,
  },
});

export const PromotionCodeSchema = new EntitySchema<PromotionCode>({
  class: PromotionCode,
  tableName: 'promotion_codes',
  indexes: [{ properties: ['coupon'] }],
  properties: {
    id: idProperty,
    code: { type: 'string', length: 64 },
    codeKey: { type: 'string', length: 64, unique: true },
    coupon: { kind: 'm:1', entity: () => Coupon },
    maxRedemptions: { type: 'integer', nullable: true },
    timesRedeemed: { type: 'integer', default: 0 },
    expiresAt: { type: 'Date', nullable: true },
    firstTimeOnly: { type: 'boolean', default: false },
    minimumAmount: { ...moneyProperty, nullable: true },
    customer: { kind: 'm:1', entity: () => User, nullable: true },
    active: { type: 'boolean', default: true },
    createdAt: createdAtProperty,
    updatedAt: updatedAtProperty,
  },
});

export const CouponRedemptionSchema = new EntitySchema<CouponRedemption>({
  class: CouponRedemption,
  tableName: 'coupon_redemptions',
  indexes: [{ properties: ['user', 'coupon'] }],
  properties: {
    id: idProperty,
    coupon: { kind: 'm:1', entity: () => Coupon },
    promotionCode: { kind: 'm:1', entity: () => PromotionCode, nullable: true },
    user: { kind: 'm:1', entity: () => User },
    subscription: { kind: 'm:1', entity: () => Subscription, nullable: true },
    createdAt: createdAtProperty,
  },
});
