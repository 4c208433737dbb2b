import { checkReadiness } from '../../services/health/check-readiness.js';
import { serializeReadiness } from '../health.js';
import type { OperationHandlers } from '../operations.js';

/*
 * The probes live at the host's root (src/http/health.ts answers them there); openapi-backend
 * also routes their operations under the API mount, where they answer the same rather than 501.
 */
export const healthHandlers: OperationHandlers = {
  async getHealth() {
    return { status: 200, body: { status: 'ok' } };
  },
  async getReadiness({ services }) {
    const readiness = await checkReadiness({ em: services.em, config: services.config });
    const body = serializeReadiness(readiness);
    if (readiness.ready) return { status: 200, body };
    // NOTE: the one operation whose documented 503 carries its own body rather than a problem;
    // OperationResult admits success statuses only, hence the cast.
    return { status: 503, body } as unknown as { status: 200; body: typeof body };
  },
};
