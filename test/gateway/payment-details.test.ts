import { describe, expect, it } from 'vitest';
import { extractPaymentDetails, readExpiryTime } from '../../src/gateway/payment-details.js';
import { parseMidtransTime } from '../../src/gateway/midtrans-time.js';

describe('parseMidtransTime', () => {
  it('reads Core API times as GMT+7', () => {
    expect(parseMidtransTime('2024-05-02 10:00:00')?.toISOString()).toBe('2024-05-02T03:00:00.000Z');
  });

  it('honours an explicit offset or Z', () => {
    expect(parseMidtransTime('2024-06-01 09:00:00 +0700')?.toISOString()).toBe('2024-06-01T02:00:00.000Z');
    expect(parseMidtransTime('2022-10-26T04:20:00.000000Z')?.toISOString()).toBe('2022-10-26T04:20:00.000Z');
  });

  it('crosses midnight backwards into the previous UTC day', () => {
    expect(parseMidtransTime('2024-01-01 03:00:00')?.toISOString()).toBe('2023-12-31T20:00:00.000Z');
  });

  it.each([['2024-02-30 10:00:00'], ['2024-05-02'], ['yesterday'], [''], [null], [12345]])('returns null for %s', (value) => {
    expect(parseMidtransTime(value)).toBeNull();
  });
});

describe('extractPaymentDetails', () => {
  it('takes bank and VA from va_numbers[0] for BCA/BNI/BRI/CIMB', () => {
    expect(
      extractPaymentDetails({ payment_type: 'bank_transfer', va_numbers: [{ bank: 'bni', va_number: '9880000012345678' }], expiry_time: '2024-05-02 10:00:00' }),
    ).toEqual({ bank: 'bni', va_number: '9880000012345678', expiry_time: '2024-05-02T03:00:00.000Z' });
  });

  it('takes permata_va_number for Permata', () => {
    expect(extractPaymentDetails({ payment_type: 'bank_transfer', permata_va_number: '8562000012345678', expiry_time: '2024-05-02 10:00:00' })).toEqual({
      bank: 'permata',
      va_number: '8562000012345678',
      expiry_time: '2024-05-02T03:00:00.000Z',
    });
  });

  it('reports the Mandiri bill as bank mandiri with bill key and biller code', () => {
    expect(extractPaymentDetails({ payment_type: 'echannel', bill_key: '778300012345', biller_code: '70012' })).toEqual({
      bank: 'mandiri',
      bill_key: '778300012345',
      biller_code: '70012',
      expiry_time: null,
    });
  });

  it('finds the QR image and deeplink among GoPay actions', () => {
    const details = extractPaymentDetails({
      payment_type: 'gopay',
      actions: [
        { name: 'generate-qr-code', method: 'GET', url: 'https://x/qr' },
        { name: 'deeplink-redirect', method: 'GET', url: 'gojek://pay' },
        { name: 'cancel', method: 'POST', url: 'https://x/cancel' },
      ],
      expiry_time: '2024-05-01 10:15:00',
    });
    expect(details).toEqual({ qr_code_url: 'https://x/qr', deeplink_url: 'gojek://pay', expiry_time: '2024-05-01T03:15:00.000Z' });
  });

  it('reads the QRIS sample key expire_time too', () => {
    const body = { payment_type: 'qris', actions: [{ name: 'generate-qr-code', url: 'https://x/qr' }], expire_time: '2024-05-01 10:15:00' };
    expect(extractPaymentDetails(body)).toEqual({ qr_code_url: 'https://x/qr', expiry_time: '2024-05-01T03:15:00.000Z' });
    expect(readExpiryTime(body)?.toISOString()).toBe('2024-05-01T03:15:00.000Z');
  });

  it('gives ShopeePay its deeplink', () => {
    expect(extractPaymentDetails({ payment_type: 'shopeepay', actions: [{ name: 'deeplink-redirect', url: 'https://shopee/pay' }] })).toEqual({
      deeplink_url: 'https://shopee/pay',
      expiry_time: null,
    });
  });

  it('gives a card its 3-D Secure redirect and masked number, without expiry', () => {
    expect(
      extractPaymentDetails({ payment_type: 'credit_card', redirect_url: 'https://x/3ds', masked_card: '48111111-1114', expiry_time: '2024-05-01 10:10:00' }),
    ).toEqual({ redirect_url: 'https://x/3ds', masked_card: '48111111-1114' });
  });

  it('tolerates malformed actions and va_numbers', () => {
    expect(extractPaymentDetails({ payment_type: 'gopay', actions: 'nope' })).toEqual({ expiry_time: null });
    expect(extractPaymentDetails({ payment_type: 'bank_transfer', va_numbers: [null] })).toEqual({ expiry_time: null });
  });
});
