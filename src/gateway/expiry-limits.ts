import type { GatewayPaymentType } from './types.js';

const DAY_MINUTES = 24 * 60;

/**
 * The longest `custom_expiry` Midtrans accepts per payment method (its documented maximums): a charge
 * asking for more is rejected with a validation error. Bank transfer VA and Mandiri bill 180
 * days; GoPay and dynamic QRIS 7 days; ShopeePay 5 days. Cards have no custom_expiry (3-D Secure
 * pages expire on their own), so none is sent.
 */
export const MAX_EXPIRY_MINUTES: Readonly<Record<GatewayPaymentType, number | null>> = {
  bank_transfer: 180 * DAY_MINUTES,
  echannel: 180 * DAY_MINUTES,
  gopay: 7 * DAY_MINUTES,
  qris: 7 * DAY_MINUTES,
  shopeepay: 5 * DAY_MINUTES,
  credit_card: null,
};

/** The expiry to ask for: at most the method's maximum; undefined where the method takes none. */
export function capExpiryMinutes(paymentType: string, wanted: number): number | undefined {
  const max = MAX_EXPIRY_MINUTES[paymentType as GatewayPaymentType];
  if (max === undefined || max === null) return undefined;
  return Math.min(Math.max(1, wanted), max);
}
