import { EntitySchema } from '@mikro-orm/core';
import type { MetricAggregation } from '../../domain/usage/aggregation.js';
import { createdAtProperty, idProperty, updatedAtProperty } from './common.js';

export type MetricStatus = 'active' | 'archived';

/**
 * What a plan's usage charges count (docs/usage.md): the events sent with `code`, aggregated over
 * `field` of their properties, keeping those that match `filters`. Its terms never change once
 * made (an event's counted value is taken when it arrives); archived, never deleted: invoices
 * name it.
 */
export class BillableMetric {
  id!: string;
  code!: string;
  name!: string;
  description = '';
  aggregation!: MetricAggregation;
  /** The event property aggregated; null for `count`. */
  field: string | null = null;
  /** { property: [allowed values] }: an event counts only when every key matches; null counts every event. */
  filters: Record<string, string[]> | null = null;
  status: MetricStatus = 'active';
  archivedAt: Date | null = null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const BillableMetricSchema = new EntitySchema<BillableMetric>({
  class: BillableMetric,
  tableName: 'billable_metrics',
  properties: {
    id: idProperty,
    code: { type: 'string', length: 100, unique: true },
    name: { type: 'string', length: 200 },
    description: { type: 'text', default: '' },
    aggregation: { type: 'string', length: 20 },
    field: { type: 'string', length: 100, nullable: true },
    filters: { type: 'json', nullable: true },
    status: { type: 'string', length: 10, default: 'active' },
    archivedAt: { type: 'Date', nullable: true },
    createdAt: createdAtProperty,
    updatedAt: updatedAtProperty,
  },
});
