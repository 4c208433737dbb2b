import { describe, expect, it } from 'vitest';
import { SimulatorCore } from '../../src/simulator/core.js';

/*
 * The refund refusals of Midtrans (docs/gateway.md, 'How the simulator behaves') as the simulator answers them (issue 27): the
 * refund windows per payment type counted from the settlement, ShopeePay's full-refund-only
 * rule and, when asked for, its 23:55-06:00 GMT+7 quiet hours. On a clock the test moves.
 */
const DAY = 86_400_000;

function coreAt(start: string, opts: { shopeePayQuietHours?: boolean } = {}) {
  let now = new Date(start);
  const core = new SimulatorCore({
    serverKey: 'SB-Mid-server-test',
    notificationUrl: () => 'http://merchant.invalid/hook',
    publicBaseUrl: () => 'http://sim',
    fetch: (async () => new Response('{}')) as unknown as typeof fetch,
    sweepIntervalMs: 0,
    now: () => now,
    ...opts,
  });
  return { core, advance: (ms: number) => (now = new Date(now.getTime() + ms)), set: (iso: string) => (now = new Date(iso)) };
}

async function settled(core: SimulatorCore, orderId: string, paymentType: string): Promise<void> {
  const extra = paymentType === 'shopeepay' ? { shopeepay: { callback_url: 'https://merchant.example/back' } } : {};
  const answer = core.charge({ payment_type: paymentType, transaction_details: { order_id: orderId, gross_amount: 50000 }, ...extra }, {});
  expect(answer.body['status_code']).toBe('201');
  await core.act(orderId, 'settle', { notify: false });
}

const refund = (core: SimulatorCore, orderId: string, body: Record<string, unknown> = {}) => core.refund(orderId, body, false).body;

describe('the simulator refuses refunds as Midtrans does', () => {
  it('after the refund window of the payment type (GoPay 45 days, ShopeePay 365), counted from the settlement', async () => {
    const { core, advance } = coreAt('2027-01-10T03:00:00Z');
    await settled(core, 'GOPAY-1', 'gopay');
    await settled(core, 'SHOPEE-1', 'shopeepay');
    advance(45 * DAY);
    expect(refund(core, 'GOPAY-1', { amount: 1000, refund_key: 'g-1' })).toMatchObject({ status_code: '200' });
    advance(DAY);
    expect(refund(core, 'GOPAY-1', { amount: 1000, refund_key: 'g-2' })).toMatchObject({ status_code: '412', status_message: expect.stringContaining('45 days') });
    expect(refund(core, 'SHOPEE-1', { refund_key: 's-1' })).toMatchObject({ status_code: '200', transaction_status: 'refund' });
  });

  it('ShopeePay refunds only in full, and with its quiet hours on, not from 23:55 to 06:00 GMT+7', async () => {
    const { core, set } = coreAt('2027-01-10T03:00:00Z', { shopeePayQuietHours: true });
    await settled(core, 'SHOPEE-2', 'shopeepay');
    expect(refund(core, 'SHOPEE-2', { amount: 1000, refund_key: 'p-1' })).toMatchObject({ status_code: '414', status_message: 'ShopeePay supports only full refunds' });
    set('2027-01-10T17:30:00Z'); // 00:30 GMT+7
    expect(refund(core, 'SHOPEE-2', { refund_key: 'p-2' })).toMatchObject({ status_code: '412', status_message: expect.stringContaining('23:55') });
    set('2027-01-10T16:54:00Z'); // 23:54 GMT+7
    expect(refund(core, 'SHOPEE-2', { refund_key: 'p-3' })).toMatchObject({ status_code: '200' });
  });

  it('without the quiet hours (the default), ShopeePay refunds at night too', async () => {
    const { core } = coreAt('2027-01-10T18:00:00Z');
    await settled(core, 'SHOPEE-3', 'shopeepay');
    expect(refund(core, 'SHOPEE-3', { refund_key: 'n-1' })).toMatchObject({ status_code: '200' });
  });
});
