import { ValidationError } from '../../domain/errors.js';
import type { InvalidLogQuota } from '../../services/gateway-events/invalid-notification-quota.js';
import type { DroppedNotification, NotificationOutcome } from '../../services/gateway-events/process-notification.js';
import { receiveGatewayNotification } from '../../services/gateway-events/receive-gateway-notification.js';
import { confirmTrialCardOfNotification } from '../../services/subscriptions/confirm-trial-card.js';
import { clientIp } from '../auth/authenticate.js';
import type { OperationHandlers, OperationResult, Schemas } from '../operations.js';

type Ack = Schemas['WebhookAck'];

// The contract documents 403 and 503 with the acknowledgement body; handler types admit only
// success statuses, so those two are built here.
function ack(status: 200 | 403 | 503, body: Ack): OperationResult<'receiveGatewayNotification'> {
  return { status, body } as unknown as OperationResult<'receiveGatewayNotification'>;
}

/** An invalid notification its source's quota left unlogged: the same answer, with no log to name. */
function answerDropped(outcome: DroppedNotification): OperationResult<'receiveGatewayNotification'> {
  if (outcome.result === 'invalid') return ack(403, { status: 'invalid', webhook_log_id: null });
  throw new ValidationError(
    [{ field: 'body', message: outcome.error }],
    'The notification is not readable; it was not logged (too many invalid notifications from this source in the last minute).',
  );
}

function answer(outcome: NotificationOutcome): OperationResult<'receiveGatewayNotification'> {
  const id = outcome.log.id;
  switch (outcome.result) {
    case 'processed':
      return ack(200, { status: 'ok', webhook_log_id: id });
    case 'duplicate':
      return ack(200, { status: 'duplicate', webhook_log_id: id });
    case 'invalid':
      return ack(403, { status: 'invalid', webhook_log_id: id });
    case 'unreadable':
      throw new ValidationError([{ field: 'body', message: outcome.error ?? 'not readable' }], `The notification is not readable; it was logged as webhook log ${id}.`);
    case 'skipped':
      // A concurrent attempt (a replay) settled this very log first: answer what it became.
      return outcome.log.status === 'processed' ? ack(200, { status: 'ok', webhook_log_id: id })
        : outcome.log.status === 'duplicate' ? ack(200, { status: 'duplicate', webhook_log_id: id })
        : outcome.log.status === 'ignored' ? ack(200, { status: 'ignored', webhook_log_id: id })
        : ack(503, { status: 'failed', webhook_log_id: id });
    case 'ignored':
      return ack(200, { status: 'ignored', webhook_log_id: id });
    case 'failed':
      return ack(503, { status: 'failed', webhook_log_id: id });
  }
}

export function webhookHandlers(invalidQuota: InvalidLogQuota): OperationHandlers {
  return {
    async receiveGatewayNotification({ koa, services }) {
      let outcome: NotificationOutcome | DroppedNotification;
      try {
        const input = { rawPayload: koa.state.rawBody ?? '', rawBytes: koa.state.rawBodyBytes, ip: clientIp(koa) };
        outcome = await receiveGatewayNotification(services, input, invalidQuota);
      } catch {
        // Not even the raw body could be committed: never acknowledge what was not saved.
        return ack(503, { status: 'failed', webhook_log_id: null });
      }
      if (outcome.log === null) return answerDropped(outcome);
      // A trial card's pre-authorisation is no payment: the pipeline signs it off as not one of
      // its orders, and its (correctly signed) news is the cue to ask the gateway about the card.
      // The gateway retries a 503, so a gateway that cannot be asked now is asked again later.
      if (outcome.result === 'ignored') {
        try {
          await confirmTrialCardOfNotification(services, outcome.log);
        } catch {
          return ack(503, { status: 'failed', webhook_log_id: outcome.log.id });
        }
      }
      return answer(outcome);
    },
  };
}
