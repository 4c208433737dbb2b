import type { PaymentType } from '../../db/entities/subscription.js';

/** Currencies the gateway (Midtrans) charges; other currencies can only be paid from a wallet. */
export const GATEWAY_CURRENCIES: readonly string[] = ['IDR'];

/** Payment types the gateway cannot refund: they are refunded to the user's wallet. */
export const WALLET_REFUNDED_TYPES: readonly PaymentType[] = ['wallet', 'bank_transfer', 'echannel'];
