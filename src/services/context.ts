import type { EntityManager } from '@mikro-orm/knex';
import type { Config } from '../config.js';
import type { Clock } from '../domain/clock.js';
import type { PaymentGateway } from '../gateway/types.js';

/**
 * What every use case receives: its own entity manager (a request context or a fork), the
 * configuration, the gateway and the clock. No global container.
 */
export interface ServiceContext {
  em: EntityManager;
  config: Config;
  gateway: PaymentGateway;
  clock: Clock;
}

/** The slice of a context that reads and writes need without the gateway (CLI, seeds). */
export type DataContext = Pick<ServiceContext, 'em' | 'config' | 'clock'>;
