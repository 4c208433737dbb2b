import type { EntityManager } from '@mikro-orm/knex';
import { isPostgres } from '../../db/dialect.js';
import { Invoice } from '../../db/entities/invoice.js';
import { Plan } from '../../db/entities/plan.js';
import { Subscription } from '../../db/entities/subscription.js';
import { addDays } from '../../domain/billing-calendar.js';
import { OPEN_RENEWAL_INVOICE } from '../../domain/paid-access.js';
import { TRIAL_NOTICE_DAYS } from './dunning-schedule.js';

/*
 * "Due" written once. Each clause below is data; `holds` evaluates it on a loaded subscription
 * (dueAction, the per-subscription path) and `whereSql` turns the same clause into SQL
 * (dueSubscriptionIds, the batch renewal's claim), so the run's selection and its decision cannot
 * drift apart. test/services/billing/due-rule.test.ts generates subscriptions and checks that
 * both agree on SQLite and PostgreSQL.
 */

/** Statuses the billing run looks at; paused subscriptions are not billed (resume moves their dates). */
export const BILLED_STATUSES = ['trialing', 'active', 'past_due'] as const;

/**
 * When the rule is evaluated: the run's instant, and how long after its period's end a
 * subscription whose plan has usage charges waits before it is billed (USAGE_GRACE_MINUTES:
 * late events of the period still arrive, docs/usage.md).
 */
export interface DueTime {
  at: Date;
  usageGraceMinutes: number;
}

/** A time the rule compares with, as a function of the run's `at` (and the usage grace). */
type Moment = (when: DueTime) => Date;

type SubscriptionField = 'status' | 'paymentType' | 'cancelAtPeriodEnd' | 'nextBillingDate' | 'trialEnd' | 'trialWillEndNotifiedAt' | 'pendingPlan' | 'pendingQuantity' | 'discount';
type InvoiceField = 'nextRetryAt';

/** A condition on a row of T (a subscription, or its open renewal invoice). */
export type Rule<F extends string = SubscriptionField> =
  | { op: 'all'; of: Rule<F>[] }
  | { op: 'any'; of: Rule<F>[] }
  | { op: 'not'; of: Rule<F> }
  | { op: 'in'; field: F; values: readonly (string | boolean)[] }
  | { op: 'null'; field: F }
  /** The field is set and at or before the moment. */
  | { op: 'atOrBefore'; field: F; moment: Moment }
  /** The field is set and after the moment. */
  | { op: 'after'; field: F; moment: Moment }
  /** The subscription has an open renewal invoice meeting `where`. */
  | { op: 'openRenewalInvoice'; where: Rule<InvoiceField> }
  /** The subscription's current plan allows another paid cycle (max_cycles 0 is unlimited). */
  | { op: 'cyclesLeft' }
  /** The subscription's current plan (the one its period is billed under) has usage charges. */
  | { op: 'metered' };

const all = <F extends string>(...of: Rule<F>[]): Rule<F> => ({ op: 'all', of });
const any = <F extends string>(...of: Rule<F>[]): Rule<F> => ({ op: 'any', of });
const not = <F extends string>(of: Rule<F>): Rule<F> => ({ op: 'not', of });
const oneOf = <F extends string>(field: F, ...values: (string | boolean)[]): Rule<F> => ({ op: 'in', field, values });
const now: Moment = ({ at }) => at;
const usageGraceAgo: Moment = ({ at, usageGraceMinutes }) => new Date(at.getTime() - usageGraceMinutes * 60_000);

const billed = oneOf<SubscriptionField>('status', ...BILLED_STATUSES);
/**
 * The period ended, and for a plan with usage charges USAGE_GRACE_MINUTES ago: its usage is
 * billed at the period's end (renewal, cancel at period end, expiry), after late events arrived.
 * NOTE: `nextBillingDate <= at` stays a conjunct of its own, so the scan keeps its index range.
 */
const periodOver: Rule = all(
  { op: 'atOrBefore', field: 'nextBillingDate', moment: now },
  any(not({ op: 'metered' }), { op: 'atOrBefore', field: 'nextBillingDate', moment: usageGraceAgo }),
);
const cancelFlag = oneOf<SubscriptionField>('cancelAtPeriodEnd', true);
const noOpenRenewalInvoice: Rule = not({ op: 'openRenewalInvoice', where: all() });

/** The clauses of "due", in dueAction's order: the first that holds decides what the run does. */
export const DUE = {
  /** The period ended on a subscription set to cancel then (open invoice or not). */
  cancelAtPeriodEnd: all(billed, periodOver, cancelFlag),
  /** The open renewal invoice's next dunning attempt is due. */
  collect: all(billed, { op: 'openRenewalInvoice', where: { op: 'atOrBefore', field: 'nextRetryAt', moment: now } }),
  /** The period ended and its renewal invoice is not issued yet (renew, expire, or a blocked plan change). */
  renewal: all(billed, periodOver, noOpenRenewalInvoice),
  /** A trial ends within TRIAL_NOTICE_DAYS and the user has not been told. */
  trialNotice: all(
    oneOf('status', 'trialing'),
    { op: 'null', field: 'trialWillEndNotifiedAt' },
    { op: 'after', field: 'trialEnd', moment: now },
    { op: 'atOrBefore', field: 'trialEnd', moment: ({ at }) => addDays(at, TRIAL_NOTICE_DAYS) },
    noOpenRenewalInvoice,
  ),
} satisfies Record<string, Rule>;

/**
 * The scans that find due subscriptions (dueSubscriptionIds), one query each: the two period-end
 * clauses factored into one, so a page is one index scan in id order that stops at its limit
 * (as two, the cancellations' scan read every due subscription on every page).
 */
export const DUE_SCANS: Rule[] = [all(billed, periodOver, any(cancelFlag, noOpenRenewalInvoice)), DUE.collect, DUE.trialNotice];

/** Something is due: one of the scans finds it (and so one of the clauses holds). */
export const IS_DUE: Rule = any(...DUE_SCANS);

/**
 * The renewals the batch run writes in bulk (batch-renewal.ts): a due renewal with no trial, no
 * plan change, no cancellation and cycles left, paid from the wallet; dueAction's plain `renew`.
 */
export const PLAIN_WALLET_RENEWAL: Rule = all(
  DUE.renewal,
  oneOf('status', 'active'),
  oneOf('paymentType', 'wallet'),
  { op: 'null', field: 'pendingPlan' },
  // A quantity change at the period's end and a discount's countdown are written one by one.
  { op: 'null', field: 'pendingQuantity' },
  { op: 'null', field: 'discount' },
  oneOf('cancelAtPeriodEnd', false),
  { op: 'cyclesLeft' },
);

/** What a clause is evaluated on: the subscription and its open renewal invoice (openRenewalInvoice). */
export interface DueSubject {
  sub: Subscription;
  openInvoice: Invoice | null;
}

function timeOf(value: unknown): number | null {
  return value instanceof Date ? value.getTime() : null;
}

function holdsOn<F extends string>(rule: Rule<F>, row: Record<string, unknown>, subject: DueSubject, at: DueTime): boolean {
  switch (rule.op) {
    case 'all':
      return rule.of.every((r) => holdsOn(r, row, subject, at));
    case 'any':
      return rule.of.some((r) => holdsOn(r, row, subject, at));
    case 'not':
      return !holdsOn(rule.of, row, subject, at);
    case 'in':
      return rule.values.includes(row[rule.field] as string | boolean);
    case 'null':
      return row[rule.field] === null || row[rule.field] === undefined;
    case 'atOrBefore': {
      const t = timeOf(row[rule.field]);
      return t !== null && t <= rule.moment(at).getTime();
    }
    case 'after': {
      const t = timeOf(row[rule.field]);
      return t !== null && t > rule.moment(at).getTime();
    }
    case 'openRenewalInvoice':
      return subject.openInvoice !== null && holdsOn(rule.where, subject.openInvoice as unknown as Record<string, unknown>, subject, at);
    case 'cyclesLeft':
      return subject.sub.plan.maxCycles === 0 || subject.sub.cyclesCompleted < subject.sub.plan.maxCycles;
    case 'metered':
      return subject.sub.plan.charges.length > 0;
  }
}

/** Whether `rule` holds for the subscription at `at`. */
export function holds(rule: Rule, subject: DueSubject, at: DueTime): boolean {
  return holdsOn(rule, subject.sub as unknown as Record<string, unknown>, subject, at);
}

interface Sql {
  sql: string;
  params: unknown[];
}

function column(em: EntityManager, entity: { name: string }, field: string): string {
  const prop = em.getMetadata().get(entity.name).properties[field as never] as { fieldNames: string[] } | undefined;
  if (!prop) throw new Error(`${entity.name} has no property ${field}`);
  return prop.fieldNames[0];
}

function tableOf(em: EntityManager, entity: { name: string }): string {
  return em.getMetadata().get(entity.name).tableName;
}

/**
 * NOTE: every comparison is written `col is not null and …`, so a missing date is false, never
 * SQL's unknown: `not` then means what it means in `holds`.
 */
function toSql<F extends string>(em: EntityManager, rule: Rule<F>, at: DueTime, entity: { name: string }, alias: string, subAlias: string): Sql {
  const col = (field: string) => `${alias}.${column(em, entity, field)}`;
  const join = (parts: Sql[], glue: string, empty: string): Sql =>
    parts.length === 0 ? { sql: empty, params: [] } : { sql: `(${parts.map((p) => p.sql).join(glue)})`, params: parts.flatMap((p) => p.params) };
  switch (rule.op) {
    case 'all':
      return join(rule.of.map((r) => toSql(em, r, at, entity, alias, subAlias)), ' and ', '1 = 1');
    case 'any':
      return join(rule.of.map((r) => toSql(em, r, at, entity, alias, subAlias)), ' or ', '1 = 0');
    case 'not': {
      const inner = toSql(em, rule.of, at, entity, alias, subAlias);
      return { sql: `not ${inner.sql}`, params: inner.params };
    }
    case 'in':
      return { sql: `(${col(rule.field)} is not null and ${col(rule.field)} in (${rule.values.map(() => '?').join(', ')}))`, params: [...rule.values] };
    case 'null':
      return { sql: `(${col(rule.field)} is null)`, params: [] };
    case 'atOrBefore':
      return { sql: `(${col(rule.field)} is not null and ${col(rule.field)} <= ?)`, params: [rule.moment(at)] };
    case 'after':
      return { sql: `(${col(rule.field)} is not null and ${col(rule.field)} > ?)`, params: [rule.moment(at)] };
    case 'openRenewalInvoice': {
      const i = `${subAlias}_i`;
      const where = toSql(em, rule.where, at, Invoice, i, subAlias);
      return {
        sql:
          `exists (select 1 from ${tableOf(em, Invoice)} ${i} where ${i}.${column(em, Invoice, 'subscription')} = ${subAlias}.id` +
          ` and ${i}.${column(em, Invoice, 'billingReason')} = ? and ${i}.${column(em, Invoice, 'status')} = ? and ${where.sql})`,
        params: [OPEN_RENEWAL_INVOICE.billingReason, OPEN_RENEWAL_INVOICE.status, ...where.params],
      };
    }
    case 'cyclesLeft': {
      const p = `${subAlias}_p`;
      const maxCycles = `${p}.${column(em, Plan, 'maxCycles')}`;
      return {
        sql: `exists (select 1 from ${tableOf(em, Plan)} ${p} where ${p}.id = ${subAlias}.${column(em, Subscription, 'plan')} and (${maxCycles} = 0 or ${subAlias}.${column(em, Subscription, 'cyclesCompleted')} < ${maxCycles}))`,
        params: [],
      };
    }
    case 'metered': {
      const p = `${subAlias}_m`;
      // plans.charges: a JSON array (default []), jsonb on PostgreSQL, text on SQLite.
      const length = isPostgres(em) ? 'jsonb_array_length' : 'json_array_length';
      return {
        sql: `exists (select 1 from ${tableOf(em, Plan)} ${p} where ${p}.id = ${subAlias}.${column(em, Subscription, 'plan')} and ${length}(${p}.${column(em, Plan, 'charges')}) > 0)`,
        params: [],
      };
    }
  }
}

/** `rule` as a SQL condition on the subscriptions table under `alias`, with its bound parameters. */
export function whereSql(em: EntityManager, rule: Rule, at: DueTime, alias = 's'): Sql {
  return toSql(em, rule, at, Subscription, alias, alias);
}

/** Ids of subscriptions for which `rule` holds at `at`, in id order after `afterId`, at most `limit`. */
export async function selectSubscriptionIds(em: EntityManager, rule: Rule, at: DueTime, afterId: string | null, limit: number): Promise<string[]> {
  const where = whereSql(em, rule, at);
  const rows = (await em.execute(
    `select s.id from ${tableOf(em, Subscription)} s where ${where.sql}${afterId ? ' and s.id > ?' : ''} order by s.id limit ?`,
    [...where.params, ...(afterId ? [afterId] : []), limit],
    'all',
  )) as { id: string }[];
  return rows.map((r) => String(r.id));
}
