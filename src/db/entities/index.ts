export * from './user.js';
export * from './plan.js';
export * from './subscription.js';
export * from './invoice.js';
export * from './payment.js';
export * from './wallet.js';
export * from './topup.js';
export * from './notification.js';
export * from './webhook-log.js';
export * from './infrastructure.js';
export * from './period-fund.js';
export * from './trial-grant.js';
export * from './credit-note.js';
export * from './access-version.js';
export * from './api-key.js';
export * from './audit-event.js';
export * from './hosted-session.js';
export * from './coupon.js';
export * from './billable-metric.js';

import { AccessVersionSchema } from './access-version.js';
import { ApiKeySchema } from './api-key.js';
import { BillableMetricSchema } from './billable-metric.js';
import { AuditEventSchema } from './audit-event.js';
import { CreditNoteLineSchema, CreditNoteSchema } from './credit-note.js';
import { DeliveryAttemptSchema } from './delivery-attempt.js';
import { HostedSessionSchema } from './hosted-session.js';
import { CouponRedemptionSchema, CouponSchema, PromotionCodeSchema } from './coupon.js';
import { CounterSchema, InvoiceLineSchema, InvoiceSchema } from './invoice.js';
import { IdempotencyRecordSchema, LoginThrottleSchema, SessionSchema } from './infrastructure.js';
import { NotificationSchema } from './notification.js';
import { PaymentSchema, RefundSchema } from './payment.js';
import { PeriodFundSchema } from './period-fund.js';
import { PlanSchema } from './plan.js';
import { SubscriptionSchema } from './subscription.js';
import { TopupSchema } from './topup.js';
import { TrialGrantSchema } from './trial-grant.js';
import { UserSchema } from './user.js';
import { WalletSchema, WalletTransactionSchema } from './wallet.js';
import { WebhookLogSchema } from './webhook-log.js';

export const allEntities = [
  UserSchema,
  PlanSchema,
  SubscriptionSchema,
  InvoiceSchema,
  InvoiceLineSchema,
  CounterSchema,
  CreditNoteSchema,
  CreditNoteLineSchema,
  PaymentSchema,
  RefundSchema,
  PeriodFundSchema,
  TrialGrantSchema,
  WalletSchema,
  WalletTransactionSchema,
  TopupSchema,
  NotificationSchema,
  DeliveryAttemptSchema,
  WebhookLogSchema,
  IdempotencyRecordSchema,
  SessionSchema,
  LoginThrottleSchema,
  AccessVersionSchema,
  ApiKeySchema,
  AuditEventSchema,
  HostedSessionSchema,
  CouponSchema,
  PromotionCodeSchema,
  CouponRedemptionSchema,
  BillableMetricSchema,
];
