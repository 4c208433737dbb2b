/** How a payment type reads to a customer, in receipts and on invoices. */
export const PAYMENT_METHOD_NAMES: Record<string, string> = {
  bank_transfer: 'Bank transfer (virtual account)',
  echannel: 'Mandiri bill payment',
  gopay: 'GoPay',
  qris: 'QRIS',
  shopeepay: 'ShopeePay',
  credit_card: 'Card',
  wallet: 'Wallet balance',
};
