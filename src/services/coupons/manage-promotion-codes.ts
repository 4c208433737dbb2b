import { UniqueConstraintViolationException, type FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { PromotionCode, type Coupon } from '../../db/entities/coupon.js';
import { Plan } from '../../db/entities/plan.js';
import type { User } from '../../db/entities/user.js';
import { DomainError, InvalidStateError, NotFoundError, ValidationError, type FieldError } from '../../domain/errors.js';
import type { Actor } from '../audit/actor.js';
import { changedFields, recordAuditEvent } from '../audit/record-audit-event.js';
import { findPage, type Page, type PageRequest } from '../common/pagination.js';
import type { DataContext } from '../context.js';
import { findCustomer } from '../users/find-customer.js';
import { amountIn, CODE, futureInstant, MAX_REDEMPTIONS, refuse, wholeNumber } from './coupon-rules.js';
import { couponByRef, findPromotionCode } from './find-coupon.js';
import { promotionCodeKey } from './redeem.js';

/*
 * Promotion codes as staff make them (POST /admin/promotion-codes/, `billing-admin
 * promotion-codes …`): the codes customers type, each of one coupon, unique in any case.
 * Their terms are fixed once made; only whether they are active changes. Every create and
 * change is in the audit trail with who did it and why.
 */

export interface CreatePromotionCodeInput {
  code: string;
  /** The coupon's code or id. */
  coupon: string;
  maxRedemptions?: unknown;
  expiresAt?: unknown;
  firstTimeOnly?: boolean;
  minimumAmount?: unknown;
  /** The only customer who may redeem it: id, username or ext:<external_id>. */
  customer?: string;
  reason?: string | null;
}

/** The fields of a promotion code the audit trail keeps, by their wire names. */
export function auditedPromotionCode(p: PromotionCode): Record<string, unknown> {
  return {
    code: p.code,
    coupon: p.coupon.code,
    max_redemptions: p.maxRedemptions,
    expires_at: p.expiresAt?.toISOString() ?? null,
    first_time_only: p.firstTimeOnly,
    minimum_amount: p.minimumAmount,
    customer_id: p.customer?.id ?? null,
    active: p.active,
  };
}

/**
 * The currency a minimum amount is written in: the coupon's, else the one its plans (or, for a
 * coupon of every plan, all plans) are priced in; null when they differ, and then any amount
 * with two decimals is taken.
 */
async function minimumCurrency(ctx: Pick<DataContext, 'em'>, coupon: Coupon): Promise<string | null> {
  if (coupon.currency) return coupon.currency;
  const plans = await ctx.em.find(Plan, coupon.plans ? { slug: { $in: coupon.plans } } : {}, { fields: ['currency'] });
  const currencies = new Set(plans.map((p) => p.currency));
  return currencies.size === 1 ? [...currencies][0]! : null;
}

const codeExists = (code: string) => new DomainError('conflict', `A promotion code "${code}" exists already (codes are matched in any case).`);

/**
 * Makes a promotion code of an active coupon. Codes differing only in case are one code: the
 * unique index on the upper-case form decides between two made at once (409 conflict).
 */
export async function createPromotionCode(ctx: DataContext, actor: Actor, input: CreatePromotionCodeInput): Promise<PromotionCode> {
  const errors: FieldError[] = [];
  const code = typeof input.code === 'string' && CODE.test(input.code) ? input.code : refuse(errors, 'code', 'must be 1-64 letters, digits, _ or -');
  let coupon: Coupon | null = null;
  if (typeof input.coupon !== 'string' || input.coupon.length === 0) refuse(errors, 'coupon', 'is required: a coupon code or id');
  else {
    coupon = await couponByRef(ctx, input.coupon);
    if (!coupon) refuse(errors, 'coupon', `no coupon "${input.coupon}" exists`);
    else if (!coupon.active) refuse(errors, 'coupon', `coupon ${coupon.code} is archived`);
  }
  const maxRedemptions = input.maxRedemptions === undefined || input.maxRedemptions === null ? null : (wholeNumber(errors, input.maxRedemptions, 'max_redemptions', 1, MAX_REDEMPTIONS) ?? null);
  const expiresAt = input.expiresAt === undefined || input.expiresAt === null ? null : (futureInstant(errors, input.expiresAt, ctx.clock.now(), 'expires_at') ?? null);
  if (input.firstTimeOnly !== undefined && typeof input.firstTimeOnly !== 'boolean') refuse(errors, 'first_time_only', 'must be true or false');
  let minimumAmount: string | null = null;
  if (input.minimumAmount !== undefined && input.minimumAmount !== null && coupon?.active) {
    // A currency without decimals in its name stands for "two decimals allowed".
    minimumAmount = amountIn(errors, input.minimumAmount, (await minimumCurrency(ctx, coupon)) ?? 'XXX', 'minimum_amount') ?? null;
  }
  let customer: User | null = null;
  if (input.customer !== undefined && input.customer !== null) {
    customer = await findCustomer(ctx, String(input.customer)).catch((err: unknown) => {
      if (err instanceof NotFoundError) return refuse(errors, 'customer', `no customer "${input.customer}" exists`) ?? null;
      throw err;
    });
  }
  if (errors.length > 0) throw new ValidationError(errors);

  const key = promotionCodeKey(code!);
  if ((await ctx.em.count(PromotionCode, { codeKey: key })) > 0) throw codeExists(code!);
  try {
    const id = await ctx.em.transactional(async (em: EntityManager) => {
      const promo = em.create(PromotionCode, {
        code: code!,
        codeKey: key,
        coupon: coupon!.id,
        maxRedemptions,
        timesRedeemed: 0,
        expiresAt,
        firstTimeOnly: input.firstTimeOnly ?? false,
        minimumAmount,
        customer: customer?.id ?? null,
        active: true,
      } as unknown as PromotionCode);
      await em.flush();
      await em.populate(promo, ['coupon']);
      await recordAuditEvent({ em }, actor, {
        action: 'promotion_code.create',
        target: { type: 'promotion_code', id: promo.id },
        reason: input.reason,
        changes: changedFields({}, auditedPromotionCode(promo)),
      });
      return promo.id;
    });
    return await findPromotionCode(ctx, id);
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) throw codeExists(code!);
    throw err;
  }
}

/**
 * Activates or deactivates a promotion code. A change that changes nothing records nothing; a
 * code of an archived coupon cannot be activated (409 invalid_state).
 */
export async function setPromotionCodeActive(ctx: DataContext, actor: Actor, ref: string, active: boolean, reason?: string | null): Promise<PromotionCode> {
  const promo = await findPromotionCode(ctx, ref);
  if (promo.active === active) return promo;
  if (active && !promo.coupon.active) throw new InvalidStateError(`Promotion code ${promo.code} cannot be activated: its coupon ${promo.coupon.code} is archived.`);
  await ctx.em.transactional(async (em: EntityManager) => {
    // Only a code still as it was read changes: of two requests at once, the second changes nothing.
    const changed = await em.nativeUpdate(PromotionCode, { id: promo.id, active: !active }, { active, updatedAt: ctx.clock.now() });
    if (changed !== 1) return;
    await recordAuditEvent({ em }, actor, {
      action: active ? 'promotion_code.activate' : 'promotion_code.deactivate',
      target: { type: 'promotion_code', id: promo.id },
      reason,
      changes: { active: [!active, active] },
    });
  });
  return ctx.em.findOneOrFail(PromotionCode, { id: promo.id }, { populate: ['coupon'], refresh: true });
}

export interface PromotionCodeFilters {
  /** The coupon's code or id; a coupon that does not exist has no codes. */
  coupon?: string;
  active?: boolean;
}

/** Promotion codes with their coupons, newest first. */
export async function listPromotionCodes(ctx: Pick<DataContext, 'em'>, filters: PromotionCodeFilters, page: PageRequest): Promise<Page<PromotionCode>> {
  const where: FilterQuery<PromotionCode> & Record<string, unknown> = {};
  if (filters.coupon !== undefined) {
    const coupon = await couponByRef(ctx, filters.coupon);
    if (!coupon) return { count: 0, items: [] };
    where.coupon = coupon.id;
  }
  if (filters.active !== undefined) where.active = filters.active;
  return findPage(ctx.em, PromotionCode, where, page, { orderBy: [{ createdAt: 'desc' }, { id: 'asc' }], populate: ['coupon'] });
}
