import type { BillableMetric } from '../db/entities/billable-metric.js';
import type { components } from './generated/openapi.js';

/** A billable metric as the staff API and `billing-admin metrics` show it. */
export function serializeMetric(m: BillableMetric): components['schemas']['BillableMetric'] {
  return {
    id: m.id,
    code: m.code,
    name: m.name,
    description: m.description,
    aggregation: m.aggregation,
    field: m.field,
    filters: m.filters,
    status: m.status,
    archived_at: m.archivedAt?.toISOString() ?? null,
    created_at: m.createdAt.toISOString(),
  };
}
