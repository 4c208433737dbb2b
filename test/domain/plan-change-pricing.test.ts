import { describe, expect, it } from 'vitest';
import { Plan } from '../../src/db/entities/plan.js';
import { priceChange } from '../../src/domain/plan-change-pricing.js';
import { unusedShare } from '../../src/domain/unused-share.js';

const plan = (price: string, months = 1): Plan => Object.assign(new Plan(), { price, currency: 'IDR', interval: months, intervalUnit: 'month' });
const START = new Date('2026-01-31T00:00:00Z');
const END = new Date('2026-02-28T00:00:00Z'); // 28 days, clamped month end
const AT = new Date('2026-02-21T00:00:00Z'); // 7 of 28 days left: a quarter

describe('unusedShare', () => {
  it('is the unused fraction, rounded half up to what the currency can be charged in', () => {
    expect(unusedShare('50000.00', START, END, AT, 'IDR')).toBe('12500.00');
    const short = [new Date('2026-01-01T00:00:00Z'), new Date('2026-01-04T00:00:00Z')] as const;
    expect(unusedShare('10000.00', ...short, new Date('2026-01-03T00:00:00Z'), 'IDR')).toBe('3333.00');
    expect(unusedShare('20.00', ...short, new Date('2026-01-03T00:00:00Z'), 'USD')).toBe('6.67');
  });

  it('is all of it before the span starts and nothing once it ended', () => {
    expect(unusedShare('50000.00', START, END, new Date('2026-01-01T00:00:00Z'), 'IDR')).toBe('50000.00');
    expect(unusedShare('50000.00', START, END, END, 'IDR')).toBe('0.00');
  });
});

describe('priceChange', () => {
  it('same interval: the new price for the unused fraction, less the credit; the period stays', () => {
    const terms = priceChange({ oldPlan: plan('50000.00'), newPlan: plan('150000.00'), periodStart: START, periodEnd: END, at: AT, credit: '12500.00', pkp: false });
    expect(terms).toMatchObject({ credit: '12500.00', charge: '37500.00', net: '25000.00', periodStart: START, periodEnd: END, resetsPeriod: false });
  });

  it('the credit is what was paid, not a list price: an unpaid period credits nothing', () => {
    const terms = priceChange({ oldPlan: plan('150000.00'), newPlan: plan('50000.00'), periodStart: START, periodEnd: END, at: AT, credit: '0.00', pkp: false });
    expect(terms.net).toBe('12500.00');
  });

  it('different interval: the period restarts at the change and the full new price is due, less the credit', () => {
    const terms = priceChange({ oldPlan: plan('50000.00'), newPlan: plan('500000.00', 12), periodStart: START, periodEnd: END, at: AT, credit: '12500.00', pkp: false });
    expect(terms).toMatchObject({
      credit: '12500.00',
      charge: '500000.00',
      net: '487500.00',
      periodStart: AT,
      periodEnd: new Date('2027-02-21T00:00:00Z'),
      resetsPeriod: true,
    });
    const down = priceChange({ oldPlan: plan('500000.00', 12), newPlan: plan('50000.00'), periodStart: START, periodEnd: new Date('2027-01-31T00:00:00Z'), at: AT, credit: '400000.00', pkp: false });
    expect(down).toMatchObject({ charge: '50000.00', net: '-350000.00', periodEnd: new Date('2026-03-21T00:00:00Z'), resetsPeriod: true });
  });
});
