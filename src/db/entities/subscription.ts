import { EntitySchema, type Opt } from '@mikro-orm/core';
import { createdAtProperty, idProperty, updatedAtProperty } from './common.js';
import { Plan } from './plan.js';
import { User } from './user.js';

export type SubscriptionStatus = 'pending' | 'trialing' | 'active' | 'paused' | 'past_due' | 'canceled' | 'expired';
export type PaymentType = 'bank_transfer' | 'echannel' | 'gopay' | 'qris' | 'shopeepay' | 'credit_card' | 'wallet';

/** What a paid-on-settlement plan change will do, fixed when it was asked for. */
export interface PendingChange {
  payment_id: string;
  /** The change's time: prices, credit and a new period are reckoned from it. */
  requested_at: string;
  /** The period the subscription will be in once the change applies. */
  period_start: string;
  period_end: string;
  /** True when the change starts a new period (plans of different intervals). */
  resets_period: boolean;
  /** The credit and the new plan's cost it was priced with (charge − credit is the payment). */
  credit: string;
  charge: string;
  /** The period end the change was priced against: a renewal in between makes it stale. */
  prior_period_end: string | null;
  /** A change of units (change-quantity) on the same plan: the quantity it sets when paid. */
  quantity?: number;
  /**
   * The subscription's discount once the change applies (counted for the change's period when it
   * starts one); absent on a change of units, which leaves the discount as it is.
   */
  discount?: SubscriptionDiscount | null;
  /** The redemption of a code typed with the change: given back when the change is dropped. */
  redemption_id?: string | null;
}

/** Why the latest renewal charge failed (kept until a renewal succeeds), for staff and the customer. */
export interface RenewalFailure {
  /** ISO 8601 time of the failed attempt. */
  at: string;
  /** A stable code: the gateway's status_code, or ours (`card_missing`, `card_expired`, …). */
  code: string;
  message: string;
}

/**
 * The discount a subscription redeemed (docs/pricing.md): a copy of its coupon's terms, so that
 * renewals price without reading the coupon, and how long it still lasts.
 */
export interface SubscriptionDiscount {
  coupon_id: string;
  /** The coupon's code. */
  coupon: string;
  /** The promotion code typed, null when staff applied the coupon itself. */
  promotion_code: string | null;
  percent_off: string | null;
  amount_off: string | null;
  currency: string | null;
  duration: 'once' | 'repeating' | 'forever';
  /** The plan slugs it covers; null = every plan. */
  plans: string[] | null;
  starts_at: string;
  /** When it stopped covering anything (the end of its last covered period); null while it lasts. */
  ends_at: string | null;
  /** Billed periods it still covers; null = forever. */
  cycles_left: number | null;
}

export class Subscription {
  id!: string;
  user!: User;
  plan!: Plan;
  /** Written only by src/domain/states (the transition table). */
  status: SubscriptionStatus = 'pending';
  /**
   * The user's id while the subscription is live (pending … past_due), else null. A unique index
   * on it lets the database refuse a second live subscription even under concurrent requests.
   */
  liveUserId: string | null = null;
  paymentType!: PaymentType;
  bank: string | null = null;
  /** Saved card token for merchant-initiated renewals; never serialized. */
  cardToken: string | null = null;
  /** When the saved card token stops working (saved_token_id_expired_at). */
  cardTokenExpiresAt: Date | null = null;
  /** The saved token the customer was last warned about (once per card, not per run). */
  cardExpiryNotifiedToken: string | null = null;
  currentPeriodStart: Date | null = null;
  currentPeriodEnd: Date | null = null;
  nextBillingDate: Date | null = null;
  /** The first period's start: renewals are computed from it so month-end dates do not drift. */
  billingAnchor: Date | null = null;
  trialEnd: Date | null = null;
  trialWillEndNotifiedAt: Date | null = null;
  cancelAtPeriodEnd = false;
  canceledAt: Date | null = null;
  cancelReason: string | null = null;
  pausedAt: Date | null = null;
  pendingPlan: Plan | null = null;
  /** An immediate plan change waiting for its payment (docs/billing.md, 'Money rules'): applied when it settles. */
  pendingChangePlan: Plan | null = null;
  pendingChange: PendingChange | null = null;
  cyclesCompleted = 0;
  /** Units of a per-unit plan (1 for any other plan). */
  quantity: Opt<number> = 1;
  /** Fewer units asked for at the period's end: applied by the renewal. */
  pendingQuantity: number | null = null;
  discount: SubscriptionDiscount | null = null;
  /**
   * Usage (docs/usage.md) is invoiced up to this instant: the open usage window starts here (at
   * the period's start while nothing was invoiced yet). Events before it are refused.
   */
  usageBilledUntil: Date | null = null;
  lastRenewalFailure: RenewalFailure | null = null;
  metadata: Record<string, unknown> = {};
  customerDetails: Record<string, string> = {};
  createdAt!: Date;
  updatedAt!: Date;
}

export const SubscriptionSchema = new EntitySchema<Subscription>({
  class: Subscription,
  tableName: 'subscriptions',
  indexes: [
    { properties: ['user', 'createdAt'] },
    { properties: ['status', 'nextBillingDate'] },
  ],
  properties: {
    id: idProperty,
    user: { kind: 'm:1', entity: () => User },
    plan: { kind: 'm:1', entity: () => Plan },
    status: { type: 'string', length: 20 },
    liveUserId: { type: 'string', length: 36, nullable: true, unique: true },
    paymentType: { type: 'string', length: 20 },
    bank: { type: 'string', length: 20, nullable: true },
    cardToken: { type: 'string', length: 200, nullable: true, hidden: true },
    cardTokenExpiresAt: { type: 'Date', nullable: true },
    cardExpiryNotifiedToken: { type: 'string', length: 200, nullable: true, hidden: true },
    currentPeriodStart: { type: 'Date', nullable: true },
    currentPeriodEnd: { type: 'Date', nullable: true },
    nextBillingDate: { type: 'Date', nullable: true },
    billingAnchor: { type: 'Date', nullable: true },
    trialEnd: { type: 'Date', nullable: true },
    trialWillEndNotifiedAt: { type: 'Date', nullable: true },
    cancelAtPeriodEnd: { type: 'boolean', default: false },
    canceledAt: { type: 'Date', nullable: true },
    cancelReason: { type: 'string', length: 500, nullable: true },
    pausedAt: { type: 'Date', nullable: true },
    pendingPlan: { kind: 'm:1', entity: () => Plan, nullable: true },
    pendingChangePlan: { kind: 'm:1', entity: () => Plan, nullable: true },
    pendingChange: { type: 'json', nullable: true },
    cyclesCompleted: { type: 'integer', default: 0 },
    quantity: { type: 'integer', default: 1 },
    pendingQuantity: { type: 'integer', nullable: true },
    discount: { type: 'json', nullable: true },
    usageBilledUntil: { type: 'Date', nullable: true },
    lastRenewalFailure: { type: 'json', nullable: true },
    metadata: { type: 'json' },
    customerDetails: { type: 'json' },
    createdAt: createdAtProperty,
    updatedAt: updatedAtProperty,
  },
});
