import { GatewayError } from '../../gateway/errors.js';
import { consoleLogger } from '../../logger.js';
import type { ServiceContext } from '../context.js';

/*
 * The gateway made an order (a virtual account, a card capture) but what it answered could not
 * be written: a full disk, a database gone mid-request. The request is answered with an error,
 * so the customer believes nothing happened and tries again; an order left payable would take
 * their money twice. It is canceled at the gateway before the error goes on: a pending order,
 * a capture before its settlement and a pre-authorisation can all be voided.
 *
 * Nothing is written here (the database is what failed). The local row stays as committed before
 * the charge (pending); the gateway's notification of the cancel, retried until the database
 * answers again, or `payments sync`, closes it.
 */

/** Cancels an order whose answer was not recorded. Best effort: a gateway that cannot be reached is named in a warning. */
export async function cancelUnrecordedOrder(ctx: Pick<ServiceContext, 'gateway'>, orderId: string): Promise<void> {
  try {
    await ctx.gateway.cancel(orderId);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    // Unknown to the gateway, or already final there (denied, expired): nothing is payable.
    if (err.kind === 'not_found' || err.kind === 'cannot_modify') return;
    consoleLogger.warn('order left at the gateway: its answer was not recorded and its cancel failed; payments sync asks again', {
      order_id: orderId,
      error: `gateway ${err.kind}: ${err.message}`,
    });
  }
}

/**
 * Runs the writes that record a gateway's answer about `orderId`; when they throw, the order is
 * canceled at the gateway and the error rethrown (the request answers it, a 503 for a database
 * that cannot be used). Only for writes before the answer is applied: once money is credited
 * for an order, that order must stand.
 */
export async function recordOrCancel<T>(ctx: Pick<ServiceContext, 'gateway'>, orderId: string, record: () => Promise<T>): Promise<T> {
  try {
    return await record();
  } catch (err) {
    await cancelUnrecordedOrder(ctx, orderId);
    throw err;
  }
}
