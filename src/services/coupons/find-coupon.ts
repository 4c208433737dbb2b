import { Coupon, PromotionCode } from '../../db/entities/coupon.js';
import { NotFoundError } from '../../domain/errors.js';
import { parseUuid } from '../../domain/ids.js';
import type { DataContext } from '../context.js';
import { promotionCodeKey } from './redeem.js';

/** The longest code a coupon or promotion code has (the columns' length). */
const MAX_CODE = 64;

/** The coupon a reference names, or null: its code (exactly as made) or its id. */
export async function couponByRef(ctx: Pick<DataContext, 'em'>, ref: string): Promise<Coupon | null> {
  const byCode = ref.length <= MAX_CODE ? await ctx.em.findOne(Coupon, { code: ref }) : null;
  if (byCode) return byCode;
  const id = parseUuid(ref);
  return id ? ctx.em.findOne(Coupon, { id }) : null;
}

/** The coupon a staff route or command names (by code or id); NotFoundError when none is. */
export async function findCoupon(ctx: Pick<DataContext, 'em'>, ref: string): Promise<Coupon> {
  const coupon = await couponByRef(ctx, ref);
  if (!coupon) throw new NotFoundError(`Coupon "${ref}"`);
  return coupon;
}

/**
 * The promotion code a staff route or command names: its code in any case (as customers type
 * it) or its id, with its coupon. NotFoundError when none is.
 */
export async function findPromotionCode(ctx: Pick<DataContext, 'em'>, ref: string): Promise<PromotionCode> {
  const key = promotionCodeKey(ref);
  let promo = key.length > 0 && key.length <= MAX_CODE ? await ctx.em.findOne(PromotionCode, { codeKey: key }, { populate: ['coupon'] }) : null;
  const id = promo ? null : parseUuid(ref);
  if (id) promo = await ctx.em.findOne(PromotionCode, { id }, { populate: ['coupon'] });
  if (!promo) throw new NotFoundError(`Promotion code "${ref}"`);
  return promo;
}
