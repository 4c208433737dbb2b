import { describe, expect, it } from 'vitest';
import { payableMinutes } from '../../src/services/billing/collect-renewal.js';

const DAY = 24 * 60 * 60 * 1000;
const at = new Date('2027-01-01T00:00:00.000Z');

describe('renewal custom_expiry per payment method (Midtrans\' documented maximums)', () => {
  it('asks for the time until the next dunning step when the method allows it', () => {
    expect(payableMinutes({ paymentType: 'gopay' }, at, new Date(at.getTime() + 3 * DAY))).toBe(3 * 24 * 60);
    expect(payableMinutes({ paymentType: 'bank_transfer' }, at, new Date(at.getTime() + 30 * DAY))).toBe(30 * 24 * 60);
  });

  it('caps a long gap at the method maximum: ShopeePay 5 days, GoPay and QRIS 7, bank transfer and Mandiri bill 180', () => {
    const far = new Date(at.getTime() + 400 * DAY);
    expect(payableMinutes({ paymentType: 'shopeepay' }, at, far)).toBe(5 * 24 * 60);
    expect(payableMinutes({ paymentType: 'gopay' }, at, far)).toBe(7 * 24 * 60);
    expect(payableMinutes({ paymentType: 'qris' }, at, far)).toBe(7 * 24 * 60);
    expect(payableMinutes({ paymentType: 'bank_transfer' }, at, far)).toBe(180 * 24 * 60);
    expect(payableMinutes({ paymentType: 'echannel' }, at, far)).toBe(180 * 24 * 60);
  });

  it('sends none for cards and wallets, and at least one minute otherwise', () => {
    expect(payableMinutes({ paymentType: 'credit_card' }, at, new Date(at.getTime() + DAY))).toBeUndefined();
    expect(payableMinutes({ paymentType: 'wallet' }, at, new Date(at.getTime() + DAY))).toBeUndefined();
    expect(payableMinutes({ paymentType: 'qris' }, at, at)).toBe(1);
  });
});
