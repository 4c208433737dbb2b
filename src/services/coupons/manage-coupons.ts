import { UniqueConstraintViolationException, type FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { COUPON_DURATIONS, Coupon, type CouponDuration } from '../../db/entities/coupon.js';
import { Plan } from '../../db/entities/plan.js';
import { DomainError, InvalidStateError, ValidationError, type FieldError } from '../../domain/errors.js';
import type { Actor } from '../audit/actor.js';
import { changedFields, recordAuditEvent } from '../audit/record-audit-event.js';
import { findPage, type Page, type PageRequest } from '../common/pagination.js';
import type { DataContext } from '../context.js';
import { amountIn, CODE, futureInstant, MAX_REDEMPTIONS, percentage, refuse, wholeNumber } from './coupon-rules.js';
import { findCoupon } from './find-coupon.js';

/*
 * Coupons as staff make them (POST /admin/coupons/, `billing-admin coupons create`): the terms
 * of a discount, fixed once made (subscriptions keep a copy), archived and never deleted.
 * Every create and archive is in the audit trail with who did it and why.
 */

/** A coupon as a request or a command gives it, before any check (the wire's values). */
export interface CreateCouponInput {
  code: string;
  name: string;
  percentOff?: unknown;
  amountOff?: unknown;
  currency?: string;
  duration: string;
  durationInCycles?: unknown;
  maxRedemptions?: unknown;
  redeemBy?: unknown;
  plans?: string[];
  reason?: string | null;
}

/** The fields of a coupon the audit trail keeps, by their wire names. */
export function auditedCoupon(c: Coupon): Record<string, unknown> {
  return {
    code: c.code,
    name: c.name,
    percent_off: c.percentOff,
    amount_off: c.amountOff,
    currency: c.currency,
    duration: c.duration,
    duration_in_cycles: c.durationInCycles,
    max_redemptions: c.maxRedemptions,
    redeem_by: c.redeemBy?.toISOString() ?? null,
    plans: c.plans,
    active: c.active,
    archived_at: c.archivedAt?.toISOString() ?? null,
  };
}

const MAX_PLANS = 100;

/** The coupon's checked terms, or ValidationError naming every field that is wrong. */
async function checkedCoupon(ctx: DataContext, input: CreateCouponInput): Promise<Omit<Coupon, 'id' | 'createdAt' | 'updatedAt'>> {
  const errors: FieldError[] = [];
  const code = typeof input.code === 'string' && CODE.test(input.code) ? input.code : refuse(errors, 'code', 'must be 1-64 letters, digits, _ or -');
  const name = typeof input.name === 'string' && input.name.trim().length > 0 && input.name.length <= 200 ? input.name.trim() : refuse(errors, 'name', 'must be 1-200 characters, not only spaces');

  const hasPercent = input.percentOff !== undefined && input.percentOff !== null;
  const hasAmount = input.amountOff !== undefined && input.amountOff !== null;
  let percentOff: string | null = null;
  let amountOff: string | null = null;
  let currency: string | null = null;
  if (hasPercent === hasAmount) {
    const message = hasPercent ? 'give percent_off or amount_off, not both' : 'give percent_off or amount_off';
    refuse(errors, 'percent_off', message);
    refuse(errors, 'amount_off', message);
  } else if (hasPercent) {
    percentOff = percentage(errors, input.percentOff) ?? null;
    if (input.currency !== undefined) refuse(errors, 'currency', 'goes with amount_off only (a percentage applies in any currency)');
  } else if (input.currency === undefined) {
    refuse(errors, 'currency', 'is required with amount_off');
  } else if (!/^[A-Z]{3}$/.test(input.currency)) {
    refuse(errors, 'currency', 'must be an ISO 4217 code in capitals, like IDR');
  } else {
    currency = input.currency;
    amountOff = amountIn(errors, input.amountOff, currency, 'amount_off') ?? null;
  }

  const duration = (COUPON_DURATIONS as readonly string[]).includes(input.duration) ? (input.duration as CouponDuration) : refuse(errors, 'duration', `must be one of ${COUPON_DURATIONS.join(', ')}`);
  let durationInCycles: number | null = null;
  if (duration === 'repeating') {
    if (input.durationInCycles === undefined || input.durationInCycles === null) refuse(errors, 'duration_in_cycles', 'is required with duration repeating');
    else durationInCycles = wholeNumber(errors, input.durationInCycles, 'duration_in_cycles', 1, 120) ?? null;
  } else if (duration && input.durationInCycles !== undefined && input.durationInCycles !== null) {
    refuse(errors, 'duration_in_cycles', `goes with duration repeating only, not ${duration}`);
  }
  const maxRedemptions = input.maxRedemptions === undefined || input.maxRedemptions === null ? null : (wholeNumber(errors, input.maxRedemptions, 'max_redemptions', 1, MAX_REDEMPTIONS) ?? null);
  const redeemBy = input.redeemBy === undefined || input.redeemBy === null ? null : (futureInstant(errors, input.redeemBy, ctx.clock.now(), 'redeem_by') ?? null);

  let plans: string[] | null = null;
  if (input.plans !== undefined && input.plans !== null) {
    const given = input.plans;
    if (!Array.isArray(given) || given.length === 0 || given.length > MAX_PLANS || given.some((s) => typeof s !== 'string' || s.length === 0 || s.length > 100)) {
      refuse(errors, 'plans', `must be a list of 1-${MAX_PLANS} plan slugs`);
    } else if (new Set(given).size !== given.length) {
      refuse(errors, 'plans', 'names a plan twice');
    } else {
      const found = await ctx.em.find(Plan, { slug: { $in: given } }, { fields: ['slug', 'currency'] });
      const missing = given.filter((slug) => !found.some((p) => p.slug === slug));
      if (missing.length > 0) refuse(errors, 'plans', `no plan ${missing.map((s) => `"${s}"`).join(', ')} exists`);
      // An amount off a price in another currency would never apply: refused now, not at redemption.
      const foreign = currency ? found.filter((p) => p.currency !== currency) : [];
      if (foreign.length > 0) refuse(errors, 'plans', `${foreign.map((p) => p.slug).join(', ')} ${foreign.length === 1 ? 'is' : 'are'} priced in another currency than ${currency}`);
      plans = given;
    }
  }
  if (errors.length > 0) throw new ValidationError(errors);
  return {
    code: code!, name: name!, percentOff, amountOff, currency, duration: duration!, durationInCycles, maxRedemptions,
    timesRedeemed: 0, redeemBy, plans, active: true, archivedAt: null,
  };
}

const couponExists = (code: string) => new DomainError('conflict', `A coupon with code "${code}" exists already.`);

/**
 * Makes a coupon. Two requests for one code at once: the unique index lets one in and the other
 * answers 409 conflict, as a code already taken does.
 */
export async function createCoupon(ctx: DataContext, actor: Actor, input: CreateCouponInput): Promise<Coupon> {
  const terms = await checkedCoupon(ctx, input);
  if ((await ctx.em.count(Coupon, { code: terms.code })) > 0) throw couponExists(terms.code);
  try {
    return await ctx.em.transactional(async (em: EntityManager) => {
      const coupon = em.create(Coupon, terms as Coupon);
      await em.flush();
      await recordAuditEvent({ em }, actor, {
        action: 'coupon.create',
        target: { type: 'coupon', id: coupon.id },
        reason: input.reason,
        changes: changedFields({}, auditedCoupon(coupon)),
      });
      return coupon;
    });
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) throw couponExists(terms.code);
    throw err;
  }
}

/**
 * Archives a coupon: it and its promotion codes can no longer be redeemed; subscriptions keep
 * the discounts they have. Archiving an archived coupon is 409 invalid_state (the conditional
 * UPDATE decides between two at once: one archives, the other finds it archived).
 */
export async function archiveCoupon(ctx: DataContext, actor: Actor, ref: string, reason?: string | null): Promise<Coupon> {
  const found = await findCoupon(ctx, ref);
  const archived = await ctx.em.transactional(async (em: EntityManager) => {
    const now = ctx.clock.now();
    const changed = await em.nativeUpdate(Coupon, { id: found.id, archivedAt: null }, { active: false, archivedAt: now, updatedAt: now });
    if (changed !== 1) return null;
    const coupon = await em.findOneOrFail(Coupon, { id: found.id }, { refresh: true });
    await recordAuditEvent({ em }, actor, {
      action: 'coupon.archive',
      target: { type: 'coupon', id: coupon.id },
      reason,
      changes: { active: [true, false], archived_at: [null, now.toISOString()] },
    });
    return coupon;
  });
  if (!archived) throw new InvalidStateError(`Coupon ${found.code} is archived already.`);
  return ctx.em.findOneOrFail(Coupon, { id: found.id }, { refresh: true });
}

export interface CouponFilters {
  /** Whether it can still be redeemed: not archived. */
  active?: boolean;
}

/** Coupons, newest first. */
export async function listCoupons(ctx: Pick<DataContext, 'em'>, filters: CouponFilters, page: PageRequest): Promise<Page<Coupon>> {
  const where: FilterQuery<Coupon> = filters.active === undefined ? {} : { active: filters.active };
  return findPage(ctx.em, Coupon, where, page, { orderBy: [{ createdAt: 'desc' }, { id: 'asc' }] });
}
