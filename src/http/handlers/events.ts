import { ingestEvents } from '../../services/usage/ingest-events.js';
import type { OperationHandlers } from '../operations.js';

/** Usage events in (docs/usage.md): POST /events/ and /events/batch/, with an `events` or `write` key (api.ts). */
export const eventHandlers: OperationHandlers = {
  async sendUsageEvent(req) {
    const [event] = (await ingestEvents(req.services, [req.body], { batch: false })).events;
    return {
      status: 202,
      body: {
        transaction_id: event.transactionId,
        customer: event.customerId,
        code: event.code,
        timestamp: event.timestamp.toISOString(),
        subscription: event.subscriptionId,
        duplicate: event.duplicate,
      },
    };
  },

  async sendUsageEventBatch(req) {
    const { accepted, duplicates } = await ingestEvents(req.services, req.body.events, { batch: true });
    return { status: 202, body: { accepted, duplicates } };
  },
};
