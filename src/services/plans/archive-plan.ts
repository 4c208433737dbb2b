import { Plan } from '../../db/entities/plan.js';
import { NotFoundError } from '../../domain/errors.js';
import { movePlanTo } from '../../domain/states/plan-states.js';
import type { DataContext } from '../context.js';

/** Takes a plan out of the catalogue; existing subscriptions keep it. Safe to call twice. */
export async function archivePlan(ctx: DataContext, slug: string): Promise<Plan> {
  const plan = await ctx.em.findOne(Plan, { slug });
  if (!plan) throw new NotFoundError('Plan');
  movePlanTo(plan, 'archived', ctx.clock.now());
  await ctx.em.flush();
  return plan;
}

export async function listAllPlans(ctx: Pick<DataContext, 'em'>): Promise<Plan[]> {
  return ctx.em.find(Plan, {}, { orderBy: { sortOrder: 'asc', price: 'asc' } });
}
