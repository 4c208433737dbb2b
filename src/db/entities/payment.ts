import { EntitySchema, type Opt } from '@mikro-orm/core';
import { createdAtProperty, idProperty, moneyProperty, updatedAtProperty, zeroMoneyProperty } from './common.js';
import { Invoice } from './invoice.js';
import { Subscription, type PaymentType } from './subscription.js';
import { User } from './user.js';

export type PaymentStatus = 'pending' | 'settled' | 'failed' | 'canceled' | 'expired' | 'refunded' | 'partially_refunded' | 'reversed' | 'charged_back';

export class Payment {
  id!: Opt<string>;
  /** SUB-<opaque suffix>, at most 50 characters. */
  orderId!: string;
  user!: User;
  subscription: Subscription | null = null;
  invoice: Invoice | null = null;
  status: PaymentStatus = 'pending';
  paymentType!: PaymentType;
  grossAmount!: string;
  currency!: string;
  /** Sum of the payment's succeeded refunds (kept in step by src/services/payments). */
  refundedAmount!: Opt<string>;
  /**
   * Credits granted to the wallet from this payment's unused time (downgrades). With the refunds
   * it bounds what can still be refunded: refundable = gross − refunded − credited.
   */
  creditedAmount!: Opt<string>;
  /**
   * What the customer paid the gateway on top of gross_amount under Midtrans' Automatic Fee
   * Imposition ("0.00" without it). It is the gateway's, never ours: nothing refunds or credits it.
   */
  customerFee!: Opt<string>;
  /** What the cardholder's bank took back by chargeback or partial_chargeback ("0.00" until then). */
  chargebackAmount!: Opt<string>;
  transactionId: string | null = null;
  fraudStatus: string | null = null;
  /** The last transaction_status the gateway reported, verbatim. */
  gatewayStatus: string | null = null;
  paymentDetails: Record<string, unknown> = {};
  /** The charge request timed out: the gateway may or may not have it; reconciliation decides. */
  outcomeUnknown: Opt<boolean> = false;
  /** Why a payment failed when the gateway never said (e.g. `never_reached_gateway`). */
  failureReason: string | null = null;
  /**
   * When we withdrew this pending payment ourselves (its invoice was replaced or ended) and asked
   * the gateway to cancel it. The gateway's `cancel` notification that follows is the echo of
   * that request, never a reversal, even when it arrives after a late settlement.
   */
  cancelRequestedAt: Date | null = null;
  paidAt: Date | null = null;
  /**
   * When the first chargeback (partial or full) of this payment was applied, by the service's
   * clock; `updated_at` moves with every later change, so tax corrections date the chargeback by this.
   */
  chargedBackAt: Date | null = null;
  /** When the gateway reversed this settled payment (`deny`/`cancel` after settlement), by the service's clock. */
  reversedAt: Date | null = null;
  expiresAt: Date | null = null;
  createdAt!: Date;
  updatedAt!: Opt<Date>;
}

export type RefundStatus = 'pending' | 'succeeded' | 'failed';
export type RefundDestination = 'gateway' | 'wallet';
/** `cancel`: a card capture not yet settled is voided at the gateway instead (docs/billing.md, 'Money rules'). */
export type RefundMethod = 'refund' | 'direct_refund' | 'cancel' | 'wallet';

export class Refund {
  id!: Opt<string>;
  payment!: Payment;
  /** Our idempotency key at the gateway; the later refund notification is matched on it. */
  refundKey!: string;
  amount!: string;
  status: Opt<RefundStatus> = 'pending';
  destination!: RefundDestination;
  direct: Opt<boolean> = false;
  method: Opt<RefundMethod> = 'refund';
  reason: string | null = null;
  /** Staff's refund that leaves the subscription running (--keep-subscription), applied when the gateway accepts it. */
  keepSubscription: Opt<boolean> = false;
  /** The gateway's status_code and status_message when it refused the refund. */
  gatewayStatusCode: string | null = null;
  gatewayMessage: string | null = null;
  createdAt!: Date;
}

export const PaymentSchema = new EntitySchema<Payment>({
  class: Payment,
  tableName: 'payments',
  indexes: [{ properties: ['user', 'createdAt'] }, { properties: ['status'] }, { properties: ['invoice'] }],
  properties: {
    id: idProperty,
    orderId: { type: 'string', length: 50, unique: true },
    user: { kind: 'm:1', entity: () => User },
    subscription: { kind: 'm:1', entity: () => Subscription, nullable: true },
    invoice: { kind: 'm:1', entity: () => Invoice, nullable: true },
    status: { type: 'string', length: 20 },
    paymentType: { type: 'string', length: 20 },
    grossAmount: moneyProperty,
    currency: { type: 'string', length: 3 },
    refundedAmount: zeroMoneyProperty,
    creditedAmount: zeroMoneyProperty,
    customerFee: zeroMoneyProperty,
    chargebackAmount: zeroMoneyProperty,
    transactionId: { type: 'string', length: 100, nullable: true },
    fraudStatus: { type: 'string', length: 20, nullable: true },
    gatewayStatus: { type: 'string', length: 30, nullable: true },
    paymentDetails: { type: 'json' },
    outcomeUnknown: { type: 'boolean', default: false },
    failureReason: { type: 'string', length: 50, nullable: true },
    cancelRequestedAt: { type: 'Date', nullable: true },
    paidAt: { type: 'Date', nullable: true },
    chargedBackAt: { type: 'Date', nullable: true },
    reversedAt: { type: 'Date', nullable: true },
    expiresAt: { type: 'Date', nullable: true },
    createdAt: createdAtProperty,
    updatedAt: updatedAtProperty,
  },
});

export const RefundSchema = new EntitySchema<Refund>({
  class: Refund,
  tableName: 'refunds',
  properties: {
    id: idProperty,
    payment: { kind: 'm:1', entity: () => Payment },
    refundKey: { type: 'string', length: 80, unique: true },
    amount: moneyProperty,
    status: { type: 'string', length: 20 },
    destination: { type: 'string', length: 10 },
    direct: { type: 'boolean', default: false },
    method: { type: 'string', length: 20, default: 'refund' },
    reason: { type: 'string', length: 255, nullable: true },
    keepSubscription: { type: 'boolean', default: false },
    gatewayStatusCode: { type: 'string', length: 10, nullable: true },
    gatewayMessage: { type: 'string', length: 255, nullable: true },
    createdAt: createdAtProperty,
  },
});
