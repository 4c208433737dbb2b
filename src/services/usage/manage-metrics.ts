import { UniqueConstraintViolationException, type FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { BillableMetric } from '../../db/entities/billable-metric.js';
import { Plan } from '../../db/entities/plan.js';
import { DomainError, InvalidStateError, ValidationError, type FieldError } from '../../domain/errors.js';
import { METRIC_AGGREGATIONS, type MetricAggregation } from '../../domain/usage/aggregation.js';
import type { Actor } from '../audit/actor.js';
import { changedFields, recordAuditEvent } from '../audit/record-audit-event.js';
import { findPage, type Page, type PageRequest } from '../common/pagination.js';
import { refuse } from '../coupons/coupon-rules.js';
import type { DataContext } from '../context.js';
import { findMetric } from './find-metric.js';

/*
 * Billable metrics as staff make them (POST /admin/metrics/, `billing-admin metrics create`):
 * what a plan's usage charges count (docs/usage.md). Their terms never change once made (an
 * event's counted value is taken when it arrives); archived, never deleted, since invoices name
 * them. Every create and archive is in the audit trail with who did it and why.
 */

/** A metric as a request or a command gives it, before any check (the wire's values). */
export interface CreateMetricInput {
  code: unknown;
  name: unknown;
  description?: unknown;
  aggregation: unknown;
  field?: unknown;
  filters?: unknown;
  reason?: string | null;
}

/** A metric's terms by their wire names: what the audit trail keeps, and the API shows with its id and creation time. */
export function auditedMetric(m: BillableMetric) {
  return {
    code: m.code,
    name: m.name,
    description: m.description,
    aggregation: m.aggregation,
    field: m.field,
    filters: m.filters,
    status: m.status,
    archived_at: m.archivedAt?.toISOString() ?? null,
  };
}

/** What a metric's code may be (the contract's): lowercase letters, digits, _ and -, at most 100. */
const CODE = /^[a-z0-9][a-z0-9_-]{0,99}$/;
/** What an aggregated property's name may be. */
const FIELD = /^[A-Za-z0-9_.-]{1,100}$/;
const MAX_FILTER_KEYS = 10;
const MAX_FILTER_VALUES = 100;

function checkedFilters(errors: FieldError[], value: unknown): Record<string, string[]> | null | undefined {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) return refuse(errors, 'filters', 'must be an object of property names to lists of values');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_FILTER_KEYS) return refuse(errors, 'filters', `may name at most ${MAX_FILTER_KEYS} properties`);
  // Own properties whatever the key (`__proto__` and `constructor` are property names like any other).
  const filters: [string, string[]][] = [];
  for (const [key, allowed] of entries) {
    const at = `filters.${key}`;
    if (key.length === 0 || key.length > 100) refuse(errors, 'filters', 'property names must be 1-100 characters');
    else if (!Array.isArray(allowed) || allowed.length === 0 || allowed.length > MAX_FILTER_VALUES) refuse(errors, at, `must list 1-${MAX_FILTER_VALUES} values`);
    else if (allowed.some((v) => typeof v !== 'string' || v.length === 0 || v.length > 200)) refuse(errors, at, 'values must be text of 1-200 characters');
    else filters.push([key, [...new Set(allowed as string[])]]);
  }
  return entries.length === 0 ? null : Object.fromEntries(filters);
}

/** The metric's checked terms, or ValidationError naming every field that is wrong. */
function checkedMetric(input: CreateMetricInput): Pick<BillableMetric, 'code' | 'name' | 'description' | 'aggregation' | 'field' | 'filters'> {
  const errors: FieldError[] = [];
  const code = typeof input.code === 'string' && CODE.test(input.code) ? input.code : refuse(errors, 'code', 'must be 1-100 lowercase letters, digits, _ or -, starting with a letter or digit');
  const name = typeof input.name === 'string' && input.name.trim().length > 0 && input.name.length <= 200 ? input.name.trim() : refuse(errors, 'name', 'must be 1-200 characters, not only spaces');
  const description = input.description === undefined || input.description === null ? '' : typeof input.description === 'string' && input.description.length <= 2000 ? input.description : refuse(errors, 'description', 'must be text of at most 2000 characters');
  const aggregation = METRIC_AGGREGATIONS.includes(input.aggregation as MetricAggregation) ? (input.aggregation as MetricAggregation) : refuse(errors, 'aggregation', `must be one of ${METRIC_AGGREGATIONS.join(', ')}`);
  const hasField = input.field !== undefined && input.field !== null;
  let field: string | null = null;
  if (aggregation === 'count') {
    if (hasField) refuse(errors, 'field', 'goes with sum, max, unique_count and latest, not count (count counts events)');
  } else if (aggregation) {
    if (!hasField) refuse(errors, 'field', `is required with aggregation ${aggregation} (the event property it reads)`);
    else if (typeof input.field !== 'string' || !FIELD.test(input.field)) refuse(errors, 'field', 'must be 1-100 letters, digits, _, . or -');
    else field = input.field;
  }
  const filters = checkedFilters(errors, input.filters);
  if (errors.length > 0) throw new ValidationError(errors);
  return { code: code!, name: name!, description: description!, aggregation: aggregation!, field, filters: filters ?? null };
}

const metricExists = (code: string) => new DomainError('conflict', `A billable metric with code "${code}" exists already.`);

/**
 * Makes a metric. Two requests for one code at once: the unique index lets one in and the other
 * answers 409 conflict, as a code already taken does (an archived metric keeps its code).
 */
export async function createMetric(ctx: DataContext, actor: Actor, input: CreateMetricInput): Promise<BillableMetric> {
  const terms = checkedMetric(input);
  if ((await ctx.em.count(BillableMetric, { code: terms.code })) > 0) throw metricExists(terms.code);
  try {
    return await ctx.em.transactional(async (em: EntityManager) => {
      const metric = em.create(BillableMetric, { ...terms, status: 'active', archivedAt: null } as BillableMetric);
      await em.flush();
      await recordAuditEvent({ em }, actor, {
        action: 'metric.create',
        target: { type: 'metric', id: metric.id },
        reason: input.reason,
        changes: changedFields({}, auditedMetric(metric)),
      });
      return metric;
    });
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) throw metricExists(terms.code);
    throw err;
  }
}

/** The slugs of the plans not archived whose charges name this metric. */
export async function plansCharging(em: EntityManager, code: string): Promise<string[]> {
  const plans = await em.find(Plan, { status: { $ne: 'archived' } }, { fields: ['slug', 'charges'], orderBy: { slug: 'asc' } });
  return plans.filter((p) => (p.charges ?? []).some((c) => c.metric === code)).map((p) => p.slug);
}

/**
 * Archives a metric: it takes no more events and no plan may charge it. A metric a plan not
 * archived still charges, or one archived already, is 409 invalid_state (the conditional UPDATE
 * decides between two at once: one archives, the other finds it archived).
 */
export async function archiveMetric(ctx: DataContext, actor: Actor, ref: string, reason?: string | null): Promise<BillableMetric> {
  const found = await findMetric(ctx, ref);
  if (found.status === 'archived') throw new InvalidStateError(`Billable metric ${found.code} is archived already.`);
  const archived = await ctx.em.transactional(async (em: EntityManager) => {
    const charging = await plansCharging(em, found.code);
    if (charging.length > 0) {
      throw new InvalidStateError(`Billable metric ${found.code} is charged by plan${charging.length === 1 ? '' : 's'} ${charging.join(', ')}; remove the charge from the plans file (or archive the plan) first.`);
    }
    const now = ctx.clock.now();
    const changed = await em.nativeUpdate(BillableMetric, { id: found.id, status: 'active' }, { status: 'archived', archivedAt: now, updatedAt: now });
    if (changed !== 1) return null;
    await recordAuditEvent({ em }, actor, {
      action: 'metric.archive',
      target: { type: 'metric', id: found.id },
      reason,
      changes: { status: ['active', 'archived'], archived_at: [null, now.toISOString()] },
    });
    return true;
  });
  if (!archived) throw new InvalidStateError(`Billable metric ${found.code} is archived already.`);
  return ctx.em.findOneOrFail(BillableMetric, { id: found.id }, { refresh: true });
}

export interface MetricFilters {
  /** Whether it still takes events: not archived. */
  active?: boolean;
}

/** Metrics, newest first. */
export async function listMetrics(ctx: Pick<DataContext, 'em'>, filters: MetricFilters, page: PageRequest): Promise<Page<BillableMetric>> {
  const where: FilterQuery<BillableMetric> = filters.active === undefined ? {} : { status: filters.active ? 'active' : 'archived' };
  return findPage(ctx.em, BillableMetric, where, page, { orderBy: [{ createdAt: 'desc' }, { id: 'asc' }] });
}
