import { CouponRedemption } from '../../db/entities/coupon.js';
import { Invoice } from '../../db/entities/invoice.js';
import { Payment, type PaymentStatus } from '../../db/entities/payment.js';
import type { Subscription } from '../../db/entities/subscription.js';
import type { DataContext } from '../context.js';
import { redeemAgain, undoRedemption } from './redeem.js';

/*
 * NOTE: a promotion code is spent only by money. The code a subscription redeemed when it was
 * made is held by the payments of its first invoice: while one of them waits for the money or
 * was paid, the code counts it; once none does (the last one expired, failed, or was canceled
 * unpaid), the redemption is given back, so a one-use code is not used up by an order nobody
 * paid. A payment of that invoice made later (paying again after an expiry) holds it again, and
 * money that arrives for it anyway counts it again. Both run in the transaction that moved the
 * payment, under the subscription's lock; a redemption is given back at most once
 * (undoRedemption), so an expiry heard twice gives back once.
 */

/** The payments that hold the first invoice's redemption: money on its way, or money that arrived. */
const HOLDING: readonly PaymentStatus[] = ['pending', 'settled', 'partially_refunded', 'refunded', 'charged_back'];

/**
 * The first invoice of a subscription made with a promotion code, or null. (A trial has no such
 * invoice: its code is held by the trial, not by a payment.)
 */
async function firstInvoiceWithCode(ctx: DataContext, sub: Subscription): Promise<Invoice | null> {
  if (!sub.discount?.promotion_code) return null;
  return ctx.em.findOne(Invoice, { subscription: sub.id, billingReason: 'subscription_create' });
}

/** The redemptions the subscription made when it was made: all but a waiting plan change's (never one before its first payment). */
async function creationRedemptions(ctx: DataContext, sub: Subscription): Promise<CouponRedemption[]> {
  const changes = sub.pendingChange?.redemption_id ?? null;
  return (await ctx.em.find(CouponRedemption, { subscription: sub.id })).filter((r) => r.id !== changes);
}

/**
 * After a payment of the subscription's stopped waiting without money: gives its code back when
 * no payment of the first invoice holds it any more. Returns what changed, for the event's record.
 */
export async function releaseUnheldRedemption(ctx: DataContext, sub: Subscription): Promise<string[]> {
  const invoice = await firstInvoiceWithCode(ctx, sub);
  if (!invoice) return releaseNeverStartedTrial(ctx, sub);
  // The payments as this transaction has them (a status changed here and not yet written counts).
  const payments = await ctx.em.find(Payment, { invoice: invoice.id });
  if (payments.some((p) => HOLDING.includes(p.status))) return [];
  const given: string[] = [];
  for (const redemption of await creationRedemptions(ctx, sub)) {
    if (await undoRedemption(ctx, redemption.id)) given.push(`promotion code ${sub.discount!.promotion_code} given back: no payment of ${invoice.number} holds it`);
  }
  return given;
}

/**
 * NOTE: a trial waiting for its card (3-D Secure) holds its code without a payment; when it ends
 * before it started (the card declined, its 3-D Secure failed or expired, or the customer
 * canceled while it waited), nothing was ever due, so the code is given back. A trial that
 * started keeps its code: it is the first paid period's discount.
 */
async function releaseNeverStartedTrial(ctx: DataContext, sub: Subscription): Promise<string[]> {
  if (!sub.discount?.promotion_code || sub.trialEnd !== null || sub.status !== 'canceled') return [];
  if ((await ctx.em.count(Invoice, { subscription: sub.id })) > 0) return [];
  const given: string[] = [];
  for (const redemption of await creationRedemptions(ctx, sub)) {
    if (await undoRedemption(ctx, redemption.id)) given.push(`promotion code ${sub.discount.promotion_code} given back: the trial never started`);
  }
  return given;
}

/**
 * A payment of the first invoice holds its code again after it was given back: `pays_again` when
 * a new payment is opened (refused with PromotionCodeInvalidError when the code was used up
 * since), `paid` when money arrived for the invoice (counted whatever the limit). Nothing when the
 * redemption is still held.
 */
export async function holdRedemptionAgain(ctx: DataContext, sub: Subscription, why: 'pays_again' | 'paid'): Promise<string[]> {
  const invoice = await firstInvoiceWithCode(ctx, sub);
  if (!invoice || (await creationRedemptions(ctx, sub)).length > 0) return [];
  const code = sub.discount!.promotion_code!;
  await redeemAgain(ctx, { code, user: sub.user, subscription: sub, at: ctx.clock.now(), why });
  return [`promotion code ${code} counted again: ${why === 'paid' ? 'money arrived for' : 'a new payment holds'} ${invoice.number}`];
}
