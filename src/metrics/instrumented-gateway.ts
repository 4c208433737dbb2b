import { GatewayError } from '../gateway/errors.js';
import type { PaymentGateway } from '../gateway/types.js';
import type { ServiceMetrics } from './service-metrics.js';

const ENDPOINTS: Record<keyof PaymentGateway, string> = {
  charge: 'charge',
  status: 'status',
  cancel: 'cancel',
  expire: 'expire',
  refund: 'refund',
  directRefund: 'direct_refund',
};

/** The gateway with every call timed and counted by endpoint and outcome (`ok` or the GatewayError kind). */
export function instrumentGateway(gateway: PaymentGateway, metrics: ServiceMetrics): PaymentGateway {
  const timed =
    <A extends unknown[], R>(endpoint: string, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const started = process.hrtime.bigint();
      let outcome = 'ok';
      try {
        return await call(...args);
      } catch (err) {
        outcome = err instanceof GatewayError ? err.kind : 'error';
        throw err;
      } finally {
        metrics.gatewayCalls.labels(endpoint, outcome).observe(Number(process.hrtime.bigint() - started) / 1e9);
      }
    };
  return {
    charge: timed(ENDPOINTS.charge, (req) => gateway.charge(req)),
    status: timed(ENDPOINTS.status, (orderId) => gateway.status(orderId)),
    cancel: timed(ENDPOINTS.cancel, (orderId) => gateway.cancel(orderId)),
    expire: timed(ENDPOINTS.expire, (orderId) => gateway.expire(orderId)),
    refund: timed(ENDPOINTS.refund, (req) => gateway.refund(req)),
    directRefund: timed(ENDPOINTS.directRefund, (req) => gateway.directRefund(req)),
  };
}
