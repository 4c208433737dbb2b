import { Invoice } from '../../db/entities/invoice.js';
import { Plan } from '../../db/entities/plan.js';
import { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import { hasPaidAccess, OPEN_RENEWAL_INVOICE, paidAccessEndsAt } from '../../domain/paid-access.js';
import { ACCESS_GRANTING_STATUSES } from '../../domain/states/subscription-states.js';
import { hotRows } from '../../db/hot-sql.js';
import { rowReader } from '../../db/row-fields.js';
import { PLAN_SUMMARY_FIELDS, SUBSCRIPTION_FIELDS, type PlanSummaryFields, type SubscriptionFields } from '../../http/serializers.js';
import type { DataContext } from '../context.js';
import { findOwnSubscription, SUBSCRIPTION_POPULATE } from './find-subscription.js';
import { accessColumnsSql, accessRules, accessSubjectOf } from './has-access.js';

/** One of the user's subscriptions. */
export async function getSubscription(ctx: Pick<DataContext, 'em'>, user: User, id: string): Promise<Subscription> {
  return findOwnSubscription(ctx.em, user, id);
}

/**
 * The user's subscription that grants access now (active or trialing, and a paid period or trial
 * covering now: src/domain/paid-access.ts), with its plan and scheduled plan, as an entity; not
 * found when there is none. The API reads it by getActiveSubscriptionAnswer.
 */
export async function getActiveSubscription(ctx: Pick<DataContext, 'em' | 'config' | 'clock'>, user: User): Promise<Subscription> {
  const sub = await ctx.em.findOne(
    Subscription,
    { user: user.id, status: { $in: [...ACCESS_GRANTING_STATUSES] } },
    { orderBy: { createdAt: 'desc' }, populate: SUBSCRIPTION_POPULATE },
  );
  const openRenewal = sub ? await ctx.em.findOne(Invoice, { subscription: sub, ...OPEN_RENEWAL_INVOICE }, { orderBy: { createdAt: 'asc' } }) : null;
  const subject = sub && { status: sub.status, currentPeriodEnd: sub.currentPeriodEnd, trialEnd: sub.trialEnd, openRenewalIssuedAt: openRenewal?.createdAt ?? null };
  if (!subject || !hasPaidAccess(subject, ctx.clock.now(), accessRules(ctx.config))) throw new NotFoundError('Active subscription');
  return sub;
}

/**
 * getActiveSubscription's answer as plain fields, by one statement (the subscription and its
 * three plans joined), with no entities: every client polls it. With it, the instant (epoch ms,
 * the service's clock) its access ends: until then the same rows give the same answer
 * (src/http/answer-cache.ts keeps it that long).
 */
export async function getActiveSubscriptionAnswer(
  ctx: Pick<DataContext, 'em' | 'config' | 'clock'>,
  userId: string,
): Promise<{ subscription: SubscriptionFields; accessEndsAt: number }> {
  const em = ctx.em;
  const sub = rowReader<Omit<SubscriptionFields, 'plan' | 'pendingPlan' | 'pendingChangePlan'>>(em, Subscription, SUBSCRIPTION_FIELDS, 's');
  const plan = rowReader<PlanSummaryFields>(em, Plan, PLAN_SUMMARY_FIELDS, 'p', 'plan_');
  const pending = rowReader<PlanSummaryFields>(em, Plan, PLAN_SUMMARY_FIELDS, 'pp', 'pending_');
  const change = rowReader<PlanSummaryFields>(em, Plan, PLAN_SUMMARY_FIELDS, 'cp', 'change_');
  const statuses = [...ACCESS_GRANTING_STATUSES];
  const access = accessColumnsSql('s');
  const [row] = await hotRows(
    em,
    `select ${sub.columns}, ${plan.columns}, ${pending.columns}, ${change.columns}, ${access.sql}
     from subscriptions s
     join plans p on p.id = s.plan_id
     left join plans pp on pp.id = s.pending_plan_id
     left join plans cp on cp.id = s.pending_change_plan_id
     where s.user_id = ? and s.status in (${statuses.map(() => '?').join(', ')})
     order by s.created_at desc limit 1`,
    [...access.params, userId, ...statuses],
  );
  const accessEndsAt = row ? paidAccessEndsAt(accessSubjectOf(row), accessRules(ctx.config)) : -Infinity;
  if (!row || ctx.clock.now().getTime() >= accessEndsAt) throw new NotFoundError('Active subscription');
  return {
    subscription: {
      ...sub.read(row),
      plan: plan.read(row),
      pendingPlan: row.pending_id == null ? null : pending.read(row),
      pendingChangePlan: row.change_id == null ? null : change.read(row),
    },
    accessEndsAt,
  };
}
