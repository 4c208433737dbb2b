import { getPlanBySlug } from '../../services/plans/get-plan.js';
import { listPlans } from '../../services/plans/list-plans.js';
import type { OperationHandlers } from '../operations.js';
import { envelope, pageRequest } from '../pagination.js';
import { serializePlan } from '../serializers.js';

export const planHandlers: OperationHandlers = {
  async listPlans({ koa, query, user, services }) {
    const page = pageRequest(query);
    const result = await listPlans(
      services,
      user,
      { status: query.status, intervalUnit: query.interval_unit, currency: query.currency, search: query.search, ordering: query.ordering },
      page,
    );
    return { status: 200, body: envelope(koa, result, page, serializePlan) };
  },

  async getPlan({ path, user, services }) {
    return { status: 200, body: serializePlan(await getPlanBySlug(services, user, path.slug)) };
  },
};
