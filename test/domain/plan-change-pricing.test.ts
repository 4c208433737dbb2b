import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Plan } from '../../src/db/entities/plan.js';
import type { SubscriptionDiscount } from '../../src/db/entities/subscription.js';
import { isPositive, subtract } from '../../src/domain/money.js';
import { taxInvoice, type TaxBehavior } from '../../src/domain/tax.js';
import { priceInvoice } from '../../src/services/invoices/create-invoice.js';
import { priceChange } from '../../src/domain/plan-change-pricing.js';
import { proratedPrice, unusedShare } from '../../src/domain/unused-share.js';

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

describe('proratedPrice', () => {
  /** round(n × price × left / total), half up, in exact integer arithmetic: the rule written out. */
  const byHand = (price: bigint, n: bigint, left: bigint, total: bigint): string => {
    const scaled = n * price * left;
    const whole = scaled / total;
    return `${2n * (scaled - whole * total) >= total ? whole + 1n : whole}.00`;
  };

  it('n units for the rest of a span are round(n × price × share): rounded once, never per unit (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5_000_000 }),
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 366 * 24 * 3600 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        (price, n, totalSeconds, permille) => {
          const start = new Date('2026-01-31T17:00:00Z');
          const end = new Date(start.getTime() + totalSeconds * 1000);
          const leftMs = Math.floor((totalSeconds * 1000 * permille) / 1_000_000);
          const at = new Date(end.getTime() - leftMs);
          const expected = leftMs === 0 ? '0.00' : byHand(BigInt(price), BigInt(n), BigInt(leftMs), BigInt(totalSeconds * 1000));
          expect(proratedPrice(`${price}.00`, n, start, end, at, 'IDR')).toBe(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('three seats at 10.000 with 11 of 31 days left: 10.645, where three rounded shares of one seat made 10.644', () => {
    const start = new Date('2026-01-20T00:00:00Z');
    const end = new Date('2026-02-20T00:00:00Z');
    const at = new Date('2026-02-09T00:00:00Z');
    expect(unusedShare('10000.00', start, end, at, 'IDR')).toBe('3548.00');
    expect(proratedPrice('10000.00', 3, start, end, at, 'IDR')).toBe('10645.00');
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

describe('priceChange on discounted prices and units', () => {
  const discount = (over: Partial<SubscriptionDiscount> = {}): SubscriptionDiscount => ({
    coupon_id: 'c', coupon: 'C', promotion_code: null, percent_off: '25.00', amount_off: null, currency: null,
    duration: 'forever', plans: null, starts_at: START.toISOString(), ends_at: null, cycles_left: null, ...over,
  });
  const perUnit = (price: string) => Object.assign(plan(price), { perUnit: true });

  it('the charge is the rest of the period after the discount that covers the new plan; the credit is what was paid', () => {
    const terms = priceChange({ oldPlan: plan('50000.00'), newPlan: plan('150000.00'), periodStart: START, periodEnd: END, at: AT, credit: '9375.00', pkp: false, discount: discount() });
    // 150 000 × 7/28 = 37 500, 25 % off: 28 125; less 9 375 paid for Basic's unused quarter at 25 % off.
    expect(terms).toMatchObject({ chargeLine: '37500.00', chargeDiscount: '9375.00', charge: '28125.00', net: '18750.00', creditLine: '9375.00' });
    expect(terms.discount?.coupon).toBe('C');
  });

  it('units of a per-unit plan: price × quantity, then the share, then the discount; any other plan counts one', () => {
    const terms = priceChange({ oldPlan: perUnit('50000.00'), newPlan: perUnit('150000.00'), periodStart: START, periodEnd: END, at: AT, credit: '0.00', pkp: false, quantity: 3, discount: discount({ percent_off: null, amount_off: '100000.00', currency: 'IDR' }) });
    expect(terms).toMatchObject({ chargeLine: '112500.00', chargeUnit: '112500.00', chargeQuantity: 1, chargeDiscount: '100000.00', charge: '12500.00', net: '12500.00' });
    const single = priceChange({ oldPlan: perUnit('50000.00'), newPlan: plan('150000.00'), periodStart: START, periodEnd: END, at: AT, credit: '0.00', pkp: false, quantity: 3 });
    expect(single.chargeLine).toBe('37500.00');
    const fresh = priceChange({ oldPlan: perUnit('50000.00'), newPlan: Object.assign(perUnit('500000.00'), { interval: 12 }), periodStart: START, periodEnd: END, at: AT, credit: '0.00', pkp: false, quantity: 3 });
    expect(fresh).toMatchObject({ chargeUnit: '500000.00', chargeQuantity: 3, chargeLine: '1500000.00', net: '1500000.00', resetsPeriod: true });
  });

  it('a discount not for the new plan, or in another currency, does not cover the charge; one of 100 % leaves only the credit', () => {
    const notFor = priceChange({ oldPlan: plan('50000.00'), newPlan: Object.assign(plan('150000.00'), { slug: 'pro' }), periodStart: START, periodEnd: END, at: AT, credit: '0.00', pkp: false, discount: discount({ plans: ['basic'] }) });
    expect(notFor).toMatchObject({ chargeDiscount: '0.00', charge: '37500.00', discount: null });
    const all = priceChange({ oldPlan: plan('50000.00'), newPlan: plan('150000.00'), periodStart: START, periodEnd: END, at: AT, credit: '12500.00', pkp: false, discount: discount({ percent_off: '100.00' }) });
    expect(all).toMatchObject({ charge: '0.00', net: '-12500.00' });
  });

  it('a new period (another interval) is discounted only by a discount with a period left; one that ran out covers only the running period', () => {
    const spent = discount({ duration: 'once', cycles_left: 0, ends_at: END.toISOString() });
    const same = priceChange({ oldPlan: plan('50000.00'), newPlan: plan('150000.00'), periodStart: START, periodEnd: END, at: AT, credit: '0.00', pkp: false, discount: spent });
    expect(same.chargeDiscount).toBe('9375.00');
    const yearly = priceChange({ oldPlan: plan('50000.00'), newPlan: plan('500000.00', 12), periodStart: START, periodEnd: END, at: AT, credit: '0.00', pkp: false, discount: spent });
    expect(yearly).toMatchObject({ chargeDiscount: '0.00', charge: '500000.00', discount: null });
    const left = priceChange({ oldPlan: plan('50000.00'), newPlan: plan('500000.00', 12), periodStart: START, periodEnd: END, at: AT, credit: '0.00', pkp: false, discount: discount({ duration: 'repeating', cycles_left: 2 }) });
    expect(left).toMatchObject({ chargeDiscount: '125000.00', charge: '375000.00' });
  });

  it('the change invoice (lines as billChange makes them, priced by priceInvoice) totals exactly the net, on every tax behaviour (property)', () => {
    const config = { tax: { pkp: true, sellerTaxId: null, sellerNitku: null }, documents: { companyName: '' } } as unknown as Parameters<typeof priceInvoice>[0];
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 28 * 24 - 1 }),
        fc.integer({ min: 1, max: 2000 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.constantFrom<TaxBehavior>('none', 'inclusive', 'exclusive'),
        fc.option(fc.oneof(fc.integer({ min: 1, max: 100 }).map((p) => discount({ percent_off: `${p}.00` })), fc.integer({ min: 1, max: 300_000 }).map((a) => discount({ percent_off: null, amount_off: `${a}.00`, currency: 'IDR' })))),
        fc.integer({ min: 1, max: 5 }),
        (hoursIn, price, credit, behavior, d, quantity) => {
          const newPlan = Object.assign(perUnit(`${price * 100}.00`), { taxBehavior: behavior });
          const at = new Date(START.getTime() + hoursIn * 3_600_000);
          const terms = priceChange({ oldPlan: plan('50000.00'), newPlan, periodStart: START, periodEnd: END, at, credit: `${credit}.00`, pkp: true, quantity, discount: d });
          fc.pre(isPositive(terms.net));
          const lines = [
            ...(isPositive(terms.creditLine) ? [{ description: 'credit', kind: 'proration' as const, unitAmount: `-${terms.creditLine}` }] : []),
            { description: 'charge', kind: 'proration' as const, unitAmount: terms.chargeUnit, quantity: terms.chargeQuantity, discounted: true },
          ];
          const priced = priceInvoice(config, { lines, currency: 'IDR', taxBehavior: behavior, discount: terms.discount });
          expect(priced.tax.total).toBe(terms.net);
          expect(priced.discountAmount).toBe(terms.chargeDiscount);
          // What is asked is exactly charge − credit: the rounding unit an exclusive plan may
          // need is part of the charge (it pays for the period), never a credit given back.
          expect(terms.net).toBe(subtract(terms.charge, terms.credit));
          const owed = taxInvoice(subtract(terms.chargeLine, terms.chargeDiscount), behavior, 'IDR', true).total;
          expect(['0.00', '1.00']).toContain(subtract(terms.charge, owed));
        },
      ),
      { numRuns: 400 },
    );
  });
});
