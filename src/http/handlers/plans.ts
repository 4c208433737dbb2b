import type { EntityManager } from '@mikro-orm/knex';
import type { Context } from 'koa';
import { matchesEtag, type CatalogueCache } from '../../services/plans/catalogue-cache.js';
import { getPlanBySlug } from '../../services/plans/get-plan.js';
import { listPlans } from '../../services/plans/list-plans.js';
import type { OperationHandlers } from '../operations.js';
import { envelope, pageRequest } from '../pagination.js';
import { serializePlan } from '../serializers.js';

/**
 * A catalogue answer from the cache, as 304 when the client already holds it. The key holds
 * what the answer depends on: who looks (staff see every status) and the absolute URL (the
 * envelope's next/previous links are absolute).
 */
async function catalogueAnswer(koa: Context, staff: boolean, cache: CatalogueCache, em: EntityManager, compute: () => Promise<unknown>) {
  const key = `${staff ? 'staff' : 'public'} ${koa.protocol}://${koa.host}${koa.originalUrl}`;
  const { body, etag } = await cache.answer(em, key, compute);
  koa.set('ETag', etag);
  koa.set('Cache-Control', 'no-cache');
  koa.vary('Authorization');
  koa.vary('Cookie');
  if (matchesEtag(koa.get('if-none-match') || undefined, etag)) return { status: 304 as const, body: undefined };
  return { status: 200 as const, body: body as never };
}

export function planHandlers(cache: CatalogueCache): OperationHandlers {
  return {
    async listPlans({ koa, query, user, services }) {
      return catalogueAnswer(koa, Boolean(user?.isStaff), cache, services.em, async () => {
        const page = pageRequest(query);
        const filters = { status: query.status, intervalUnit: query.interval_unit, currency: query.currency, search: query.search, ordering: query.ordering };
        return envelope(koa, await listPlans(services, user, filters, page), page, serializePlan);
      });
    },

    async getPlan({ koa, path, user, services }) {
      return catalogueAnswer(koa, Boolean(user?.isStaff), cache, services.em, async () => serializePlan(await getPlanBySlug(services, user, path.slug)));
    },
  };
}
