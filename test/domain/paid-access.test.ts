import { describe, expect, it } from 'vitest';
import { hasPaidAccess, paidAccessEndsAt, type AccessSubject } from '../../src/domain/paid-access.js';

const END = new Date('2027-02-28T10:00:00.000Z');
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const rules = { graceMinutes: 60, renewalDueDays: 3 };
const sub = (over: Partial<AccessSubject> = {}): AccessSubject => ({ status: 'active', currentPeriodEnd: END, trialEnd: null, openRenewalIssuedAt: null, ...over });
const after = (ms: number) => new Date(END.getTime() + ms);

describe('a paid period covers now (the access rule of docs/billing.md)', () => {
  it('until the period end plus the grace, whether or not a pass has run', () => {
    expect(hasPaidAccess(sub(), after(60 * MINUTE - 1), rules)).toBe(true);
    expect(hasPaidAccess(sub(), after(60 * MINUTE), rules)).toBe(false);
  });

  it('a trial: until the trial end plus the grace', () => {
    const trial = sub({ status: 'trialing', currentPeriodEnd: END, trialEnd: END });
    expect(paidAccessEndsAt(trial, rules)).toBe(after(60 * MINUTE).getTime());
  });

  it('an open renewal invoice: until its due instant, when that is later', () => {
    const issued = after(5 * MINUTE);
    expect(paidAccessEndsAt(sub({ openRenewalIssuedAt: issued }), rules)).toBe(issued.getTime() + 3 * DAY);
    // Due at once (RENEWAL_DUE_DAYS 0): the grace still holds.
    expect(paidAccessEndsAt(sub({ openRenewalIssuedAt: issued }), { ...rules, renewalDueDays: 0 })).toBe(after(60 * MINUTE).getTime());
  });

  it('statuses that grant nothing, whatever the dates', () => {
    for (const status of ['pending', 'paused', 'past_due', 'canceled', 'expired']) {
      expect(hasPaidAccess(sub({ status, openRenewalIssuedAt: END }), after(-DAY), rules)).toBe(false);
    }
  });

  it('no period end set: no end to access', () => {
    expect(paidAccessEndsAt(sub({ currentPeriodEnd: null }), rules)).toBe(Infinity);
  });
});
