import type { BillableMetric } from '../db/entities/billable-metric.js';
import { auditedMetric } from '../services/usage/manage-metrics.js';
import type { components } from './generated/openapi.js';

/** A billable metric as the staff API and `billing-admin metrics` show it: its audited terms, with its id and creation time. */
export function serializeMetric(m: BillableMetric): components['schemas']['BillableMetric'] {
  return { id: m.id, ...auditedMetric(m), created_at: m.createdAt.toISOString() };
}
