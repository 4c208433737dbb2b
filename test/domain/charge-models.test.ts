import { describe, expect, it } from 'vitest';
import { chargeAmount, checkCharge, type PlanCharge } from '../../src/domain/usage/charge-models.js';

/*
 * The four charge models with worked rupiah figures (the ones docs/usage.md shows), rounding half
 * up to whole rupiah once per charge, fractional units, no usage and negative usage, and the
 * plans file's checks of a charge naming each wrong field.
 */

const charge = (model: PlanCharge['model'], properties: PlanCharge['properties']): PlanCharge => ({ metric: 'api_calls', model, properties });
const tier = (up_to: string | null, unit_amount: string, flat_amount = '0.00') => ({ up_to, unit_amount, flat_amount });

const standard = charge('standard', { unit_amount: '0.15' });
const graduated = charge('graduated', { tiers: [tier('10000', '0'), tier(null, '2')] });
const graduatedFlat = charge('graduated', { tiers: [tier('1000', '0'), tier('5000', '3', '5000.00'), tier(null, '1', '2500.00')] });
const pack = charge('package', { amount: '10000.00', package_size: 1000, free_units: 100 });
const volume = charge('volume', { tiers: [tier('1000', '5'), tier('10000', '3', '10000.00'), tier(null, '1')] });

describe('charge models: what a window of usage costs', () => {
  it('standard: units × unit price, rounded half up to whole rupiah (Rp 0.15 × 12,345 = Rp 1,851.75 → Rp 1,852)', () => {
    expect(chargeAmount(standard, '12345', 'IDR')).toBe('1852.00');
    expect(chargeAmount(standard, '10', 'IDR')).toBe('2.00'); // 1.50 rounds up
    expect(chargeAmount(standard, '9', 'IDR')).toBe('1.00'); // 1.35 rounds down
    expect(chargeAmount(charge('standard', { unit_amount: '1500' }), '3', 'IDR')).toBe('4500.00');
    // A currency with cents keeps two places, half up too.
    expect(chargeAmount(standard, '12345', 'USD')).toBe('1851.75');
    expect(chargeAmount(charge('standard', { unit_amount: '0.001' }), '5', 'USD')).toBe('0.01');
  });

  it('graduated: each tier at its own rate (0–10,000 free, then Rp 2: 12,500 calls = Rp 5,000), a flat amount once a tier holds any unit', () => {
    expect(chargeAmount(graduated, '12500', 'IDR')).toBe('5000.00');
    expect(chargeAmount(graduated, '10000', 'IDR')).toBe('0.00');
    expect(chargeAmount(graduated, '10001', 'IDR')).toBe('2.00');
    // 1,000 free; 4,000 at Rp 3 + Rp 5,000 flat; 2,000 at Rp 1 + Rp 2,500 flat = Rp 21,500.
    expect(chargeAmount(graduatedFlat, '7000', 'IDR')).toBe('21500.00');
    // 1,500: 500 at Rp 3 + the second tier's flat Rp 5,000 = Rp 6,500; the third tier is empty, no flat.
    expect(chargeAmount(graduatedFlat, '1500', 'IDR')).toBe('6500.00');
    expect(chargeAmount(graduatedFlat, '1000', 'IDR')).toBe('0.00');
  });

  it('package: Rp 10,000 per started 1,000 after 100 free (2,350 units = 3 packages = Rp 30,000)', () => {
    expect(chargeAmount(pack, '2350', 'IDR')).toBe('30000.00');
    expect(chargeAmount(pack, '100', 'IDR')).toBe('0.00');
    expect(chargeAmount(pack, '101', 'IDR')).toBe('10000.00');
    expect(chargeAmount(pack, '1100', 'IDR')).toBe('10000.00');
    expect(chargeAmount(pack, '1100.000001', 'IDR')).toBe('20000.00');
  });

  it('volume: every unit at the rate of the tier the total falls in, plus its flat amount', () => {
    // 800 units: all at Rp 5 = Rp 4,000.
    expect(chargeAmount(volume, '800', 'IDR')).toBe('4000.00');
    // 2,500 units: all at Rp 3 = Rp 7,500, plus the tier's flat Rp 10,000 = Rp 17,500.
    expect(chargeAmount(volume, '2500', 'IDR')).toBe('17500.00');
    // 1,000 is the first tier's last unit (inclusive).
    expect(chargeAmount(volume, '1000', 'IDR')).toBe('5000.00');
    // 20,000 units: all at Rp 1 = Rp 20,000 (cheaper than 10,000 units: that is volume pricing).
    expect(chargeAmount(volume, '20000', 'IDR')).toBe('20000.00');
    expect(chargeAmount(volume, '10000', 'IDR')).toBe('40000.00');
  });

  it('fractional units (a sum of gigabytes) are priced exactly and rounded once', () => {
    // 2.5 GB at Rp 1,999.99 = Rp 4,999.975 → Rp 5,000.
    expect(chargeAmount(charge('standard', { unit_amount: '1999.99' }), '2.5', 'IDR')).toBe('5000.00');
    // 0.000001 of a unit at Rp 0.5 is Rp 0.0000005: nothing to charge.
    expect(chargeAmount(charge('standard', { unit_amount: '0.5' }), '0.000001', 'IDR')).toBe('0.00');
    // 10,000.5 calls: 0.5 above the free tier at Rp 2 = Rp 1.
    expect(chargeAmount(graduated, '10000.5', 'IDR')).toBe('1.00');
    // Volume with a fractional total in a tier's range: 1,000.5 falls in the second tier.
    expect(chargeAmount(volume, '1000.5', 'IDR')).toBe('13002.00'); // 1,000.5 × 3 = 3,001.5 + 10,000 → 13,002 (half up)
  });

  it('no usage and negative usage cost nothing under every model (no flat amount for an empty window)', () => {
    for (const c of [standard, graduated, graduatedFlat, pack, volume, charge('volume', { tiers: [tier(null, '1', '5000.00')] })]) {
      for (const units of ['0', '-5', '-0.000001']) expect(chargeAmount(c, units, 'IDR'), `${c.model} ${units}`).toBe('0.00');
    }
  });
});

describe('checkCharge: a charge as the plans file writes it', () => {
  const fields = (value: unknown, currency = 'IDR') => checkCharge(value, currency, '[0].charges[0]').errors.map((e) => e.field);

  it('normalises a valid charge: amounts with two places, numbers as text, package free units defaulting to 0', () => {
    expect(checkCharge({ metric: 'api_calls', model: 'standard', properties: { unit_amount: 0.15 } }, 'IDR', 'x')).toEqual({
      charge: { metric: 'api_calls', model: 'standard', properties: { unit_amount: '0.15' } }, errors: [],
    });
    expect(checkCharge({ metric: 'sms', model: 'package', properties: { amount: 10000, package_size: 1000 } }, 'IDR', 'x').charge).toEqual({
      metric: 'sms', model: 'package', properties: { amount: '10000.00', package_size: 1000, free_units: 0 },
    });
    expect(checkCharge({ metric: 'api_calls', model: 'graduated', properties: { tiers: [{ up_to: 10000, unit_amount: 0 }, { up_to: null, unit_amount: '2', flat_amount: 500 }] } }, 'IDR', 'x').charge).toEqual({
      metric: 'api_calls', model: 'graduated', properties: { tiers: [tier('10000', '0'), tier(null, '2', '500.00')] },
    });
  });

  it('names each wrong field', () => {
    expect(fields('nope')).toEqual(['[0].charges[0]']);
    expect(fields({ model: 'standard', properties: { unit_amount: '1' } })).toEqual(['[0].charges[0].metric']);
    expect(fields({ metric: 'a', model: 'tiered', properties: {} })).toEqual(['[0].charges[0].model']);
    expect(fields({ metric: 'a', model: 'standard', properties: [] })).toContain('[0].charges[0].properties');
    expect(fields({ metric: 'a', model: 'standard', properties: { unit_amount: '-1' } })).toEqual(['[0].charges[0].properties.unit_amount']);
    expect(fields({ metric: 'a', model: 'standard', properties: { unit_amount: '0.1234567' } })).toEqual(['[0].charges[0].properties.unit_amount']);
    expect(fields({ metric: 'a', model: 'package', properties: { amount: '10000.50', package_size: 0, free_units: -1 } })).toEqual([
      '[0].charges[0].properties.amount', '[0].charges[0].properties.package_size', '[0].charges[0].properties.free_units',
    ]);
  });

  it('tiers: 1 to 20, rising up_to, the last without an end, whole-rupiah flat amounts', () => {
    const tiers = (list: unknown) => fields({ metric: 'a', model: 'graduated', properties: { tiers: list } });
    expect(tiers([])).toEqual(['[0].charges[0].properties.tiers']);
    expect(tiers(Array.from({ length: 21 }, (_, i) => ({ up_to: i === 20 ? null : String(i + 1), unit_amount: '1' })))).toEqual(['[0].charges[0].properties.tiers']);
    expect(tiers([{ up_to: '100', unit_amount: '1' }])).toEqual(['[0].charges[0].properties.tiers[0].up_to']);
    expect(tiers([{ up_to: '100', unit_amount: '1' }, { up_to: '100', unit_amount: '1' }, { up_to: null, unit_amount: '1' }])).toEqual(['[0].charges[0].properties.tiers[1].up_to']);
    expect(tiers([{ up_to: 'many', unit_amount: '1' }, { up_to: null, unit_amount: '1' }])).toEqual(['[0].charges[0].properties.tiers[0].up_to']);
    expect(tiers([{ up_to: '100', unit_amount: 'x' }, { up_to: null, unit_amount: '1', flat_amount: '99.50' }])).toEqual([
      '[0].charges[0].properties.tiers[0].unit_amount', '[0].charges[0].properties.tiers[1].flat_amount',
    ]);
    // Cents are fine in a currency that has them.
    expect(fields({ metric: 'a', model: 'volume', properties: { tiers: [{ up_to: null, unit_amount: '1', flat_amount: '99.50' }] } }, 'USD')).toEqual([]);
    expect(tiers(['x', { up_to: null, unit_amount: '1' }])).toEqual(['[0].charges[0].properties.tiers[0]']);
  });
});
