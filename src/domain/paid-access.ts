import { addDays } from './billing-calendar.js';
import { ACCESS_GRANTING_STATUSES } from './states/subscription-states.js';

/*
 * "A paid period covers now" (docs/billing.md, its opening section), written once: the access middleware and
 * GET /subscriptions/active/ both ask it, and the access cache keeps an answer only until the
 * instant it returns (src/http/auth/access-cache.ts). Pure: no database, no clock of its own.
 */

/** What makes an invoice a subscription's open renewal invoice (the period advances only when it is paid). */
export const OPEN_RENEWAL_INVOICE = { billingReason: 'subscription_cycle', status: 'open' } as const;

export interface AccessRules {
  /** ACCESS_GRACE_MINUTES: how long after its period ends an unrenewed subscription still gives access. */
  graceMinutes: number;
  /** RENEWAL_DUE_DAYS: a renewal invoice is due this many days after it is issued. */
  renewalDueDays: number;
}

/** What the rule reads of a subscription. */
export interface AccessSubject {
  status: string;
  currentPeriodEnd: Date | null;
  trialEnd: Date | null;
  /** When the oldest open renewal invoice was issued (its created_at); null when there is none. */
  openRenewalIssuedAt: Date | null;
}

/** The instant a renewal invoice issued at `issuedAt` falls due: unpaid then, the subscription becomes past_due. */
export function renewalDueAt(issuedAt: Date, renewalDueDays: number): Date {
  return addDays(issuedAt, renewalDueDays);
}

/**
 * The first instant (epoch ms) at which the subscription no longer gives access: -Infinity when
 * its status grants none, +Infinity when it has no period end at all.
 *
 * NOTE: the paid period (or trial) runs to current_period_end, and a billing pass may come late:
 * up to `graceMinutes` after the end the subscription still gives access, whether or not a pass
 * has run, and no longer. A renewal invoice a pass has issued keeps access until its due instant
 * (docs/billing.md, 'Dunning'), when the pass makes the subscription past_due.
 */
export function paidAccessEndsAt(sub: AccessSubject, rules: AccessRules): number {
  if (!(ACCESS_GRANTING_STATUSES as readonly string[]).includes(sub.status)) return -Infinity;
  const ends = [sub.currentPeriodEnd, sub.trialEnd].filter((d): d is Date => d !== null).map((d) => d.getTime());
  if (ends.length === 0) return Infinity;
  const graceEnd = Math.max(...ends) + rules.graceMinutes * 60_000;
  const invoiceEnd = sub.openRenewalIssuedAt ? renewalDueAt(sub.openRenewalIssuedAt, rules.renewalDueDays).getTime() : -Infinity;
  return Math.max(graceEnd, invoiceEnd);
}

/** Whether a paid period (or trial) of the subscription covers `now`. */
export function hasPaidAccess(sub: AccessSubject, now: Date, rules: AccessRules): boolean {
  return now.getTime() < paidAccessEndsAt(sub, rules);
}
