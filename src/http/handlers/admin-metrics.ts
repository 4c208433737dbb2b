import { findMetric } from '../../services/usage/find-metric.js';
import { archiveMetric, createMetric, listMetrics } from '../../services/usage/manage-metrics.js';
import { staffActor } from '../auth/staff-gate.js';
import { serializeMetric } from '../metric-serializers.js';
import type { OperationHandlers } from '../operations.js';
import { envelope, pageRequest } from '../pagination.js';

/**
 * Billable metrics made, looked up and archived by staff (/admin/metrics/); every change is
 * audited with the staff actor.
 */
export const adminMetricHandlers: OperationHandlers = {
  async adminListMetrics(req) {
    const page = pageRequest(req.query);
    const found = await listMetrics(req.services, { active: req.query.active }, page);
    return { status: 200, body: envelope(req.koa, found, page, serializeMetric) };
  },

  async adminCreateMetric(req) {
    const b = req.body;
    const metric = await createMetric(req.services, staffActor(req.koa), {
      code: b.code,
      name: b.name,
      description: b.description,
      aggregation: b.aggregation,
      field: b.field,
      filters: b.filters,
      reason: b.reason,
    });
    return { status: 201, body: serializeMetric(metric) };
  },

  async adminGetMetric(req) {
    return { status: 200, body: serializeMetric(await findMetric(req.services, req.path.metric)) };
  },

  async adminArchiveMetric(req) {
    return { status: 200, body: serializeMetric(await archiveMetric(req.services, staffActor(req.koa), req.path.metric, req.body.reason)) };
  },
};
