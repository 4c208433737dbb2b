import { randomUUID } from 'node:crypto';
import { Coupon, CouponRedemption, PromotionCode } from '../../db/entities/coupon.js';
import { Invoice } from '../../db/entities/invoice.js';
import type { Plan } from '../../db/entities/plan.js';
import type { Subscription, SubscriptionDiscount } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { PromotionCodeInvalidError } from '../../domain/errors.js';
import { compare, multiplyAndRound } from '../../domain/money.js';
import type { DataContext } from '../context.js';

/*
 * NOTE: a redemption is counted by a conditional UPDATE in the caller's transaction
 * (`times_redeemed = times_redeemed + 1 where times_redeemed < max_redemptions`): the row's
 * write lock serialises concurrent redeemers on PostgreSQL and SQLite has one writer, so a
 * limit is never exceeded however many redeem at once, and a transaction that fails later
 * gives its count back with its rollback.
 */

/** The form a customer's code is matched by: case and surrounding spaces do not matter. */
export function promotionCodeKey(code: string): string {
  return code.trim().toUpperCase();
}

export interface RedeemInput {
  code: string;
  user: Pick<User, 'id'>;
  /** The plan the code is redeemed on and how many units: the minimum amount is checked against them. */
  plan: Plan;
  quantity: number;
  at: Date;
}

/** The coupon's terms as a subscription keeps them. */
export function discountOf(coupon: Coupon, promotionCode: PromotionCode | null, at: Date): SubscriptionDiscount {
  return {
    coupon_id: coupon.id,
    coupon: coupon.code,
    promotion_code: promotionCode?.code ?? null,
    percent_off: coupon.percentOff,
    amount_off: coupon.amountOff,
    currency: coupon.currency,
    duration: coupon.duration,
    plans: coupon.plans,
    starts_at: at.toISOString(),
    ends_at: null,
    cycles_left: coupon.duration === 'forever' ? null : coupon.duration === 'once' ? 1 : coupon.durationInCycles,
  };
}

/**
 * Checks a promotion code for this customer, plan and quantity without counting it; throws
 * PromotionCodeInvalidError naming why it cannot be redeemed. Used to refuse early (before a
 * card is authorised or a page charges) and, inside the transaction, before counting.
 */
export async function checkPromotionCode(ctx: DataContext, input: RedeemInput): Promise<PromotionCode> {
  const promo = await ctx.em.findOne(PromotionCode, { codeKey: promotionCodeKey(input.code) }, { populate: ['coupon'] });
  // A code kept for another customer is unknown to everyone else: its existence is not confirmed.
  if (!promo || (promo.customer && promo.customer.id !== input.user.id)) throw new PromotionCodeInvalidError('unknown', `No promotion code ${input.code.trim()} exists.`);
  const coupon = promo.coupon;
  const code = promo.code;
  if (!promo.active || !coupon.active) throw new PromotionCodeInvalidError('inactive', `The promotion code ${code} is no longer active.`);
  const expired = (t: Date | null) => t !== null && input.at.getTime() >= t.getTime();
  if (expired(promo.expiresAt) || expired(coupon.redeemBy)) throw new PromotionCodeInvalidError('expired', `The promotion code ${code} has expired.`);
  const full = (o: { maxRedemptions: number | null; timesRedeemed: number }) => o.maxRedemptions !== null && o.timesRedeemed >= o.maxRedemptions;
  if (full(promo) || full(coupon)) throw new PromotionCodeInvalidError('exhausted', `The promotion code ${code} has been used as many times as it may be.`);
  if ((coupon.plans && !coupon.plans.includes(input.plan.slug)) || (coupon.amountOff !== null && coupon.currency !== input.plan.currency)) {
    throw new PromotionCodeInvalidError('not_for_plan', `The promotion code ${code} does not apply to ${input.plan.name}.`);
  }
  if (promo.firstTimeOnly && (await ctx.em.count(Invoice, { user: input.user.id, status: 'paid', totalAmount: { $gt: '0.00' } })) > 0) {
    throw new PromotionCodeInvalidError('first_time_only', `The promotion code ${code} is for a first purchase only.`);
  }
  if (promo.minimumAmount !== null) {
    const amount = multiplyAndRound(input.plan.price, input.plan.perUnit ? input.quantity : 1, 1, input.plan.currency);
    if (compare(amount, promo.minimumAmount) < 0) {
      throw new PromotionCodeInvalidError('below_minimum', `The promotion code ${code} needs a purchase of at least ${promo.minimumAmount} ${input.plan.currency}.`);
    }
  }
  return promo;
}

/** A redemption just counted: the discount the subscription keeps, and the record that counts it. */
export interface Redemption {
  discount: SubscriptionDiscount;
  redemptionId: string;
}

/**
 * Redeems a promotion code for `subscription` inside the caller's transaction: checks it,
 * counts it on the code and its coupon (never past either limit), records the redemption and
 * returns the discount the subscription keeps.
 */
export async function redeemPromotionCode(ctx: DataContext, input: RedeemInput & { subscription: Subscription }): Promise<Redemption> {
  const promo = await checkPromotionCode(ctx, input);
  for (const [table, id] of [['promotion_codes', promo.id], ['coupons', promo.coupon.id]] as const) {
    if ((await countRedemption(ctx, table, id, 'up')) !== 1) {
      throw new PromotionCodeInvalidError('exhausted', `The promotion code ${promo.code} has been used as many times as it may be.`);
    }
  }
  const redemptionId = randomUUID();
  ctx.em.create(CouponRedemption, { id: redemptionId, coupon: promo.coupon, promotionCode: promo, user: input.user.id, subscription: input.subscription, createdAt: input.at } as unknown as CouponRedemption);
  return { discount: discountOf(promo.coupon, promo, input.at), redemptionId };
}

/**
 * Gives back a redemption whose purchase never happened (a plan change dropped before it was
 * paid, a first payment that expired or was canceled unpaid): the code and its coupon count one
 * fewer and the record goes, so a code with a limit is not used up by a purchase nobody paid.
 * NOTE: the record's delete is conditional and only the one that deletes it counts down, so a
 * redemption is given back once however often (and however concurrently) it is asked. Whether it
 * was given back now.
 */
export async function undoRedemption(ctx: DataContext, redemptionId: string): Promise<boolean> {
  const redemption = await ctx.em.findOne(CouponRedemption, redemptionId);
  if (!redemption) return false;
  // A redemption made in this same transaction is written first, so that the delete finds it.
  await ctx.em.flush();
  const deleted = (await ctx.em.execute('delete from coupon_redemptions where id = ?', [redemptionId], 'run')) as unknown as { affectedRows?: number };
  if ((deleted.affectedRows ?? 0) !== 1) return false;
  // Gone from the table: the unit of work must not write it back.
  ctx.em.getUnitOfWork().unsetIdentity(redemption);
  if (redemption.promotionCode) await countRedemption(ctx, 'promotion_codes', redemption.promotionCode.id, 'down');
  await countRedemption(ctx, 'coupons', redemption.coupon.id, 'down');
  return true;
}

/**
 * Counts again a code whose redemption was given back, for a subscription whose first invoice a
 * payment holds again: `pays_again` (a new payment of the invoice: the code's limit decides, not
 * its expiry or activity, which held when the customer redeemed it; PromotionCodeInvalidError when
 * it has been used up since) or `paid` (money arrived for the discounted invoice: it was spent,
 * and is counted even past the limit).
 */
export async function redeemAgain(ctx: DataContext, input: { code: string; user: Pick<User, 'id'>; subscription: Subscription; at: Date; why: 'pays_again' | 'paid' }): Promise<void> {
  const promo = await ctx.em.findOne(PromotionCode, { codeKey: promotionCodeKey(input.code) }, { populate: ['coupon'] });
  if (!promo) return;
  for (const [table, id] of [['promotion_codes', promo.id], ['coupons', promo.coupon.id]] as const) {
    if ((await countRedemption(ctx, table, id, input.why)) !== 1) {
      throw new PromotionCodeInvalidError('exhausted', `The promotion code ${promo.code} has been used as many times as it may be since this payment's earlier order lapsed.`);
    }
  }
  ctx.em.create(CouponRedemption, { id: randomUUID(), coupon: promo.coupon, promotionCode: promo, user: input.user.id, subscription: input.subscription, createdAt: input.at } as unknown as CouponRedemption);
}

/** NOTE: a count goes up only below the limit (of an active code or coupon, for a new redemption), and down only above zero. */
const COUNT_SQL = {
  up: 'set times_redeemed = times_redeemed + 1 where id = ? and active = ? and (max_redemptions is null or times_redeemed < max_redemptions)',
  pays_again: 'set times_redeemed = times_redeemed + 1 where id = ? and (max_redemptions is null or times_redeemed < max_redemptions)',
  paid: 'set times_redeemed = times_redeemed + 1 where id = ?',
  down: 'set times_redeemed = times_redeemed - 1 where id = ? and times_redeemed > 0',
} as const;

/**
 * Counts a redemption up or down on a code or a coupon, by plain SQL through the entity manager
 * so that it runs in the caller's transaction. Returns the rows changed (1, or 0 when refused).
 */
async function countRedemption(ctx: DataContext, table: 'promotion_codes' | 'coupons', id: string, way: keyof typeof COUNT_SQL): Promise<number> {
  const params = way === 'up' ? [id, true] : [id];
  const result = (await ctx.em.execute(`update ${table} ${COUNT_SQL[way]}`, params, 'run')) as unknown as { affectedRows?: number };
  return result.affectedRows ?? 0;
}
