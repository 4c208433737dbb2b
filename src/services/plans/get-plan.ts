import { Plan } from '../../db/entities/plan.js';
import { NotFoundError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';
import type { Viewer } from './list-plans.js';
import { isUuid } from '../../domain/ids.js';


/** A plan by slug, as the catalogue shows it to this viewer. */
export async function getPlanBySlug(ctx: Pick<DataContext, 'em'>, viewer: Viewer | null, slug: string): Promise<Plan> {
  const plan = await ctx.em.findOne(Plan, { slug });
  if (!plan || (plan.status !== 'active' && !viewer?.isStaff)) throw new NotFoundError('Plan');
  return plan;
}

/** The plan a user may subscribe to, by UUID or slug: it must be active. */
export async function findSubscribablePlan(ctx: Pick<DataContext, 'em'>, planIdOrSlug: string): Promise<Plan> {
  const plan = await ctx.em.findOne(Plan, isUuid(planIdOrSlug) ? { id: planIdOrSlug.toLowerCase() } : { slug: planIdOrSlug });
  if (!plan || plan.status !== 'active') throw new NotFoundError('Plan');
  return plan;
}
