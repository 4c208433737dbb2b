import fc from 'fast-check';
import type { EntityManager } from '@mikro-orm/knex';
import { CouponRedemption } from '../../../src/db/entities/coupon.js';
import { Notification } from '../../../src/db/entities/notification.js';
import { Payment } from '../../../src/db/entities/payment.js';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { WebhookLog } from '../../../src/db/entities/webhook-log.js';
import { LIVE_SUBSCRIPTION_STATUSES } from '../../../src/domain/states/subscription-states.js';
import { api, checkMoneyRules, type Customer } from './customer-world.js';

/*
 * Two rules of the customer-sequence model: a promotion code is spent only by money,
 * and changing one's mind about how to pay is not a failure. Kept apart from the other moves and
 * rules (customer-commands.ts, customer-world.ts), which are long enough already.
 *
 * PROPERTY_SKIP_RULES=held_codes,switch_method turns either off (to see other rules alone).
 */

const skipped = (rule: string) => (process.env.PROPERTY_SKIP_RULES ?? '').split(',').includes(rule);

/**
 * Rule 13: a code's count is what paid and pending payments hold. Every redemption recorded for
 * the customer stands on a payment of its subscription that is pending or was paid (a first
 * invoice of nothing is paid at once); a redemption whose payments all expired, were canceled
 * or failed unpaid was to be given back. A trial holds its code without a payment (nothing is
 * due until it ends), so its redemptions are left out, and so are a trial's still waiting for
 * its card; a trial that ended before it started (its card refused, or canceled while it
 * waited) must have given its code back.
 */
export async function heldCodeProblems(em: EntityManager, userId: string): Promise<string[]> {
  if (skipped('held_codes')) return [];
  const problems: string[] = [];
  for (const r of await em.find(CouponRedemption, { user: userId }, { populate: ['subscription', 'promotionCode'] })) {
    const sub = r.subscription as Subscription | null;
    if (!sub || sub.trialEnd) continue;
    const payments = await em.find(Payment, { subscription: sub.id });
    // A trial still waiting for its card (3-D Secure) holds its code as a started trial does.
    if (sub.status === 'pending' && payments.length === 0) continue;
    if (payments.some((p) => p.status === 'pending' || p.paidAt !== null)) continue;
    problems.push(`promotion code ${r.promotionCode?.code ?? r.coupon.id} is still counted for subscription ${sub.id}, whose payments [${payments.map((p) => `${p.orderId} ${p.status}`).join(', ')}] hold none of it`);
  }
  return problems;
}

/** The kinds a pending payment can be switched to (a card charge settles at once: no switch back from it). */
const SWITCH_KINDS = ['bank_transfer', 'permata', 'qris', 'gopay', 'shopeepay', 'echannel'] as const;
type SwitchKind = (typeof SWITCH_KINDS)[number];
const switchBody = (kind: SwitchKind) => (kind === 'permata' ? { payment_type: 'bank_transfer', metadata: { bank: 'permata' } } : { payment_type: kind });
const FAILURE_NOTICES = ['payment_failed', 'subscription_past_due'] as const;

/**
 * The customer switches the method of the subscription's pending payment ("choose another
 * method"): POST /payments/charge/ with another payment type, the service canceling the old
 * order. Rule 14, checked here once the old order's cancel has been heard: the switch never
 * makes the subscription past_due and never tells the customer a payment failed.
 */
export class SwitchMethod implements fc.AsyncCommand<Record<string, never>, Customer> {
  constructor(readonly kind: SwitchKind) {}
  check(): boolean {
    return true;
  }
  async run(_m: Record<string, never>, c: Customer): Promise<void> {
    c.trace.push(this.toString());
    const em = () => c.world.server.running.billing.orm.em.fork();
    const sub = await em().findOne(Subscription, { user: c.user.id, status: { $in: [...LIVE_SUBSCRIPTION_STATUSES] } });
    const old = sub && (await em().findOne(Payment, { subscription: sub.id, status: 'pending', paymentType: { $ne: 'wallet' } }, { orderBy: { createdAt: 'desc', id: 'desc' } }));
    if (!sub || !old) return;
    const notices = () => em().count(Notification, { user: c.user.id, notificationType: { $in: [...FAILURE_NOTICES] } });
    const noticesBefore = await notices();
    const res = await api(c, 'POST', '/payments/charge/', { subscription_id: sub.id, ...switchBody(this.kind) });
    const orderId = res.body?.payment?.order_id;
    if (res.status < 300 && typeof orderId === 'string' && !c.orders.includes(orderId)) c.orders.push(orderId);
    // The old order's cancel is notified by the gateway on its own: its echo is waited for (a second at most).
    for (let i = 0; i < 20 && (await em().count(WebhookLog, { orderId: old.orderId, transactionStatus: 'cancel' })) === 0; i++) await new Promise((r) => setTimeout(r, 50));
    const problems = await checkMoneyRules(c);
    const after = await em().findOneOrFail(Subscription, sub.id);
    if (!skipped('switch_method') && sub.status !== 'past_due' && after.status === 'past_due') problems.push(`switching the method of ${old.orderId} made subscription ${sub.id} past_due (was ${sub.status})`);
    const told = (await notices()) - noticesBefore;
    if (!skipped('switch_method') && told > 0) problems.push(`switching the method of ${old.orderId} sent ${told} payment_failed/subscription_past_due notification(s)`);
    if (problems.length > 0) throw new Error(`after ${this.toString()}:\n- ${problems.join('\n- ')}`);
  }
  toString() {
    return `switchMethod(${this.kind})`;
  }
}

export const switchMethodCommand = fc.constantFrom(...SWITCH_KINDS).map((k) => new SwitchMethod(k));
