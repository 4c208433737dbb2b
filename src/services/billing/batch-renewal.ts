import { randomUUID } from 'node:crypto';
import type { RequiredEntityData } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { isPostgres } from '../../db/dialect.js';
import { Invoice, InvoiceLine } from '../../db/entities/invoice.js';
import { Notification } from '../../db/entities/notification.js';
import { Payment } from '../../db/entities/payment.js';
import { PeriodFund } from '../../db/entities/period-fund.js';
import { Plan } from '../../db/entities/plan.js';
import { Subscription } from '../../db/entities/subscription.js';
import { User } from '../../db/entities/user.js';
import { localDate } from '../../domain/billing-calendar.js';
import { isPositive, money, ZERO } from '../../domain/money.js';
import type { DataContext, ServiceContext } from '../context.js';
import { invoiceTaxFields, priceInvoice, type CreateInvoiceInput, type InvoicePricing } from '../invoices/create-invoice.js';
import { reserveInvoiceNumbers } from '../invoices/next-invoice-number.js';
import { notificationInserts } from '../notifications/notify.js';
import { paymentData, subscriptionData } from '../notifications/payloads.js';
import { newSubscriptionOrderId } from '../payments/order-id.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import { renewalInvoiceInput, result, type StepResult } from './bill-subscription.js';
import { fromColumn, insertRows, updateRows } from '../../db/bulk-sql.js';
import { lockWalletsOf, postWalletDebits, walletRefusal, type WalletDebit } from '../wallet/wallet-ledger.js';
import { nothingAfter } from './collect-renewal.js';
import { PLAIN_WALLET_RENEWAL, whereSql, type DueTime } from './due-rule.js';
import { usageLinesMany } from '../usage/usage-charges.js';
import { renewalUsageWindow } from '../subscription-rules/usage-invoice.js';

/*
 * The billing run's common case in bulk: a due, active, wallet-paid subscription with nothing
 * else pending, whose wallet covers the renewal. billSubscriptionStep would, for each one, issue
 * the renewal invoice, open a wallet payment, debit the wallet and settle the payment through
 * applyGatewayEvent (invoice paid, period advanced, payment_succeeded and subscription_renewed
 * notifications). This module writes those same rows for a whole page of subscriptions in one
 * transaction, with a handful of set-based statements; a plan's usage charges are priced for the
 * whole page at once (usageLinesMany: one grouped query per metric). Anything else (trials, plan changes,
 * cancellations, dunning, short or inactive wallets, a subscription several cycles behind)
 * is left to the per-subscription path, which the caller runs for every id not returned here.
 */

/** What the batch needs of a subscription: the fields renewalInvoiceInput, subscriptionData and notify read. */
type Claimed = Pick<
  Subscription,
  'id' | 'status' | 'paymentType' | 'currentPeriodStart' | 'currentPeriodEnd' | 'nextBillingDate' | 'billingAnchor' | 'trialEnd' | 'quantity' | 'discount' | 'pendingQuantity' | 'usageBilledUntil'
> & {
  user: Pick<User, 'id' | 'email' | 'taxProfile'>;
  plan: Plan;
};

/**
 * The subscriptions of `ids` whose renewal is the plain wallet case, locked for this transaction.
 * NOTE: read with plain SQL, not as entities: hydrating a thousand subscriptions with their
 * plans and users took longer than writing their renewals.
 */
async function claimPlainRenewals(em: EntityManager, ids: string[], due: DueTime): Promise<Claimed[]> {
  const postgres = isPostgres(em);
  const list = ids.map(() => '?').join(', ');
  // SQLite: write first, so the transaction queues for the write lock instead of reading a
  // snapshot it could not upgrade later (as claim() in bill-subscription.ts).
  if (!postgres) await em.execute(`update subscriptions set id = id where id in (${list})`, ids, 'run');
  // dueAction's plain `renew` (due-rule.ts's PLAIN_WALLET_RENEWAL), plus a usable wallet;
  // re-read under the lock.
  // NOTE: SKIP LOCKED: subscriptions another run holds are not waited for (see heldElsewhere).
  const plain = whereSql(em, PLAIN_WALLET_RENEWAL, due);
  const rows = (await em.execute(
    `select s.id, s.status, s.payment_type, s.current_period_start, s.current_period_end, s.usage_billed_until, s.next_billing_date, s.billing_anchor, s.trial_end, s.quantity, s.plan_id, s.user_id, u.email, u.tax_profile
       from subscriptions s
       join users u on u.id = s.user_id
       join plans p on p.id = s.plan_id
       join wallets w on w.user_id = s.user_id
     where s.id in (${list}) and ${plain.sql}
       and w.is_active = ? and w.currency = p.currency
     order by s.id${postgres ? ' for update of s skip locked' : ''}`,
    [...ids, ...plain.params, true],
    'all',
  )) as Record<string, unknown>[];
  if (rows.length === 0) return [];
  const plans = new Map((await em.find(Plan, { id: { $in: [...new Set(rows.map((r) => String(r.plan_id)))] } })).map((p) => [p.id, p]));
  const date = (r: Record<string, unknown>, property: keyof Subscription, column: string) => fromColumn(em, Subscription, property, r[column]) as Date | null;
  return rows.map((r) => ({
    id: String(r.id),
    status: r.status as Subscription['status'],
    paymentType: r.payment_type as Subscription['paymentType'],
    currentPeriodStart: date(r, 'currentPeriodStart', 'current_period_start'),
    currentPeriodEnd: date(r, 'currentPeriodEnd', 'current_period_end'),
    usageBilledUntil: date(r, 'usageBilledUntil', 'usage_billed_until'),
    nextBillingDate: date(r, 'nextBillingDate', 'next_billing_date'),
    billingAnchor: date(r, 'billingAnchor', 'billing_anchor'),
    trialEnd: date(r, 'trialEnd', 'trial_end'),
    quantity: Number(r.quantity),
    // PLAIN_WALLET_RENEWAL: no discount and no quantity change waiting.
    discount: null,
    pendingQuantity: null,
    user: { id: String(r.user_id), email: (r.email as string | null) ?? null, taxProfile: fromColumn(em, User, 'taxProfile', r.tax_profile) as User['taxProfile'] },
    plan: plans.get(String(r.plan_id))!,
  }));
}

/**
 * Renews, in one transaction, every subscription of `ids` that is a plain wallet renewal at the
 * context's clock; returns the step of each one renewed (the same step billSubscriptionStep
 * would have returned). The others are untouched.
 */
export async function renewPlainWalletBatch(ctx: ServiceContext, ids: string[], opts: BatchOptions = {}): Promise<StepResult[]> {
  if (ids.length === 0) {
    opts.onWriting?.();
    return [];
  }
  try {
    return await retryingTransaction(ctx.em, (em) => renewBatchIn(ctx, em, ids, opts));
  } finally {
    // Also when nothing was renewed or the batch failed: whoever waits on it goes on.
    opts.onWriting?.();
  }
}

export interface BatchOptions {
  /**
   * Called once the batch has read and locked what it renews, built its rows and reserved their
   * invoice numbers, as it starts writing them, and at the latest when it ends: from then on its
   * work is the database's, and the caller may prepare the next page meanwhile (run-billing.ts).
   */
  onWriting?: () => void;
}

/**
 * The dry run's batch: the same renewals, written inside the caller's transaction (a savepoint
 * of it), which the caller rolls back.
 */
export async function rehearsePlainWalletBatch(ctx: ServiceContext, ids: string[]): Promise<StepResult[]> {
  if (ids.length === 0) return [];
  return ctx.em.fork({ keepTransactionContext: true }).transactional((em: EntityManager) => renewBatchIn(ctx, em, ids));
}

/** An invoice's number (and what quotes it) until the batch reserves the numbers of all its invoices at once. */
const UNNUMBERED = '';

async function renewBatchIn(ctx: ServiceContext, em: EntityManager, ids: string[], opts: BatchOptions = {}): Promise<StepResult[]> {
  const at = ctx.clock.now();
  const tctx: DataContext = { ...ctx, em };
  const subs = await claimPlainRenewals(em, ids, { at, usageGraceMinutes: ctx.config.usageGraceMinutes });
  if (subs.length === 0) return [];
  // The usage of each period that ends, for the whole page: one grouped query per metric charged.
  const windows = new Map(subs.map((sub) => [sub.id, renewalUsageWindow(sub)]));
  const usage = await usageLinesMany(tctx, subs.map((sub) => ({ subscriptionId: sub.id, plan: sub.plan, ...windows.get(sub.id)! })));
  const walletOf = await lockWalletsOf(em, subs.map((s) => s.user.id));
  // Amounts per plan and quantity: every subscription of a plan with as many units pays the same
  // (its usage apart: a window that bills usage is priced on its own).
  const priced = new Map<string, InvoicePricing>();
  const price = (plan: Plan, input: CreateInvoiceInput) => {
    if (input.lines.length > 1) return priceInvoice(ctx.config, input);
    const key = `${plan.id}:${input.lines[0].quantity ?? 1}`;
    let p = priced.get(key);
    if (!p) {
      p = priceInvoice(ctx.config, input);
      priced.set(key, p);
    }
    return p;
  };

  const renewals = subs.flatMap((sub) => {
    const input = renewalInvoiceInput(tctx, sub as unknown as Subscription, at, usage.get(sub.id));
    // More than one cycle behind: the per-subscription path catches up cycle by cycle.
    if (input.periodEnd.getTime() <= at.getTime()) return [];
    const pricing = price(sub.plan, input);
    const total = pricing.tax.total;
    const wallet = walletOf.get(sub.user.id);
    if (!wallet || !isPositive(total) || walletRefusal(wallet, { kind: 'debit', amount: total, currency: input.currency })) return [];
    return [{ sub, input, pricing, total, wallet }];
  });
  if (renewals.length === 0) return [];

  const now = new Date();
  // Rows keyed by entity property (relations by id): insertRows converts each value through
  // the column's type, as a flush would.
  const invoices: RequiredEntityData<Invoice>[] = [];
  const lines: RequiredEntityData<InvoiceLine>[] = [];
  const payments: RequiredEntityData<Payment>[] = [];
  const funds: RequiredEntityData<PeriodFund>[] = [];
  const debits: WalletDebit[] = [];
  const notifications: RequiredEntityData<Notification>[] = [];
  const subscriptionUpdates: unknown[][] = [];
  const steps: StepResult[] = [];

  // NOTE: the rows are built before the invoice numbers are reserved (below) and numbered after:
  // the gap-free counter is held from its reservation to the commit, so another batch (a second
  // runner, or this run's next page) waits for it only while this one writes.
  renewals.forEach(({ sub, input, pricing, total, wallet }) => {
    const amounts = pricing.amounts;
    const invoiceId = randomUUID();
    invoices.push({
      id: invoiceId, number: UNNUMBERED, user: sub.user.id, subscription: sub.id, status: 'paid', billingReason: input.billingReason, currency: input.currency,
      issueDate: localDate(input.issuedAt, ctx.config.documents.timeZone), dueDate: localDate(input.dueAt, ctx.config.documents.timeZone), paidAt: at, ...invoiceTaxFields(pricing, sub.user), amountRefunded: ZERO,
      periodStart: input.periodStart, periodEnd: input.periodEnd, retryCount: 0, nextRetryAt: input.dueAt, createdAt: at, updatedAt: now,
    });
    input.lines.forEach((line, position) => {
      lines.push({
        id: randomUUID(), invoice: invoiceId, position, description: line.description, subject: line.subject ?? null, kind: line.kind, quantity: line.quantity ?? 1,
        unitAmount: money(line.unitAmount), amount: amounts[position], discountAmount: pricing.discounts[position], periodStart: line.periodStart ?? null, periodEnd: line.periodEnd ?? null,
      });
    });
    const payment = {
      id: randomUUID(), orderId: newSubscriptionOrderId(), grossAmount: total, currency: input.currency, paymentType: sub.paymentType,
      paymentDetails: { wallet_transaction_id: randomUUID() },
    };
    payments.push({
      ...payment, user: sub.user.id, subscription: sub.id, invoice: invoiceId, status: 'settled', refundedAmount: ZERO, creditedAmount: ZERO, customerFee: ZERO, chargebackAmount: ZERO, transactionId: null,
      fraudStatus: null, gatewayStatus: 'settlement', outcomeUnknown: false, paidAt: at, expiresAt: null, createdAt: at, updatedAt: now,
    });
    // The period this payment bought (periodBought in gateway-events/apply-to-subscription.ts).
    funds.push({ id: randomUUID(), subscription: sub.id, payment: payment.id, amount: total, periodStart: input.periodStart, periodEnd: input.periodEnd, createdAt: at });
    debits.push({
      wallet, id: payment.paymentDetails.wallet_transaction_id, amount: total, currency: input.currency, source: 'payment',
      referenceId: payment.id, description: UNNUMBERED,
    });
    subscriptionUpdates.push([sub.id, input.periodStart, input.periodEnd, input.periodEnd, windows.get(sub.id)!.to]);
    const renewed = { id: sub.id, plan: sub.plan, status: sub.status, currentPeriodEnd: input.periodEnd, trialEnd: sub.trialEnd } as Subscription;
    for (const [type, data] of [['payment_succeeded', paymentData(payment)], ['subscription_renewed', subscriptionData(renewed)]] as const) {
      notifications.push(...notificationInserts(tctx, sub.user, type, data));
    }
    steps.push(result(sub, 'renew', { counts: { renewed: 1, charged: 1 }, invoiceNumber: UNNUMBERED, amount: total, after: nothingAfter() }));
  });

  const numbers = await reserveInvoiceNumbers(tctx, at, renewals.length);
  // The counter is this batch's now: a batch started after this point numbers after it.
  opts.onWriting?.();
  numbers.forEach((number, i) => {
    invoices[i].number = number;
    debits[i].description = `Payment ${payments[i].orderId} of invoice ${number}`;
    steps[i].invoiceNumber = number;
  });

  // Parents before children (foreign keys are checked per statement).
  await insertRows(em, Invoice, invoices);
  await insertRows(em, InvoiceLine, lines);
  await insertRows(em, Payment, payments);
  await insertRows(em, PeriodFund, funds);
  await postWalletDebits(tctx, debits);
  await insertRows(em, Notification, notifications);
  // The usage window closes at the period's end, as closeUsageWindow does for renew().
  await updateRows(em, Subscription, ['currentPeriodStart', 'currentPeriodEnd', 'nextBillingDate', 'usageBilledUntil'], subscriptionUpdates, {
    // A renewal paid: the last renewal failure, if any, no longer stands.
    sql: 'cycles_completed = cycles_completed + 1, last_renewal_failure = null, updated_at = ?',
    params: [now],
  });
  return steps;
}

/**
 * Which of `ids` another transaction holds right now (PostgreSQL; SQLite's single writer makes
 * runs take turns instead). A run that met another's batch reports those subscriptions
 * locked_elsewhere at once, as billSubscriptionStep would one query at a time, and moves on to
 * the next page, so parallel runs leapfrog each other instead of one trailing the other.
 */
export async function heldElsewhere(ctx: ServiceContext, ids: string[]): Promise<Set<string>> {
  const em = ctx.em.fork();
  if (ids.length === 0 || !isPostgres(em)) return new Set();
  // Outside a transaction: the row locks last for this one statement only.
  const free = (await em.execute(`select id from subscriptions where id in (${ids.map(() => '?').join(', ')}) for update skip locked`, ids, 'all')) as { id: string }[];
  const unheld = new Set(free.map((r) => r.id));
  return new Set(ids.filter((id) => !unheld.has(id)));
}
