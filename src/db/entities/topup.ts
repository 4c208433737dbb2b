import { EntitySchema } from '@mikro-orm/core';
import { createdAtProperty, idProperty, moneyProperty, updatedAtProperty, zeroMoneyProperty } from './common.js';
import type { PaymentType } from './subscription.js';
import { User } from './user.js';

export type TopupStatus = 'pending' | 'success' | 'failed' | 'expired' | 'reversed' | 'charged_back';

export class Topup {
  id!: string;
  /** TOPUP-<opaque suffix> */
  orderId!: string;
  user!: User;
  amount!: string;
  /**
   * The gateway's total refunded for this top-up (its cumulative refund_amount). Recorded even
   * when the refund's notification overtakes the settlement's, so that the settlement credits
   * only what was not refunded.
   */
  refundedAmount!: string;
  currency!: string;
  status: TopupStatus = 'pending';
  paymentType!: Exclude<PaymentType, 'wallet'>;
  bank: string | null = null;
  paymentDetails: Record<string, unknown> = {};
  transactionId: string | null = null;
  outcomeUnknown = false;
  paidAt: Date | null = null;
  expiresAt: Date | null = null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const TopupSchema = new EntitySchema<Topup>({
  class: Topup,
  tableName: 'topups',
  indexes: [{ properties: ['user', 'createdAt'] }],
  properties: {
    id: idProperty,
    orderId: { type: 'string', length: 50, unique: true },
    user: { kind: 'm:1', entity: () => User },
    amount: moneyProperty,
    refundedAmount: zeroMoneyProperty,
    currency: { type: 'string', length: 3 },
    status: { type: 'string', length: 20 },
    paymentType: { type: 'string', length: 20 },
    bank: { type: 'string', length: 20, nullable: true },
    paymentDetails: { type: 'json' },
    transactionId: { type: 'string', length: 100, nullable: true },
    outcomeUnknown: { type: 'boolean', default: false },
    paidAt: { type: 'Date', nullable: true },
    expiresAt: { type: 'Date', nullable: true },
    createdAt: createdAtProperty,
    updatedAt: updatedAtProperty,
  },
});
