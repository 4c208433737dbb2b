import { Plan } from '../../db/entities/plan.js';
import { NotFoundError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';
import type { Viewer } from './list-plans.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A plan by slug, as the catalogue shows it to this viewer. */
export async function getPlanBySlug(ctx: Pick<DataContext, 'em'>, viewer: Viewer | null, slug: string): Promise<Plan> {
  const plan = await ctx.em.findOne(Plan, { slug });
  if (!plan || (plan.status !== 'active' && !viewer?.isStaff)) throw new NotFoundError('Plan');
  return plan;
}

/** The plan a user may subscribe to, by UUID or slug: it must be active. */
export async function findSubscribablePlan(ctx: Pick<DataContext, 'em'>, planIdOrSlug: string): Promise<Plan> {
  const plan = await ctx.em.findOne(Plan, UUID.test(planIdOrSlug) ? { id: planIdOrSlug.toLowerCase() } : { slug: planIdOrSlug });
  if (!plan || plan.status !== 'active') throw new NotFoundError('Plan');
  return plan;
}
