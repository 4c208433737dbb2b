import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import { isPostgres, takeSqliteWriteLock } from '../../db/dialect.js';
import { hotRows } from '../../db/hot-sql.js';
import { toDate } from '../../db/row-fields.js';
import type { SubscriptionStatus } from '../../db/entities/subscription.js';
import { DomainError, UsageEventRefusedError, ValidationError, type FieldError, type UsageEventRefusal } from '../../domain/errors.js';
import { MAX_EVENT_VALUE_TEXT, NUMERIC_AGGREGATIONS, matchesFilters, readUnits, type MetricAggregation, type UnitsRefusal } from '../../domain/usage/aggregation.js';
import type { PlanCharge } from '../../domain/usage/charge-models.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import type { DataContext } from '../context.js';
import { findCustomerIds } from '../users/find-customer.js';
import { eventKey, eventStore, type PreparedEvent } from './event-store.js';

/*
 * Usage events in (POST /events/ and /events/batch/, docs/usage.md): each event is validated,
 * attributed to its customer's live subscription whose plan charges the metric, valued, and
 * stored through the event store, all of a request or none of it, in one transaction. Per
 * request, whatever its size: one query for the customers, one for the metrics, one for the
 * subscriptions, then the store's bulk statements (no entity per event).
 */

export interface UsageEventInput {
  transaction_id: string;
  customer: string;
  code: string;
  /** RFC 3339 text or integer Unix seconds; omitted: the time of arrival. */
  timestamp?: string | number;
  properties?: Record<string, unknown>;
}

export interface IngestedEvent {
  transactionId: string;
  customerId: string;
  code: string;
  timestamp: Date;
  subscriptionId: string;
  duplicate: boolean;
}

export interface IngestResult {
  events: IngestedEvent[];
  /** Events recorded now. */
  accepted: number;
  /** Events already recorded (earlier, or earlier in this batch): counted once. */
  duplicates: number;
}

/** How far ahead of the service's clock a timestamp may be. */
export const FUTURE_TOLERANCE_MS = 5 * 60_000;
/** The longest unique_count value. */
const MAX_UNIQUE_VALUE_LENGTH = 200;
const METERED_STATUSES: ReadonlySet<SubscriptionStatus> = new Set(['trialing', 'active', 'past_due']);

interface MetricRow {
  id: string;
  code: string;
  aggregation: MetricAggregation;
  field: string | null;
  filters: Record<string, string[]> | null;
  status: string;
}

interface SubscriptionRow {
  id: string;
  liveUserId: string;
  status: SubscriptionStatus;
  currentPeriodStart: Date | null;
  currentPeriodEnd: Date | null;
  usageBilledUntil: Date | null;
  /** The period is its last: usage at or after its end is never billed. */
  ending: boolean;
  charged: Set<string>;
  /** A plan change scheduled for the period's end: the metrics the next plan charges (null: none scheduled). */
  chargedNext: Set<string> | null;
}

const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;

/** Canonical JSON: object keys sorted at every level, so that the same body always hashes alike. */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const object = value as Record<string, unknown>;
  return `{${Object.keys(object)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(object[k])}`)
    .join(',')}}`;
}

/** One statement's list parameter: an array on PostgreSQL, JSON text for SQLite's json_each. */
const listParam = (em: EntityManager, values: string[]): unknown => (isPostgres(em) ? values : JSON.stringify(values));
const inList = (em: EntityManager, column: string, type: string): string => (isPostgres(em) ? `${column} = any(?::${type}[])` : `${column} in (select value from json_each(?))`);

async function metricsByCode(em: EntityManager, codes: string[]): Promise<Map<string, MetricRow>> {
  const rows = await hotRows<Record<string, unknown>>(em, `select id, code, aggregation, field, filters, status from billable_metrics where ${inList(em, 'code', 'text')}`, [listParam(em, codes)]);
  return new Map(
    rows.map((r) => [
      String(r.code),
      { id: String(r.id), code: String(r.code), aggregation: r.aggregation as MetricAggregation, field: (r.field as string | null) ?? null, filters: json(r.filters ?? null), status: String(r.status) },
    ]),
  );
}

/**
 * The live subscriptions of these customers with their plans' charged metrics. On PostgreSQL
 * the rows are share-locked until the transaction ends: a billing pass that locks a
 * subscription to invoice its usage waits for the events being recorded for it, and these
 * events, once it has moved usageBilledUntil on, are judged against the new value.
 */
async function liveSubscriptions(em: EntityManager, customerIds: string[]): Promise<Map<string, SubscriptionRow>> {
  const rows = await hotRows<Record<string, unknown>>(
    em,
    `select s.id, s.live_user_id, s.status, s.current_period_start, s.current_period_end, s.usage_billed_until, s.cancel_at_period_end, s.cycles_completed, p.charges, p.max_cycles, np.charges as next_charges
       from subscriptions s join plans p on p.id = s.plan_id left join plans np on np.id = s.pending_plan_id where ${inList(em, 's.live_user_id', 'text')}${isPostgres(em) ? ' for share of s' : ''}`,
    [listParam(em, customerIds)],
  );
  const out = new Map<string, SubscriptionRow>();
  for (const r of rows) {
    const status = r.status as SubscriptionStatus;
    const maxCycles = Number(r.max_cycles);
    const cancelAtPeriodEnd = r.cancel_at_period_end === true || r.cancel_at_period_end === 1;
    out.set(String(r.live_user_id), {
      id: String(r.id),
      liveUserId: String(r.live_user_id),
      status,
      currentPeriodStart: toDate(r.current_period_start),
      currentPeriodEnd: toDate(r.current_period_end),
      usageBilledUntil: toDate(r.usage_billed_until),
      // As the billing pass decides at the period's end (billing-actions.ts): cancel, or expire at max_cycles.
      ending: cancelAtPeriodEnd || (maxCycles > 0 && Number(r.cycles_completed) >= maxCycles && status !== 'trialing'),
      charged: new Set(json<PlanCharge[]>(r.charges ?? []).map((c) => c.metric)),
      chargedNext: r.next_charges === null || r.next_charges === undefined ? null : new Set(json<PlanCharge[]>(r.next_charges).map((c) => c.metric)),
    });
  }
  return out;
}

/** An event parsed without the database: its time, what it hashes to. */
interface Parsed {
  input: UsageEventInput;
  timestamp: Date | null;
  properties: Record<string, unknown>;
  propertiesJson: string;
  bodyHash: string;
}

function parse(input: UsageEventInput, now: Date): Parsed {
  const properties = input.properties ?? {};
  const propertiesJson = canonicalJson(properties);
  const sent = input.timestamp ?? null;
  let timestamp: Date | null = now;
  if (typeof sent === 'number') timestamp = Number.isSafeInteger(sent) ? new Date(sent * 1000) : null;
  else if (typeof sent === 'string') timestamp = Number.isNaN(Date.parse(sent)) ? null : new Date(Date.parse(sent));
  const bodyHash = createHash('sha256').update(`${input.code}\u0000${canonicalJson(sent)}\u0000${propertiesJson}`).digest('base64url');
  return { input, timestamp, properties, propertiesJson, bodyHash };
}

/** Each refusal of an event's value says what is wrong with it. */
const UNITS_MESSAGES: Record<UnitsRefusal, string> = {
  not_a_number: 'must be a number, or a decimal string with at most 6 decimal places',
  too_many_decimals: 'may have at most 6 decimal places',
  too_large: `is too large: an event's value is at most ${MAX_EVENT_VALUE_TEXT} in magnitude`,
};

interface Refusal {
  code: UsageEventRefusal;
  index: number;
  error: FieldError;
}

/** The event's value for its metric, or a field error (sum, max, latest: a number; unique_count: a short text). */
function valueOf(metric: MetricRow, properties: Record<string, unknown>, field: (name: string) => string): { valueMicro: bigint | null; uniqueValue: string | null } | FieldError {
  if (metric.field === null || metric.aggregation === 'count') return { valueMicro: null, uniqueValue: null };
  const raw = properties[metric.field];
  if (NUMERIC_AGGREGATIONS.includes(metric.aggregation)) {
    const read = readUnits(raw);
    if ('refused' in read) return { field: field(`properties.${metric.field}`), message: UNITS_MESSAGES[read.refused] };
    return { valueMicro: read.micro, uniqueValue: null };
  }
  const text = typeof raw === 'string' ? raw : typeof raw === 'number' && Number.isFinite(raw) ? String(raw) : null;
  if (text === null || text.length > MAX_UNIQUE_VALUE_LENGTH) {
    return { field: field(`properties.${metric.field}`), message: `must be a string or a number of at most ${MAX_UNIQUE_VALUE_LENGTH} characters` };
  }
  return { valueMicro: null, uniqueValue: text };
}

const iso = (d: Date) => d.toISOString();

/**
 * Records usage events, all or none. `batch`: fields are named `events[i].<field>`, else
 * `<field>`. Throws ValidationError (400) naming every invalid field, NotFound-coded
 * DomainError (404) for customers that do not exist, UsageEventRefusedError (422) naming every
 * refused event, or a `conflict` DomainError (409) naming every event whose transaction_id
 * holds another body.
 */
export async function ingestEvents(ctx: Pick<DataContext, 'em' | 'clock'>, inputs: readonly UsageEventInput[], opts: { batch: boolean }): Promise<IngestResult> {
  const field = (i: number) => (name: string) => (opts.batch ? `events[${i}].${name}` : name);
  const now = ctx.clock.now();
  const parsed = inputs.map((input) => parse(input, now));

  return retryingTransaction(ctx.em, async (em) => {
    // SQLite: the write lock first, so that what is read below stays true until the commit.
    await takeSqliteWriteLock(em, 'usage_event_keys');
    const customerRefs = [...new Set(inputs.map((e) => e.customer))];
    const codes = [...new Set(inputs.map((e) => e.code))];
    const customers = await findCustomerIds(em, customerRefs);
    const metrics = await metricsByCode(em, codes);
    const subscriptions = await liveSubscriptions(em, [...new Set(customers.values())]);

    const invalid: FieldError[] = [];
    const unknownCustomers: FieldError[] = [];
    const refusals: Refusal[] = [];
    const prepared: (PreparedEvent | null)[] = parsed.map((p, i) => {
      const f = field(i);
      const refuse = (code: UsageEventRefusal, name: string, message: string) => void refusals.push({ code, index: i, error: { field: f(name), message } });
      if (p.timestamp === null) return void invalid.push({ field: f('timestamp'), message: 'must be an RFC 3339 time or integer Unix seconds' }), null;
      const customerId = customers.get(p.input.customer);
      if (customerId === undefined) return void unknownCustomers.push({ field: f('customer'), message: `Customer "${p.input.customer}" not found.` }), null;
      const metric = metrics.get(p.input.code);
      if (!metric || metric.status !== 'active') return refuse('unknown_metric', 'code', `No active metric has the code "${p.input.code}".`), null;
      const counted = matchesFilters(metric.filters, p.properties);
      // An event the filters leave out counts for nothing: its value is neither read nor required.
      const value = counted ? valueOf(metric, p.properties, f) : { valueMicro: null, uniqueValue: null };
      if ('field' in value) return void invalid.push(value), null;
      const at = p.timestamp.getTime();
      if (at > now.getTime() + FUTURE_TOLERANCE_MS) {
        return refuse('event_in_future', 'timestamp', `The timestamp ${iso(p.timestamp)} is more than 5 minutes ahead of the service's clock.`), null;
      }
      const sub = subscriptions.get(customerId);
      const openFrom = sub ? (sub.usageBilledUntil ?? sub.currentPeriodStart) : null;
      if (!sub || !METERED_STATUSES.has(sub.status) || !sub.charged.has(metric.code) || openFrom === null) {
        return refuse('no_metered_subscription', 'customer', `Customer "${p.input.customer}" has no live subscription whose plan charges "${metric.code}".`), null;
      }
      if (at < openFrom.getTime()) return refuse('period_closed', 'timestamp', `The usage before ${iso(openFrom)} is already invoiced.`), null;
      if (sub.ending && sub.currentPeriodEnd !== null && at >= sub.currentPeriodEnd.getTime()) {
        return refuse('period_closed', 'timestamp', `The subscription ends at ${iso(sub.currentPeriodEnd)}; no usage after it is billed.`), null;
      }
      // The plan scheduled from the period's end does not charge this metric: nothing would bill it.
      if (sub.chargedNext && !sub.chargedNext.has(metric.code) && sub.currentPeriodEnd !== null && at >= sub.currentPeriodEnd.getTime()) {
        return refuse('period_closed', 'timestamp', `From ${iso(sub.currentPeriodEnd)} the subscription's plan does not charge "${metric.code}".`), null;
      }
      return {
        customerId,
        transactionId: p.input.transaction_id,
        bodyHash: p.bodyHash,
        subscriptionId: sub.id,
        metricId: metric.id,
        timestamp: p.timestamp,
        ...value,
        counted,
        properties: p.propertiesJson,
        receivedAt: now,
      };
    });

    if (invalid.length > 0) throw new ValidationError(invalid, `The request has ${invalid.length} invalid field${invalid.length === 1 ? '' : 's'}.`);
    if (unknownCustomers.length > 0) throw new DomainError('not_found', unknownCustomers[0].message, unknownCustomers);

    // An event recorded earlier and refused now (its window has been invoiced since, its metric
    // archived) is the same event sent again: a duplicate, not a refusal. Read only when
    // something is refused.
    const earlier = new Map<number, string>();
    if (refusals.length > 0) {
      const known = refusals.filter((r) => customers.has(parsed[r.index].input.customer));
      const stored = await eventStore.storedKeys(
        em,
        known.map((r) => ({ customerId: customers.get(parsed[r.index].input.customer)!, transactionId: parsed[r.index].input.transaction_id })),
      );
      for (const r of known) {
        const p = parsed[r.index];
        const hit = stored.get(eventKey(customers.get(p.input.customer)!, p.input.transaction_id));
        if (hit && hit.bodyHash === p.bodyHash) earlier.set(r.index, hit.subscriptionId);
      }
      const refused = refusals.filter((r) => !earlier.has(r.index));
      if (refused.length > 0) {
        throw new UsageEventRefusedError(
          refused[0].code,
          refused[0].error.message,
          refused.map((r) => r.error),
        );
      }
    }

    const toStore = prepared.filter((e): e is PreparedEvent => e !== null);
    const outcomes = await eventStore.insert(em, toStore);
    const conflicts = toStore
      .map((e, k) => ({ e, k }))
      .filter(({ k }) => outcomes[k] === 'conflict')
      .map(({ e }) => {
        const i = prepared.indexOf(e);
        return { field: field(i)('transaction_id'), message: `Another event was recorded under transaction_id "${e.transactionId}" for this customer.` };
      });
    if (conflicts.length > 0) throw new DomainError('conflict', conflicts[0].message, conflicts);

    const outcomeOf = new Map(toStore.map((e, k) => [e, outcomes[k]]));
    const events = parsed.map((p, i): IngestedEvent => {
      const e = prepared[i];
      return {
        transactionId: p.input.transaction_id,
        customerId: e?.customerId ?? customers.get(p.input.customer)!,
        code: p.input.code,
        timestamp: p.timestamp!,
        subscriptionId: e?.subscriptionId ?? earlier.get(i)!,
        duplicate: e === null || outcomeOf.get(e) === 'duplicate',
      };
    });
    const accepted = events.filter((e) => !e.duplicate).length;
    return { events, accepted, duplicates: events.length - accepted };
  });
}
