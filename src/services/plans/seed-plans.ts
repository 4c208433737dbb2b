import { Plan, type IntervalUnit, type PlanStatus } from '../../db/entities/plan.js';
import { ValidationError, type FieldError } from '../../domain/errors.js';
import { money, parseAmountInput } from '../../domain/money.js';
import { TAX_BEHAVIORS, type TaxBehavior } from '../../domain/tax.js';
import { movePlanTo } from '../../domain/states/plan-states.js';
import { checkCharge, type PlanCharge } from '../../domain/usage/charge-models.js';
import { canonicalJson } from '../audit/audit-chain.js';
import type { DataContext } from '../context.js';
import { metricsByCode } from '../usage/find-metric.js';

export interface PlanSeed {
  slug: string;
  name: string;
  description?: string;
  price: string | number;
  currency?: string;
  interval?: number;
  interval_unit?: IntervalUnit;
  trial_period_days?: number;
  max_cycles?: number;
  status?: PlanStatus;
  features?: Record<string, unknown>;
  sort_order?: number;
  tax_behavior?: TaxBehavior;
  /** Priced per unit (seats): a subscription pays price × its quantity. */
  per_unit?: boolean;
  /** Usage charges billed in arrears (docs/usage.md): `{metric, model, properties}` each. */
  charges?: unknown[];
}

export interface SeedResult {
  created: string[];
  updated: string[];
  unchanged: string[];
}

const SLUG = /^[a-z0-9][a-z0-9-]{0,99}$/;

function validate(seed: PlanSeed, index: number): FieldError[] {
  const at = (field: string) => `[${index}].${field}`;
  const errors: FieldError[] = [];
  const intOk = (v: unknown, min: number) => v === undefined || (Number.isInteger(v) && (v as number) >= min);
  if (typeof seed !== 'object' || seed === null) return [{ field: `[${index}]`, message: 'must be an object' }];
  if (typeof seed.slug !== 'string' || !SLUG.test(seed.slug)) errors.push({ field: at('slug'), message: 'must be lowercase letters, digits and dashes' });
  if (typeof seed.name !== 'string' || seed.name.length === 0 || seed.name.length > 200) errors.push({ field: at('name'), message: 'is required (at most 200 characters)' });
  if (seed.currency !== undefined && !/^[A-Z]{3}$/.test(seed.currency)) errors.push({ field: at('currency'), message: 'must be a 3-letter code' });
  if (!intOk(seed.interval, 1)) errors.push({ field: at('interval'), message: 'must be a whole number of at least 1' });
  if (seed.interval_unit !== undefined && !['day', 'week', 'month'].includes(seed.interval_unit)) errors.push({ field: at('interval_unit'), message: 'must be day, week or month' });
  if (!intOk(seed.trial_period_days, 0)) errors.push({ field: at('trial_period_days'), message: 'must be a whole number of at least 0' });
  if (!intOk(seed.max_cycles, 0)) errors.push({ field: at('max_cycles'), message: 'must be a whole number of at least 0' });
  if (seed.status !== undefined && !['active', 'inactive', 'archived'].includes(seed.status)) errors.push({ field: at('status'), message: 'must be active, inactive or archived' });
  if (seed.sort_order !== undefined && !Number.isInteger(seed.sort_order)) errors.push({ field: at('sort_order'), message: 'must be a whole number' });
  if (seed.tax_behavior !== undefined && !TAX_BEHAVIORS.includes(seed.tax_behavior)) errors.push({ field: at('tax_behavior'), message: 'must be none, exclusive or inclusive' });
  if (seed.per_unit !== undefined && typeof seed.per_unit !== 'boolean') errors.push({ field: at('per_unit'), message: 'must be true or false' });
  if (seed.features !== undefined && (typeof seed.features !== 'object' || seed.features === null || Array.isArray(seed.features))) errors.push({ field: at('features'), message: 'must be an object' });
  try {
    parseAmountInput(seed.price, seed.currency ?? 'IDR', at('price'));
  } catch (e) {
    if (e instanceof ValidationError) errors.push(...e.errors);
    else throw e;
  }
  errors.push(...checkedCharges(seed, index).errors);
  return errors;
}

const MAX_CHARGES = 50;

/** A plan's charges as the file gives them, checked (no database), each at `[i].charges[j]`. */
function checkedCharges(seed: PlanSeed, index: number): { charges: PlanCharge[]; errors: FieldError[] } {
  if (seed.charges === undefined) return { charges: [], errors: [] };
  const at = `[${index}].charges`;
  if (!Array.isArray(seed.charges) || seed.charges.length > MAX_CHARGES) return { charges: [], errors: [{ field: at, message: `must be a list of at most ${MAX_CHARGES} charges` }] };
  const charges: PlanCharge[] = [];
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  seed.charges.forEach((value, j) => {
    const checked = checkCharge(value, seed.currency ?? 'IDR', `${at}[${j}]`);
    errors.push(...checked.errors);
    if (!checked.charge) return;
    if (seen.has(checked.charge.metric)) errors.push({ field: `${at}[${j}].metric`, message: `charges metric ${checked.charge.metric} a second time (at most one charge per metric)` });
    seen.add(checked.charge.metric);
    charges.push(checked.charge);
  });
  return { charges, errors };
}

/**
 * Every plan's charges with the metric's name copied in, by slug; a metric that does not exist,
 * or is archived (but for a plan archived too: the file seeds as it did), is an error naming
 * `[i].charges[j].metric`.
 */
async function chargesWithMetrics(ctx: DataContext, seeds: PlanSeed[]): Promise<{ bySlug: Map<string, PlanCharge[]>; errors: FieldError[] }> {
  const checked = seeds.map((seed, i) => checkedCharges(seed, i).charges);
  const metrics = await metricsByCode(ctx.em, checked.flat().map((c) => c.metric));
  const errors: FieldError[] = [];
  const bySlug = new Map<string, PlanCharge[]>();
  checked.forEach((charges, i) => {
    bySlug.set(seeds[i].slug, charges.map((charge, j) => {
      const metric = metrics.get(charge.metric);
      if (!metric) errors.push({ field: `[${i}].charges[${j}].metric`, message: `no billable metric "${charge.metric}" exists (billing-admin metrics list)` });
      else if (metric.status !== 'active' && seeds[i].status !== 'archived') errors.push({ field: `[${i}].charges[${j}].metric`, message: `billable metric "${charge.metric}" is archived` });
      return { metric: charge.metric, metric_name: metric?.name ?? charge.metric, model: charge.model, properties: charge.properties };
    }));
  });
  return { bySlug, errors };
}

/**
 * Creates or updates plans by slug from a seed file's array; running it twice changes nothing
 * the second time. Everything is validated before anything is written.
 */
export async function seedPlans(ctx: DataContext, seeds: unknown): Promise<SeedResult> {
  if (!Array.isArray(seeds)) throw new ValidationError([{ field: '', message: 'the file must hold an array of plans' }]);
  const errors = seeds.flatMap((s, i) => validate(s as PlanSeed, i));
  if (errors.length > 0) throw new ValidationError(errors, 'The plans file is not valid.');
  const charges = await chargesWithMetrics(ctx, seeds as PlanSeed[]);
  if (charges.errors.length > 0) throw new ValidationError(charges.errors, 'The plans file is not valid.');

  const result: SeedResult = { created: [], updated: [], unchanged: [] };
  const now = ctx.clock.now();
  const existing = new Map((await ctx.em.find(Plan, { slug: { $in: seeds.map((s: PlanSeed) => s.slug) } })).map((p) => [p.slug, p]));
  for (const seed of seeds as PlanSeed[]) {
    const values = {
      name: seed.name,
      description: seed.description ?? '',
      price: money(parseAmountInput(seed.price, seed.currency ?? 'IDR')),
      currency: seed.currency ?? 'IDR',
      interval: seed.interval ?? 1,
      intervalUnit: seed.interval_unit ?? 'month',
      trialPeriodDays: seed.trial_period_days ?? 0,
      maxCycles: seed.max_cycles ?? 0,
      features: seed.features ?? {},
      sortOrder: seed.sort_order ?? 0,
      taxBehavior: seed.tax_behavior ?? 'none',
      perUnit: seed.per_unit ?? false,
      charges: charges.bySlug.get(seed.slug)!,
    } satisfies Partial<Plan>;
    const status = seed.status ?? 'active';
    const plan = existing.get(seed.slug);
    if (!plan) {
      // Created in the entity's initial status, then moved like any other plan.
      movePlanTo(ctx.em.create(Plan, { slug: seed.slug, ...values } as Plan), status, now);
      result.created.push(seed.slug);
      continue;
    }
    const changed =
      plan.status !== status ||
      (Object.keys(values) as (keyof typeof values)[]).some((k) => canonicalJson(plan[k] ?? null) !== canonicalJson(values[k]));
    if (changed) {
      ctx.em.assign(plan, values);
      movePlanTo(plan, status, now);
      result.updated.push(seed.slug);
    } else {
      result.unchanged.push(seed.slug);
    }
  }
  await ctx.em.flush();
  return result;
}
