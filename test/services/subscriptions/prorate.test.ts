import { describe, expect, it } from 'vitest';
import { Plan } from '../../../src/db/entities/plan.js';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { prorate } from '../../../src/services/subscriptions/change-subscription-plan.js';

const plan = (price: string, currency = 'IDR'): Plan => Object.assign(new Plan(), { price, currency });
const inPeriod = (start: string, end: string): Subscription =>
  Object.assign(new Subscription(), { currentPeriodStart: new Date(start), currentPeriodEnd: new Date(end) });

describe('prorate', () => {
  const sub = inPeriod('2026-01-31T00:00:00Z', '2026-02-28T00:00:00Z'); // 28 days, clamped month end

  it('charges the unused fraction of the new price minus that of the old, in whole rupiah', () => {
    // 7 of 28 days left: a quarter.
    expect(prorate(sub, plan('50000.00'), plan('150000.00'), new Date('2026-02-21T00:00:00Z'))).toEqual({
      credit: '12500.00',
      charge: '37500.00',
      net: '25000.00',
    });
  });

  it('rounds each side half up to what the currency can be charged in', () => {
    // 1 of 3 days left of a three-day period.
    const short = inPeriod('2026-01-01T00:00:00Z', '2026-01-04T00:00:00Z');
    expect(prorate(short, plan('10000.00'), plan('20000.00'), new Date('2026-01-03T00:00:00Z'))).toEqual({
      credit: '3333.00',
      charge: '6667.00',
      net: '3334.00',
    });
    expect(prorate(short, plan('10.00', 'USD'), plan('20.00', 'USD'), new Date('2026-01-03T00:00:00Z'))).toEqual({
      credit: '3.33',
      charge: '6.67',
      net: '3.34',
    });
  });

  it('a downgrade has a negative net', () => {
    expect(prorate(sub, plan('150000.00'), plan('50000.00'), new Date('2026-02-21T00:00:00Z'))!.net).toBe('-25000.00');
  });

  it('counts no more than the whole period before it starts, and nothing after it ends', () => {
    expect(prorate(sub, plan('50000.00'), plan('150000.00'), new Date('2026-01-01T00:00:00Z'))!.net).toBe('100000.00');
    expect(prorate(sub, plan('50000.00'), plan('150000.00'), new Date('2026-02-28T00:00:00Z'))).toBeNull();
    expect(prorate(new Subscription(), plan('50000.00'), plan('150000.00'), new Date())).toBeNull();
  });
});
