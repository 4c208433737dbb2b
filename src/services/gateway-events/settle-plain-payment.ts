import { randomUUID } from 'node:crypto';
import type { RequiredEntityData } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { fromColumn, insertRows, pgInsertStatement } from '../../db/bulk-sql.js';
import { isPostgres } from '../../db/dialect.js';
import { Invoice } from '../../db/entities/invoice.js';
import { Notification } from '../../db/entities/notification.js';
import { Payment } from '../../db/entities/payment.js';
import { PeriodFund } from '../../db/entities/period-fund.js';
import type { Plan } from '../../db/entities/plan.js';
import { Subscription } from '../../db/entities/subscription.js';
import { hotRows } from '../../db/hot-sql.js';
import { compare, isDecimalText, isZero } from '../../domain/money.js';
import { invoiceStates } from '../../domain/states/invoice-states.js';
import { paymentStates } from '../../domain/states/payment-states.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';
import { SUBSCRIPTION_ORDER_PREFIX } from '../payments/order-id.js';
import { notificationInserts } from '../notifications/notify.js';
import { paymentData, subscriptionData } from '../notifications/payloads.js';
import { firstPeriodOf, whatSettlementBuys, type SettlementPurchase } from './settlement-purchase.js';
import type { EventOutcome } from './event-outcome.js';
import { isSuccess, type GatewayEvent } from './gateway-event.js';
import { savedCardOf } from './saved-card.js';

/*
 * The webhook's common case with set-based statements: a pending first or renewal payment of a
 * live subscription settles in full, nothing refunded, credited or changing plan, no card to
 * save. applyToPayment would load the subscription and the payment as entities and let the unit
 * of work find what changed; here two plain SELECTs read what the rules need (subscription,
 * then payment, locked in the one lock order) and four statements write the same rows: the
 * payment, its invoice and its subscription updated, the period fund and the notifications
 * inserted. The rules are the same functions applyToPayment uses (the state machines,
 * periodBought, unusableBecause, the notification rows and payloads), applied to the rows.
 *
 * Anything else (a settlement after a failure, refunds that overtook it, a plan change, a
 * canceled subscription, an amount that does not match, a card to save…) returns null before
 * writing anything, and the caller applies the event through applyToPayment, in the same
 * transaction. Only for a transaction whose entity manager holds none of these entities (the
 * notification pipeline's own): a row written here would not be seen by an entity loaded before.
 */

type Row = Record<string, unknown>;

interface Locked {
  sub: Pick<Subscription, 'id' | 'status' | 'liveUserId' | 'cancelReason' | 'billingAnchor' | 'currentPeriodEnd' | 'trialEnd'> & {
    user: { id: string; email: string | null };
    plan: Pick<Plan, 'name' | 'slug' | 'interval' | 'intervalUnit'>;
  };
  payment: Pick<
    Payment,
    'id' | 'orderId' | 'status' | 'paymentType' | 'grossAmount' | 'currency' | 'refundedAmount' | 'creditedAmount' | 'transactionId' | 'fraudStatus' | 'paymentDetails' | 'paidAt' | 'createdAt'
  >;
  invoice: Pick<Invoice, 'id' | 'number' | 'status' | 'billingReason' | 'periodStart' | 'periodEnd' | 'paidAt'>;
}

const read = <T>(em: EntityManager, entity: Parameters<typeof fromColumn>[1], property: string, value: unknown) => fromColumn(em, entity, property, value) as T;

/** The payment of the order with its subscription, invoice, plan and user; subscription and payment locked. Null without a subscription or an invoice. */
async function lockRows(em: EntityManager, orderId: string): Promise<Locked | null> {
  // NOTE: FOR UPDATE OF the locked table alone, as lockSubscriptionThenPayment (the plan row is
  // shared); the payment's subscription is found without a lock and locked first.
  const lock = (alias: string) => (isPostgres(em) ? ` for update of ${alias}` : '');
  const [s] = await hotRows<Row>(
    em,
    `select s.id, s.status, s.live_user_id, s.cancel_reason, s.billing_anchor, s.current_period_end, s.trial_end, s.user_id, u.email,
            pl.name as plan_name, pl.slug as plan_slug, pl.interval as plan_interval, pl.interval_unit as plan_interval_unit
       from subscriptions s join users u on u.id = s.user_id join plans pl on pl.id = s.plan_id
      where s.id = (select subscription_id from payments where order_id = ?)${lock('s')}`,
    [orderId],
    { prepare: true },
  );
  if (!s) return null;
  const [p] = await hotRows<Row>(
    em,
    `select p.id, p.order_id, p.status, p.payment_type, p.gross_amount, p.currency, p.refunded_amount, p.credited_amount, p.transaction_id,
            p.fraud_status, p.payment_details, p.paid_at, p.created_at, p.subscription_id, i.id as invoice_id, i.number as invoice_number,
            i.status as invoice_status, i.billing_reason, i.period_start, i.period_end, i.paid_at as invoice_paid_at
       from payments p join invoices i on i.id = p.invoice_id
      where p.order_id = ?${lock('p')}`,
    [orderId],
    { prepare: true },
  );
  // A payment never changes subscription; anything odd is the general path's to judge.
  if (!p || p.subscription_id !== s.id) return null;
  const date = (entity: Parameters<typeof fromColumn>[1], property: string, value: unknown) => read<Date | null>(em, entity, property, value);
  return {
    sub: {
      id: String(s.id),
      status: s.status as Subscription['status'],
      liveUserId: (s.live_user_id as string | null) ?? null,
      cancelReason: (s.cancel_reason as string | null) ?? null,
      billingAnchor: date(Subscription, 'billingAnchor', s.billing_anchor),
      currentPeriodEnd: date(Subscription, 'currentPeriodEnd', s.current_period_end),
      trialEnd: date(Subscription, 'trialEnd', s.trial_end),
      user: { id: String(s.user_id), email: (s.email as string | null) ?? null },
      plan: {
        name: String(s.plan_name),
        slug: String(s.plan_slug),
        interval: Number(s.plan_interval),
        intervalUnit: s.plan_interval_unit as Plan['intervalUnit'],
      },
    },
    payment: {
      id: String(p.id),
      orderId: String(p.order_id),
      status: p.status as Payment['status'],
      paymentType: p.payment_type as Payment['paymentType'],
      grossAmount: read<string>(em, Payment, 'grossAmount', p.gross_amount),
      currency: String(p.currency),
      refundedAmount: read<string>(em, Payment, 'refundedAmount', p.refunded_amount),
      creditedAmount: read<string>(em, Payment, 'creditedAmount', p.credited_amount),
      transactionId: (p.transaction_id as string | null) ?? null,
      fraudStatus: (p.fraud_status as string | null) ?? null,
      paymentDetails: read<Record<string, unknown>>(em, Payment, 'paymentDetails', p.payment_details) ?? {},
      paidAt: date(Payment, 'paidAt', p.paid_at),
      createdAt: date(Payment, 'createdAt', p.created_at) as Date,
    },
    invoice: {
      id: String(p.invoice_id),
      number: String(p.invoice_number),
      status: p.invoice_status as Invoice['status'],
      billingReason: p.billing_reason as Invoice['billingReason'],
      periodStart: date(Invoice, 'periodStart', p.period_start),
      periodEnd: date(Invoice, 'periodEnd', p.period_end),
      paidAt: date(Invoice, 'paidAt', p.invoice_paid_at),
    },
  };
}

/*
 * The three single-row UPDATEs as fixed texts, prepared once per connection (PostgreSQL too:
 * `returning id` gives hotRows rows to count). Their values need no conversion by entity type
 * (statuses, ids, dates, a boolean: hot-sql binds dates and booleans as each database stores them).
 */
const UPDATE_PAYMENT =
  'update payments set status = ?, paid_at = ?, transaction_id = ?, gateway_status = ?, fraud_status = ?, outcome_unknown = ?, updated_at = ? where id = ? returning id';
const UPDATE_INVOICE = 'update invoices set status = ?, paid_at = ?, period_start = ?, period_end = ?, updated_at = ? where id = ? returning id';
const subscriptionUpdate = (clearFailure: boolean) =>
  'update subscriptions set status = ?, live_user_id = ?, cancel_reason = ?, billing_anchor = ?, current_period_start = ?, current_period_end = ?, next_billing_date = ?, ' +
  `cycles_completed = cycles_completed + 1, ${clearFailure ? 'last_renewal_failure = null, ' : ''}updated_at = ? where id = ? returning id`;
const UPDATE_SUBSCRIPTION = subscriptionUpdate(false);
const UPDATE_SUBSCRIPTION_CLEARING_FAILURE = subscriptionUpdate(true);

/** Runs one of the UPDATEs above; fails unless its row was there. */
async function updateOne(em: EntityManager, sql: string, params: unknown[]): Promise<void> {
  const rows = await hotRows(em, sql, params, { prepare: true });
  if (rows.length !== 1) throw new Error(`${sql.split(' ')[1]}: ${rows.length} of 1 rows updated`);
}

type ServicePurchase = Extract<SettlementPurchase, { kind: 'service' }>;

/**
 * What the settlement buys, when it is applyToPayment's plain case (nothing but pay, fund, and
 * activate or renew with a period that moves forward); null otherwise.
 */
function plainPurchase(event: GatewayEvent, { sub, payment, invoice }: Locked, at: Date): (ServicePurchase & { period: NonNullable<ServicePurchase['period']> }) | null {
  if (!isSuccess(event)) return null;
  // A mismatching amount fails in applyToPayment, with its message.
  if (event.grossAmount !== null && !(isDecimalText(event.grossAmount) && compare(event.grossAmount, payment.grossAmount) === 0)) return null;
  // A card announced by a verified answer is stored by saveCardFromVerifiedEvent.
  if (event.verified && savedCardOf(event.raw) !== null) return null;
  const plain =
    payment.status === 'pending' &&
    isZero(payment.refundedAmount) &&
    isZero(payment.creditedAmount) &&
    invoiceStates.can(invoice as Invoice, 'pay') &&
    (invoice.billingReason === 'subscription_create' || invoice.billingReason === 'subscription_cycle');
  if (!plain) return null;
  const purchase = whatSettlementBuys({ subscription: sub, invoice, payment }, at);
  return purchase.kind === 'service' && purchase.advances && purchase.period ? { ...purchase, period: purchase.period } : null;
}

/** Whether settlePlainPayment could apply to the event at all, before it reads anything. */
export function mayBePlain(event: GatewayEvent): boolean {
  return isSuccess(event) && event.orderId.startsWith(SUBSCRIPTION_ORDER_PREFIX);
}

/**
 * Settles a plain subscription payment with set-based statements; returns what changed, or
 * null (nothing written) when the event or the rows are not the plain case. Must run inside the
 * caller's transaction, before anything else touches these rows.
 */
export async function settlePlainPayment(ctx: DataContext, event: GatewayEvent): Promise<EventOutcome | null> {
  if (!mayBePlain(event)) return null;
  const em = ctx.em;
  const rows = await lockRows(em, event.orderId);
  const at = ctx.clock.now();
  const purchase = rows ? plainPurchase(event, rows, at) : null;
  if (!rows || !purchase) return null;
  const { sub, payment, invoice } = rows;
  const { period, move } = purchase;
  const changes = ['payment settled'];

  paymentStates.apply(payment as Payment, 'settle', at);
  invoiceStates.apply(invoice as Invoice, 'pay', at);
  changes.push(`invoice ${invoice.number} paid`);
  const wasStatus = sub.status;
  const renewed = { ...sub, user: sub.user as Subscription['user'], currentPeriodEnd: period.end } as unknown as Subscription;
  const notifications: RequiredEntityData<Notification>[] = notificationInserts(ctx, sub.user, 'payment_succeeded', paymentData(payment));
  if (move === 'activate') {
    subscriptionStates.apply(renewed, 'activate', at);
    renewed.cancelReason = null;
    notifications.push(...notificationInserts(ctx, sub.user, 'subscription_activated', subscriptionData(renewed)));
    changes.push(`subscription ${wasStatus} -> active`);
  } else if (move === 'renew') {
    notifications.push(...notificationInserts(ctx, sub.user, 'subscription_renewed', subscriptionData(renewed)));
    changes.push('subscription renewed');
  }

  const now = new Date();
  const invoicePeriod = period.anchors ? firstPeriodOf(period) : invoice;
  const updates: Write[] = [
    { sql: UPDATE_PAYMENT, params: [payment.status, payment.paidAt, payment.transactionId ?? event.transactionId, event.transactionStatus, event.fraudStatus ?? payment.fraudStatus, false, now, payment.id] },
    { sql: UPDATE_INVOICE, params: [invoice.status, invoice.paidAt, invoicePeriod.periodStart, invoicePeriod.periodEnd, now, invoice.id] },
    {
      // A paid renewal: its last failure no longer stands (whatSettlementBuys, paysRenewal).
      sql: purchase.paysRenewal ? UPDATE_SUBSCRIPTION_CLEARING_FAILURE : UPDATE_SUBSCRIPTION,
      params: [renewed.status, renewed.liveUserId, renewed.cancelReason, period.anchors ? period.start : sub.billingAnchor, period.start, period.end, period.end, now, sub.id],
    },
  ];
  const fund = { id: randomUUID(), subscription: sub.id, payment: payment.id, amount: payment.grossAmount, periodStart: period.start, periodEnd: period.end, createdAt: at } as RequiredEntityData<PeriodFund>;
  if (isPostgres(em)) {
    await writeInOneStatement(em, updates, [pgInsertStatement(em, PeriodFund, [fund]), pgInsertStatement(em, Notification, notifications)]);
    return { changes };
  }
  for (const update of updates) await updateOne(em, update.sql, update.params);
  await insertRows(em, PeriodFund, [fund]);
  await insertRows(em, Notification, notifications);
  return { changes };
}

type Write = { sql: string; params: unknown[] };

/**
 * PostgreSQL: the UPDATEs and INSERTs as one statement (each in a WITH of its own), one round
 * trip instead of five. Each UPDATE must find its row, as updateOne checks. All of them run, to
 * completion, on the statement's one snapshot: none reads what another writes (the INSERTs
 * refer to the payment and subscription by id only).
 */
async function writeInOneStatement(em: EntityManager, updates: Write[], inserts: Write[]): Promise<void> {
  const withs = [...updates.map((u, i) => `u${i} as (${u.sql})`), ...inserts.map((w, i) => `i${i} as (${w.sql})`)];
  const counts = updates.map((_, i) => `(select count(*) from u${i}) as u${i}`).join(', ');
  const [row] = await hotRows<Record<string, unknown>>(em, `with ${withs.join(', ')} select ${counts}`, [...updates, ...inserts].flatMap((w) => w.params), { prepare: true });
  updates.forEach((u, i) => {
    const n = Number(row[`u${i}`]);
    if (n !== 1) throw new Error(`${u.sql.split(' ')[1]}: ${n} of 1 rows updated`);
  });
}
