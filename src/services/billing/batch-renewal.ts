import { randomUUID } from 'node:crypto';
import { LockMode, type EntityName, type RequiredEntityData } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { Invoice, InvoiceLine } from '../../db/entities/invoice.js';
import { Notification } from '../../db/entities/notification.js';
import { Payment } from '../../db/entities/payment.js';
import { Subscription } from '../../db/entities/subscription.js';
import { Wallet, WalletTransaction } from '../../db/entities/wallet.js';
import { isoDate } from '../../domain/billing-calendar.js';
import { add, compare, isPositive, money, multiplyAndRound, subtract, ZERO } from '../../domain/money.js';
import type { DataContext, ServiceContext } from '../context.js';
import { reserveInvoiceNumbers } from '../invoices/next-invoice-number.js';
import { notificationRows } from '../notifications/notify.js';
import { paymentData, subscriptionData } from '../payments/apply-gateway-event.js';
import { newSubscriptionOrderId } from '../payments/order-id.js';
import { retryingTransaction } from '../shared/retrying-transaction.js';
import { isPostgres, renewalInvoiceInput, result, type StepResult } from './bill-subscription.js';
import { nothingAfter } from './collect-renewal.js';

/*
 * The billing run's common case in bulk: a due, active, wallet-paid subscription with nothing
 * else pending, whose wallet covers the renewal. billSubscriptionStep would, for each one, issue
 * the renewal invoice, open a wallet payment, debit the wallet and settle the payment through
 * applyGatewayEvent (invoice paid, period advanced, payment_succeeded and subscription_renewed
 * notifications). This module writes those same rows for a whole page of subscriptions in one
 * transaction, with a handful of set-based statements. Anything else (trials, plan changes,
 * cancellations, dunning, short or inactive wallets, a subscription several cycles behind)
 * is left to the per-subscription path, which the caller runs for every id not returned here.
 */

/** The SQL literal of a value as the column's own type stores it (money in minor units on SQLite…). */
function dbValue(em: EntityManager, entity: EntityName<object>, property: string, value: unknown): unknown {
  const prop = em.getMetadata().get(entity as string).properties[property];
  return prop.customType ? prop.customType.convertToDatabaseValue(value, em.getPlatform(), { mode: 'query-data' }) : value;
}

/**
 * One UPDATE … FROM (VALUES …) setting columns per row by id. PostgreSQL types the VALUES as
 * text, hence the casts; SQLite (3.33+) takes the same statement without them.
 */
async function updateEach(
  em: EntityManager,
  table: string,
  columns: { name: string; pgType: string }[],
  rows: unknown[][],
  also: { sql: string; params: unknown[] },
): Promise<void> {
  const pg = isPostgres(em);
  const cast = (sql: string, type: string) => (pg ? `cast(${sql} as ${type})` : sql);
  const names = ['id', ...columns.map((c) => c.name)];
  const tuple = `(${names.map(() => '?').join(', ')})`;
  const sets = columns.map((c) => `${c.name} = ${cast(`v.${c.name}`, c.pgType)}`);
  const sql =
    `with v (${names.join(', ')}) as (values ${rows.map(() => tuple).join(', ')}) ` +
    `update ${table} set ${[...sets, also.sql].join(', ')} from v where ${table}.id = ${cast('v.id', 'uuid')}`;
  const affected = await em.execute(sql, [...rows.flat(), ...also.params], 'run');
  const count = typeof affected === 'object' && affected !== null && 'affectedRows' in affected ? Number(affected.affectedRows) : rows.length;
  if (count !== rows.length) throw new Error(`${table}: ${count} of ${rows.length} rows updated`);
}

/** Ids of the subscriptions whose renewal is the plain wallet case, locked for this transaction. */
async function claimPlainRenewals(em: EntityManager, ids: string[], at: Date): Promise<string[]> {
  const postgres = isPostgres(em);
  const list = ids.map(() => '?').join(', ');
  // SQLite: write first, so the transaction queues for the write lock instead of reading a
  // snapshot it could not upgrade later (as claim() in bill-subscription.ts).
  if (!postgres) await em.execute(`update subscriptions set id = id where id in (${list})`, ids, 'run');
  // The same conditions as dueAction's plain `renew` (no trial, no plan change, no cancellation,
  // no open renewal invoice, cycles left), plus a usable wallet; re-read under the lock.
  // NOTE: SKIP LOCKED: subscriptions another run holds are not waited for (see heldElsewhere).
  const rows = (await em.execute(
    `select s.id from subscriptions s
       join plans p on p.id = s.plan_id
       join wallets w on w.user_id = s.user_id
     where s.id in (${list})
       and s.status = 'active' and s.payment_type = 'wallet' and s.pending_plan_id is null
       and s.cancel_at_period_end = ? and s.next_billing_date <= ?
       and (p.max_cycles = 0 or s.cycles_completed < p.max_cycles)
       and w.is_active = ? and w.currency = p.currency
       and not exists (select 1 from invoices i where i.subscription_id = s.id and i.billing_reason = 'subscription_cycle' and i.status = 'open')
     order by s.id${postgres ? ' for update of s skip locked' : ''}`,
    [...ids, false, at, true],
    'all',
  )) as { id: string }[];
  return rows.map((r) => r.id);
}

/**
 * Renews, in one transaction, every subscription of `ids` that is a plain wallet renewal at the
 * context's clock; returns the step of each one renewed (the same step billSubscriptionStep
 * would have returned). The others are untouched.
 */
export async function renewPlainWalletBatch(ctx: ServiceContext, ids: string[]): Promise<StepResult[]> {
  if (ids.length === 0) return [];
  const at = ctx.clock.now();
  return retryingTransaction(ctx.em, async (em) => {
    const tctx: DataContext = { ...ctx, em };
    const claimed = await claimPlainRenewals(em, ids, at);
    if (claimed.length === 0) return [];
    const subs = await em.find(Subscription, { id: { $in: claimed } }, { populate: ['plan', 'user'], orderBy: { id: 'asc' } });
    // Locked in id order, so two transactions never wait on each other's wallets in a cycle.
    const wallets = await em.find(
      Wallet,
      { user: { $in: subs.map((s) => s.user.id) } },
      { orderBy: { id: 'asc' }, ...(isPostgres(em) ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {}) },
    );
    const walletOf = new Map(wallets.map((w) => [w.user.id, w]));

    const renewals = subs.flatMap((sub) => {
      const input = renewalInvoiceInput(tctx, sub, at);
      // More than one cycle behind: the per-subscription path catches up cycle by cycle.
      if (input.periodEnd.getTime() <= at.getTime()) return [];
      const amounts = input.lines.map((l) => multiplyAndRound(l.unitAmount, l.quantity ?? 1, 1, input.currency));
      const total = add(...amounts);
      const wallet = walletOf.get(sub.user.id);
      if (!wallet || !isPositive(total) || compare(wallet.balance, total) < 0) return [];
      return [{ sub, input, amounts, total, wallet }];
    });
    if (renewals.length === 0) return [];

    const numbers = await reserveInvoiceNumbers(tctx, at, renewals.length);
    const now = new Date();
    // Rows keyed by entity property (relations by id): insertMany converts each value through
    // the column's type, as a flush would.
    const invoices: RequiredEntityData<Invoice>[] = [];
    const lines: RequiredEntityData<InvoiceLine>[] = [];
    const payments: RequiredEntityData<Payment>[] = [];
    const entries: RequiredEntityData<WalletTransaction>[] = [];
    const notifications: RequiredEntityData<Notification>[] = [];
    const walletUpdates: unknown[][] = [];
    const subscriptionUpdates: unknown[][] = [];
    const steps: StepResult[] = [];

    renewals.forEach(({ sub, input, amounts, total, wallet }, i) => {
      const number = numbers[i];
      const invoiceId = randomUUID();
      invoices.push({
        id: invoiceId, number, user: sub.user.id, subscription: sub.id, status: 'paid', billingReason: input.billingReason, currency: input.currency,
        issueDate: isoDate(input.issuedAt), dueDate: isoDate(input.dueAt), paidAt: at, subtotal: total, totalAmount: total, amountRefunded: ZERO,
        periodStart: input.periodStart, periodEnd: input.periodEnd, retryCount: 0, nextRetryAt: input.dueAt, createdAt: at, updatedAt: now,
      });
      input.lines.forEach((line, position) => {
        lines.push({
          id: randomUUID(), invoice: invoiceId, position, description: line.description, kind: line.kind, quantity: line.quantity ?? 1,
          unitAmount: money(line.unitAmount), amount: amounts[position], periodStart: line.periodStart ?? null, periodEnd: line.periodEnd ?? null,
        });
      });
      const payment = {
        id: randomUUID(), orderId: newSubscriptionOrderId(), grossAmount: total, currency: input.currency, paymentType: sub.paymentType,
        paymentDetails: { wallet_transaction_id: randomUUID() },
      };
      payments.push({
        ...payment, user: sub.user.id, subscription: sub.id, invoice: invoiceId, status: 'settled', refundedAmount: ZERO, transactionId: null,
        fraudStatus: null, gatewayStatus: 'settlement', outcomeUnknown: false, paidAt: at, expiresAt: null, createdAt: at, updatedAt: now,
      });
      const balanceAfter = subtract(wallet.balance, total);
      entries.push({
        id: payment.paymentDetails.wallet_transaction_id, wallet: wallet.id, kind: 'debit', amount: total, balanceAfter, source: 'payment',
        referenceId: payment.id, description: `Payment ${payment.orderId} of invoice ${number}`, createdAt: at,
      });
      walletUpdates.push([wallet.id, dbValue(em, Wallet, 'balance', balanceAfter)]);
      subscriptionUpdates.push([sub.id, input.periodStart, input.periodEnd]);
      const renewed = { id: sub.id, plan: sub.plan, status: sub.status, currentPeriodEnd: input.periodEnd, trialEnd: sub.trialEnd } as Subscription;
      for (const [type, data] of [['payment_succeeded', paymentData(payment)], ['subscription_renewed', subscriptionData(renewed)]] as const) {
        for (const row of notificationRows(tctx, sub.user, type, data)) {
          notifications.push({ ...row, id: randomUUID(), user: sub.user.id, readAt: null, sentAt: null, attempts: 0, lastError: null });
        }
      }
      steps.push(result(sub, 'renew', { counts: { renewed: 1, charged: 1 }, invoiceNumber: number, after: nothingAfter() }));
    });

    // Parents before children (foreign keys are checked per statement).
    await em.insertMany(Invoice, invoices);
    await em.insertMany(InvoiceLine, lines);
    await em.insertMany(Payment, payments);
    await em.insertMany(WalletTransaction, entries);
    await em.insertMany(Notification, notifications);
    await updateEach(em, 'wallets', [{ name: 'balance', pgType: 'numeric' }], walletUpdates, { sql: 'updated_at = ?', params: [now] });
    await updateEach(
      em,
      'subscriptions',
      [
        { name: 'current_period_start', pgType: 'timestamptz' },
        { name: 'current_period_end', pgType: 'timestamptz' },
        { name: 'next_billing_date', pgType: 'timestamptz' },
      ],
      subscriptionUpdates.map(([id, start, end]) => [id, start, end, end]),
      { sql: 'cycles_completed = cycles_completed + 1, updated_at = ?', params: [now] },
    );
    // Nothing loaded here was changed: the commit has nothing left to flush.
    em.clear();
    return steps;
  });
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
