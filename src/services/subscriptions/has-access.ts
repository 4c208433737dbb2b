import type { EntityManager } from '@mikro-orm/knex';
import type { Config } from '../../config.js';
import { hotRows } from '../../db/hot-sql.js';
import { toDate } from '../../db/row-fields.js';
import { OPEN_RENEWAL_INVOICE, paidAccessEndsAt, type AccessRules, type AccessSubject } from '../../domain/paid-access.js';
import { ACCESS_GRANTING_STATUSES } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';

/**
 * The configured access rules (ACCESS_GRACE_MINUTES, RENEWAL_DUE_DAYS). NOTE: a renewal that bills
 * usage is made USAGE_GRACE_MINUTES after the period ends (late events still count), so access
 * lasts at least that long: no subscriber is locked out while the invoice waits for its usage.
 */
export function accessRules(config: Pick<Config, 'accessGraceMinutes' | 'renewalDueDays'> & Partial<Pick<Config, 'usageGraceMinutes'>>): AccessRules {
  return { graceMinutes: Math.max(config.accessGraceMinutes, config.usageGraceMinutes ?? 0), renewalDueDays: config.renewalDueDays };
}

/**
 * SQL of the columns paidAccessEndsAt reads, for a subscriptions row under `alias`: its status,
 * period and trial end, and `open_renewal_issued_at` (its oldest open renewal invoice, found by
 * the unique index that starts with subscription_id). With the parameters they bind.
 */
export function accessColumnsSql(alias: string): { sql: string; params: string[] } {
  return {
    sql:
      `${alias}.status as access_status, ${alias}.current_period_end as access_period_end, ${alias}.trial_end as access_trial_end, ` +
      // NOTE: the status inside the aggregate, not in the WHERE: SQLite otherwise picks the index on
      // (status, paid_at) and walks every open invoice of every customer; this way both databases
      // take the unique index on (subscription_id, billing_reason, …), a handful of rows.
      `(select min(case when ri.status = ? then ri.created_at end) from invoices ri where ri.subscription_id = ${alias}.id and ri.billing_reason = ?) as open_renewal_issued_at`,
    params: [OPEN_RENEWAL_INVOICE.status, OPEN_RENEWAL_INVOICE.billingReason],
  };
}

/** The rule's subject from a row selected with accessColumnsSql. */
export function accessSubjectOf(row: Record<string, unknown>): AccessSubject {
  return {
    status: String(row.access_status),
    currentPeriodEnd: toDate(row.access_period_end),
    trialEnd: toDate(row.access_trial_end),
    openRenewalIssuedAt: toDate(row.open_renewal_issued_at),
  };
}

/**
 * When the user's access ends (epoch ms; -Infinity: they have none, +Infinity: no end is set):
 * their active or trialing subscription under the one rule of src/domain/paid-access.ts. One
 * indexed lookup (the subscriptions index starting with the user), no entities.
 */
export async function paidAccessEndsAtFor(ctx: { em: EntityManager; config: Pick<Config, 'accessGraceMinutes' | 'renewalDueDays'> }, userId: string): Promise<number> {
  const statuses = [...ACCESS_GRANTING_STATUSES];
  const columns = accessColumnsSql('s');
  const [row] = await hotRows(
    ctx.em,
    `select ${columns.sql} from subscriptions s where s.user_id = ? and s.status in (${statuses.map(() => '?').join(', ')}) limit 1`,
    [...columns.params, userId, ...statuses],
    { prepare: true },
  );
  return row ? paidAccessEndsAt(accessSubjectOf(row), accessRules(ctx.config)) : -Infinity;
}

/** True when a paid period (or trial) of the user's subscription covers now (docs/billing.md). */
export async function hasAccessGrantingSubscription(ctx: Pick<DataContext, 'em' | 'config' | 'clock'>, userId: string): Promise<boolean> {
  return ctx.clock.now().getTime() < (await paidAccessEndsAtFor(ctx, userId));
}
