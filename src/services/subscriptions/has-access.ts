import type { EntityManager } from '@mikro-orm/knex';
import { hotRows } from '../../db/hot-sql.js';
import { toDate } from '../../db/row-fields.js';
import { ACCESS_GRANTING_STATUSES } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';


/**
 * Whether the user holds a subscription that grants access (active or trialing), and until when
 * that subscription's own period (or trial) runs (null: no end set). One indexed lookup (the
 * subscriptions index starting with the user), no entities.
 */
export async function accessGrantedUntil(ctx: { em: EntityManager }, userId: string): Promise<{ granted: false } | { granted: true; until: Date | null }> {
  const statuses = [...ACCESS_GRANTING_STATUSES];
  const [row] = await hotRows<{ current_period_end: unknown; trial_end: unknown }>(
    ctx.em,
    `select current_period_end, trial_end from subscriptions where user_id = ? and status in (${statuses.map(() => '?').join(', ')}) limit 1`,
    [userId, ...statuses],
    { prepare: true },
  );
  if (!row) return { granted: false };
  const ends = [toDate(row.current_period_end), toDate(row.trial_end)].filter((d): d is Date => d !== null);
  return { granted: true, until: ends.length ? new Date(Math.max(...ends.map((d) => d.getTime()))) : null };
}

/** True when the user holds a subscription that grants access (active or trialing). */
export async function hasAccessGrantingSubscription(ctx: Pick<DataContext, 'em'>, userId: string): Promise<boolean> {
  return (await accessGrantedUntil(ctx, userId)).granted;
}
