import type { EntityManager } from '@mikro-orm/core';
import { BillableMetric } from '../../db/entities/billable-metric.js';
import { NotFoundError } from '../../domain/errors.js';
import { parseUuid } from '../../domain/ids.js';
import type { DataContext } from '../context.js';

/** The longest code a metric has (the column's length). */
const MAX_CODE = 100;

/** The metric a reference names, or null: its code (exactly as made) or its id. */
export async function metricByRef(ctx: Pick<DataContext, 'em'>, ref: string): Promise<BillableMetric | null> {
  const byCode = ref.length <= MAX_CODE ? await ctx.em.findOne(BillableMetric, { code: ref }) : null;
  if (byCode) return byCode;
  const id = parseUuid(ref);
  return id ? ctx.em.findOne(BillableMetric, { id }) : null;
}

/** The metric a staff route or command names (by code or id); NotFoundError when none is. */
export async function findMetric(ctx: Pick<DataContext, 'em'>, ref: string): Promise<BillableMetric> {
  const metric = await metricByRef(ctx, ref);
  if (!metric) throw new NotFoundError(`Billable metric "${ref}"`);
  return metric;
}

/**
 * The active metric with this code, or null (none, or archived): what events and plan charges
 * name. Read from the database every time (no cache), so an archive is seen at once.
 */
export async function findActiveMetricByCode(em: EntityManager, code: string): Promise<BillableMetric | null> {
  if (typeof code !== 'string' || code.length === 0 || code.length > MAX_CODE) return null;
  return em.findOne(BillableMetric, { code, status: 'active' });
}

/** The metrics among these codes, active or archived, by code (one query; what the plans file names). */
export async function metricsByCode(em: EntityManager, codes: string[]): Promise<Map<string, BillableMetric>> {
  const wanted = [...new Set(codes.filter((c) => typeof c === 'string' && c.length > 0 && c.length <= MAX_CODE))];
  if (wanted.length === 0) return new Map();
  const found = await em.find(BillableMetric, { code: { $in: wanted } });
  return new Map(found.map((m) => [m.code, m]));
}
