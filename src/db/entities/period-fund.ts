import { EntitySchema } from '@mikro-orm/core';
import { createdAtProperty, idProperty, moneyProperty } from './common.js';
import { Payment } from './payment.js';
import { Subscription } from './subscription.js';

/**
 * Money of one payment paying for a span of a subscription's service. A settled payment funds
 * the period it bought; a plan change closes the funds it finds at the change (what was used
 * stays, the unused part is carried into the new period or credited to the wallet) and a refund
 * takes its amount out of the payment's unused funds. The unused share of these rows is the
 * only measure of credit and of what a customer may get back (src/services/subscription-rules/period-funds.ts).
 */
export class PeriodFund {
  id!: string;
  subscription!: Subscription;
  /** Whose money this is: credits and refunds drawn from this row count against that payment. */
  payment!: Payment;
  amount!: string;
  periodStart!: Date;
  periodEnd!: Date;
  createdAt!: Date;
}

export const PeriodFundSchema = new EntitySchema<PeriodFund>({
  class: PeriodFund,
  tableName: 'period_funds',
  indexes: [{ properties: ['subscription', 'periodEnd'] }, { properties: ['payment'] }],
  properties: {
    id: idProperty,
    subscription: { kind: 'm:1', entity: () => Subscription },
    payment: { kind: 'm:1', entity: () => Payment },
    amount: moneyProperty,
    periodStart: { type: 'Date' },
    periodEnd: { type: 'Date' },
    createdAt: createdAtProperty,
  },
});
