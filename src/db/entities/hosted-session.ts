import { EntitySchema, type Opt } from '@mikro-orm/core';
import { createdAtProperty, idProperty } from './common.js';
import { Plan } from './plan.js';
import type { PaymentType } from './subscription.js';
import { Subscription } from './subscription.js';
import { Topup } from './topup.js';
import { User } from './user.js';

/**
 * `invoice`: not a link (an invoice's page link is derived from the invoice, never stored) but
 * the claim its page's submits take (`choosingAt`), made by the first submit.
 */
export type HostedSessionKind = 'checkout' | 'portal' | 'invoice';

/**
 * A link to a hosted page (docs/hosted.md), made by the client's backend for one user. Only the
 * SHA-256 of the link's secret is kept. A checkout link opens in any browser until it completes
 * or expires. A portal link is claimed by the first browser that confirms on its landing page:
 * that stamps `openedAt` and gives the browser a cookie whose secret is kept hashed in
 * `browserSecretHash`; from then on the portal answers that browser alone.
 */
export class HostedSession {
  id!: string;
  kind!: HostedSessionKind;
  user!: User;
  tokenHash!: string;
  /** Checkout: the plan to buy, or the amount to top up by. */
  plan: Plan | null = null;
  topupAmount: string | null = null;
  /** Checkout: the one payment type the page offers, when the client chose one. */
  paymentType: Exclude<PaymentType, 'wallet'> | null = null;
  /** Checkout: units of a per-unit plan, and a promotion code given by the client or typed on the page. */
  quantity: Opt<number> = 1;
  promotionCode: string | null = null;
  successUrl: string | null = null;
  cancelUrl: string | null = null;
  /** Portal: where its links back lead. */
  returnUrl: string | null = null;
  expiresAt!: Date;
  /** Portal: when a browser claimed the link by its landing page's button (a POST, never a GET or HEAD). */
  openedAt: Date | null = null;
  browserSecretHash: string | null = null;
  /** Portal: the claiming browser's last request; the page lives a fixed time after it. */
  lastUsedAt: Date | null = null;
  /** The language chosen on the page (`?lang=`), kept across reloads and redirects. */
  language: string | null = null;
  /** Checkout: set while one submit is charging, so that concurrent submits make one charge. */
  choosingAt: Date | null = null;
  /** Checkout: what the customer's choice on the page made. */
  subscription: Subscription | null = null;
  topup: Topup | null = null;
  createdAt!: Date;
}

export const HostedSessionSchema = new EntitySchema<HostedSession>({
  class: HostedSession,
  tableName: 'hosted_sessions',
  indexes: [{ properties: ['expiresAt'] }],
  properties: {
    id: idProperty,
    kind: { type: 'string', length: 10 },
    user: { kind: 'm:1', entity: () => User },
    tokenHash: { type: 'string', length: 64, unique: true, hidden: true },
    plan: { kind: 'm:1', entity: () => Plan, nullable: true },
    topupAmount: { type: 'string', length: 30, nullable: true },
    paymentType: { type: 'string', length: 20, nullable: true },
    quantity: { type: 'integer', default: 1 },
    promotionCode: { type: 'string', length: 64, nullable: true },
    successUrl: { type: 'string', length: 2000, nullable: true },
    cancelUrl: { type: 'string', length: 2000, nullable: true },
    returnUrl: { type: 'string', length: 2000, nullable: true },
    expiresAt: { type: 'Date' },
    openedAt: { type: 'Date', nullable: true },
    browserSecretHash: { type: 'string', length: 64, nullable: true, hidden: true },
    lastUsedAt: { type: 'Date', nullable: true },
    language: { type: 'string', length: 2, nullable: true },
    choosingAt: { type: 'Date', nullable: true },
    subscription: { kind: 'm:1', entity: () => Subscription, nullable: true },
    topup: { kind: 'm:1', entity: () => Topup, nullable: true },
    createdAt: createdAtProperty,
  },
});
