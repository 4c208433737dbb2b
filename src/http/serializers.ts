import type { CreditNote } from '../db/entities/credit-note.js';
import { completeTaxProfile } from '../domain/tax-profile.js';
import type { Invoice, InvoiceLine } from '../db/entities/invoice.js';
import type { Notification } from '../db/entities/notification.js';
import type { Payment, Refund } from '../db/entities/payment.js';
import type { Plan } from '../db/entities/plan.js';
import type { Subscription, SubscriptionDiscount } from '../db/entities/subscription.js';
import type { Topup } from '../db/entities/topup.js';
import type { User } from '../db/entities/user.js';
import type { Wallet, WalletTransaction } from '../db/entities/wallet.js';
import type { WebhookLog } from '../db/entities/webhook-log.js';
import type { Schemas } from './operations.js';
import { subtract } from '../domain/money.js';
import { serializeInvoiceCreditNote } from './credit-note-serializers.js';
import type { Config } from '../config.js';
import { invoicePageUrl } from '../services/hosted/invoice-links.js';

/**
 * The wire shape of every resource, in one place: the API and `billing-admin --json` print
 * the same field names.
 */

/** What a relation contributes to a wire shape: its id (an entity reference or a row's column). */
type Ref = { id: string };

/**
 * The fields each hot-path serialiser reads. Entities satisfy them as they are; rows read by
 * fixed SQL are turned into them by src/db/row-fields.ts. So each resource has one mapping to
 * the wire, whichever way it was read.
 */
export type UserFields = Pick<User, 'id' | 'username' | 'email' | 'firstName' | 'lastName' | 'isStaff' | 'createdAt'>;
export const USER_FIELDS = ['id', 'username', 'email', 'firstName', 'lastName', 'isStaff', 'createdAt'] as const satisfies readonly (keyof UserFields)[];

export type PlanSummaryFields = Pick<Plan, 'id' | 'name' | 'slug' | 'price' | 'currency' | 'interval' | 'intervalUnit'>;
export const PLAN_SUMMARY_FIELDS = ['id', 'name', 'slug', 'price', 'currency', 'interval', 'intervalUnit'] as const satisfies readonly (keyof PlanSummaryFields)[];

type SubscriptionScalars =
  | 'id' | 'status' | 'paymentType' | 'currentPeriodStart' | 'currentPeriodEnd' | 'nextBillingDate' | 'trialEnd' | 'cancelAtPeriodEnd'
  | 'canceledAt' | 'cancelReason' | 'pausedAt' | 'pendingChange' | 'cyclesCompleted' | 'quantity' | 'pendingQuantity' | 'discount' | 'lastRenewalFailure' | 'metadata' | 'createdAt' | 'updatedAt';
export type SubscriptionFields = Pick<Subscription, SubscriptionScalars> & {
  user: Ref;
  plan: PlanSummaryFields;
  pendingPlan: PlanSummaryFields | null;
  pendingChangePlan: PlanSummaryFields | null;
};
/** The subscription's own columns; its plans are read by PLAN_SUMMARY_FIELDS. */
export const SUBSCRIPTION_FIELDS = [
  'id', 'user', 'status', 'paymentType', 'currentPeriodStart', 'currentPeriodEnd', 'nextBillingDate', 'trialEnd', 'cancelAtPeriodEnd',
  'canceledAt', 'cancelReason', 'pausedAt', 'pendingChange', 'cyclesCompleted', 'quantity', 'pendingQuantity', 'discount', 'lastRenewalFailure', 'metadata', 'createdAt', 'updatedAt',
] as const satisfies readonly (keyof SubscriptionFields)[];

type PaymentScalars =
  | 'id' | 'orderId' | 'status' | 'paymentType' | 'grossAmount' | 'currency' | 'refundedAmount' | 'creditedAmount' | 'customerFee' | 'chargebackAmount' | 'transactionId'
  | 'fraudStatus' | 'outcomeUnknown' | 'failureReason' | 'paymentDetails' | 'paidAt' | 'expiresAt' | 'createdAt' | 'updatedAt';
export type PaymentFields = Pick<Payment, PaymentScalars> & { subscription: Ref | null; invoice: Ref | null };
export const PAYMENT_FIELDS = [
  'id', 'orderId', 'subscription', 'invoice', 'status', 'paymentType', 'grossAmount', 'currency', 'refundedAmount', 'creditedAmount',
  'customerFee', 'chargebackAmount', 'transactionId', 'fraudStatus', 'outcomeUnknown', 'failureReason', 'paymentDetails', 'paidAt', 'expiresAt', 'createdAt', 'updatedAt',
] as const satisfies readonly (keyof PaymentFields)[];

const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
const isoRequired = (d: Date): string => d.toISOString();

export function serializeUser(u: UserFields): Schemas['User'] {
  return {
    id: u.id,
    username: u.username,
    email: u.email,
    first_name: u.firstName,
    last_name: u.lastName,
    is_staff: u.isStaff,
    created_at: isoRequired(u.createdAt),
  };
}

export function serializePlan(p: Plan): Schemas['Plan'] {
  return {
    id: p.id,
    name: p.name,
    slug: p.slug,
    description: p.description,
    price: p.price,
    currency: p.currency,
    interval: p.interval,
    interval_unit: p.intervalUnit,
    trial_period_days: p.trialPeriodDays,
    max_cycles: p.maxCycles,
    status: p.status,
    features: p.features,
    sort_order: p.sortOrder,
    tax_behavior: p.taxBehavior,
    per_unit: p.perUnit,
    charges: (p.charges ?? []).map((c) => ({ metric: c.metric, metric_name: c.metric_name ?? c.metric, model: c.model, properties: c.properties })),
    created_at: isoRequired(p.createdAt),
    updated_at: isoRequired(p.updatedAt),
  };
}

export function serializePlanSummary(p: PlanSummaryFields): Schemas['PlanSummary'] {
  return {
    id: p.id,
    name: p.name,
    slug: p.slug,
    price: p.price,
    currency: p.currency,
    interval: p.interval,
    interval_unit: p.intervalUnit,
  };
}

export function serializeSubscription(s: SubscriptionFields): Schemas['Subscription'] {
  return {
    id: s.id,
    user_id: s.user.id,
    plan: serializePlanSummary(s.plan),
    status: s.status,
    payment_type: s.paymentType,
    current_period_start: iso(s.currentPeriodStart),
    current_period_end: iso(s.currentPeriodEnd),
    next_billing_date: iso(s.nextBillingDate),
    trial_end: iso(s.trialEnd),
    cancel_at_period_end: s.cancelAtPeriodEnd,
    canceled_at: iso(s.canceledAt),
    cancel_reason: s.cancelReason,
    paused_at: iso(s.pausedAt),
    pending_plan: s.pendingPlan ? serializePlanSummary(s.pendingPlan) : null,
    pending_change:
      s.pendingChange && s.pendingChangePlan
        ? {
            plan: serializePlanSummary(s.pendingChangePlan),
            payment_id: s.pendingChange.payment_id,
            effective: 'immediate',
            requested_at: s.pendingChange.requested_at,
            period_start: s.pendingChange.period_start,
            period_end: s.pendingChange.period_end,
            credit: s.pendingChange.credit,
            amount_due: subtract(s.pendingChange.charge, s.pendingChange.credit),
            // A change of units (and a change asked for before changes kept their own) leaves the discount as it is.
            discount: serializeDiscount(s.pendingChange.discount === undefined ? s.discount : s.pendingChange.discount),
          }
        : null,
    cycles_completed: s.cyclesCompleted,
    quantity: s.quantity,
    pending_quantity: s.pendingQuantity,
    discount: serializeDiscount(s.discount),
    last_renewal_failure: s.lastRenewalFailure ? { at: s.lastRenewalFailure.at, code: s.lastRenewalFailure.code, message: s.lastRenewalFailure.message } : null,
    metadata: s.metadata,
    created_at: isoRequired(s.createdAt),
    updated_at: isoRequired(s.updatedAt),
  };
}

function serializeDiscount(d: SubscriptionDiscount | null): Schemas['SubscriptionDiscount'] | null {
  if (!d) return null;
  return {
    coupon: d.coupon,
    promotion_code: d.promotion_code,
    percent_off: d.percent_off,
    amount_off: d.amount_off,
    currency: d.currency,
    duration: d.duration,
    starts_at: d.starts_at,
    ends_at: d.ends_at,
    cycles_left: d.cycles_left,
  };
}

export function serializePayment(p: PaymentFields): Schemas['Payment'] {
  return {
    id: p.id,
    order_id: p.orderId,
    subscription_id: p.subscription?.id ?? null,
    invoice_id: p.invoice?.id ?? null,
    status: p.status,
    payment_type: p.paymentType,
    gross_amount: p.grossAmount,
    currency: p.currency,
    refunded_amount: p.refundedAmount,
    credited_amount: p.creditedAmount,
    customer_fee: p.customerFee,
    chargeback_amount: p.chargebackAmount,
    outcome_unknown: p.outcomeUnknown,
    transaction_id: p.transactionId,
    fraud_status: p.fraudStatus,
    failure_reason: p.failureReason,
    payment_details: p.paymentDetails as Schemas['PaymentDetails'],
    paid_at: iso(p.paidAt),
    expires_at: iso(p.expiresAt),
    created_at: isoRequired(p.createdAt),
    updated_at: isoRequired(p.updatedAt),
  };
}

export function serializeRefund(r: Refund) {
  return {
    refund_key: r.refundKey,
    amount: r.amount,
    status: r.status,
    gateway_status_code: r.gatewayStatusCode,
    gateway_message: r.gatewayMessage,
    destination: r.destination,
    method: r.method,
  };
}

/** `config` makes the invoice's hosted page link (hosted_url), on PUBLIC_URL. */
export function serializeInvoice(i: Invoice, config: Config): Schemas['Invoice'] {
  return {
    id: i.id,
    number: i.number,
    subscription_id: i.subscription?.id ?? null,
    status: i.status,
    currency: i.currency,
    issue_date: i.issueDate,
    due_date: i.dueDate,
    paid_at: iso(i.paidAt),
    subtotal: i.subtotal,
    discount_amount: i.discountAmount,
    total_amount: i.totalAmount,
    amount_refunded: i.amountRefunded,
    tax_behavior: i.taxBehavior,
    tax_rate: i.taxRate,
    tax_base: i.taxBase,
    other_tax_base: i.otherTaxBase,
    tax_amount: i.taxAmount,
    tax_rounding: i.taxRounding,
    tax_invoice_number: i.taxInvoiceNumber,
    tax_exported_at: iso(i.taxExportedAt),
    hosted_url: i.subscription ? invoicePageUrl(config, i.id) : null,
    created_at: isoRequired(i.createdAt),
  };
}

export function serializeInvoiceLine(l: InvoiceLine): Schemas['InvoiceLine'] {
  return {
    description: l.description,
    kind: l.kind,
    quantity: l.quantity,
    unit_amount: l.unitAmount,
    amount: l.amount,
    discount_amount: l.discountAmount,
    period_start: iso(l.periodStart),
    period_end: iso(l.periodEnd),
    usage: usageOfLine(l),
  };
}

/** What a `usage` line counted, kept in its subject when it was billed (services/usage). */
function usageOfLine(l: InvoiceLine): Schemas['InvoiceLineUsage'] | null {
  const s = l.subject;
  if (l.kind !== 'usage' || !s || s.type !== 'usage') return null;
  return {
    metric: String(s.metric),
    metric_name: String(s.metric_name),
    aggregation: s.aggregation as Schemas['InvoiceLineUsage']['aggregation'],
    model: s.model as Schemas['InvoiceLineUsage']['model'],
    units: String(s.units),
  };
}

/** The detail view: the invoice, its lines (which must be loaded) and its credit notes. */
export function serializeInvoiceDetail(i: Invoice, creditNotes: CreditNote[], config: Config): Schemas['InvoiceDetail'] {
  return {
    ...serializeInvoice(i, config),
    buyer_tax_profile: completeTaxProfile(i.buyerTaxProfile),
    lines: i.lines.getItems().map(serializeInvoiceLine),
    credit_notes: creditNotes.map(serializeInvoiceCreditNote),
  };
}

export function serializeNotification(n: Notification): Schemas['Notification'] {
  return {
    id: n.id,
    notification_type: n.notificationType,
    channel: n.channel,
    status: n.status,
    title: n.title,
    message: n.message,
    data: n.data,
    created_at: isoRequired(n.createdAt),
    read_at: iso(n.readAt),
  };
}

export function serializeWallet(w: Wallet): Schemas['Wallet'] {
  return {
    id: w.id,
    balance: w.balance,
    currency: w.currency,
    is_active: w.isActive,
    created_at: isoRequired(w.createdAt),
    updated_at: isoRequired(w.updatedAt),
  };
}

export function serializeWalletTransaction(t: WalletTransaction): Schemas['WalletTransaction'] {
  return {
    id: t.id,
    kind: t.kind,
    amount: t.amount,
    balance_after: t.balanceAfter,
    source: t.source,
    reference_id: t.referenceId,
    description: t.description,
    created_at: isoRequired(t.createdAt),
  };
}

export function serializeTopup(t: Topup): Schemas['Topup'] {
  return {
    id: t.id,
    order_id: t.orderId,
    amount: t.amount,
    currency: t.currency,
    status: t.status,
    payment_type: t.paymentType,
    payment_details: t.paymentDetails as Schemas['PaymentDetails'],
    paid_at: iso(t.paidAt),
    expires_at: iso(t.expiresAt),
    created_at: isoRequired(t.createdAt),
  };
}

/** Webhook logs are not an API resource; this is the CLI's `--json` shape. */
export function serializeWebhookLog(l: WebhookLog) {
  return {
    id: l.id,
    order_id: l.orderId,
    transaction_status: l.transactionStatus,
    payload: l.payload,
    payload_sha256: l.payloadSha256,
    payload_truncated: l.payloadTruncated,
    ip_address: l.ipAddress,
    status: l.status,
    error: l.error,
    attempts: l.attempts,
    source: l.source,
    processed_at: iso(l.processedAt),
    created_at: isoRequired(l.createdAt),
  };
}
