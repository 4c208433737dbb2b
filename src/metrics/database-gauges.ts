import type { EntityManager } from '@mikro-orm/knex';
import { Notification } from '../db/entities/notification.js';
import type { Orm } from '../db/orm.js';
import type { Clock } from '../domain/clock.js';
import { verifyWallets } from '../services/wallet/verify-wallets.js';
import type { ServiceMetrics } from './service-metrics.js';

const DELIVERY_CHANNELS = ['email', 'webhook'] as const;

/**
 * Gauges read from the database when Prometheus scrapes: the delivery queue (entries waiting to
 * be sent, and the age of the oldest), and the wallet check of `billing-admin wallet verify`,
 * re-run at most every `walletVerifySeconds` because it reads every ledger. A scrape during a
 * database outage still answers: `billing_metrics_database_up` drops to 0 and the database
 * gauges keep their last values.
 */
export function registerDatabaseGauges(metrics: ServiceMetrics, deps: { orm: Orm; clock: Clock; walletVerifySeconds: number }): void {
  const em = () => deps.orm.em.fork() as EntityManager;
  let databaseUp = 1;

  metrics.gauge('billing_metrics_database_up', 'Whether the last scrape could read the database (1) or not (0)', [], async (g) => g.set(databaseUp));

  metrics.gauge('billing_delivery_queue_depth', 'Email and webhook notification entries waiting to be delivered, by channel', ['channel'], async (g) => {
    try {
      for (const channel of DELIVERY_CHANNELS) g.labels(channel).set(await em().count(Notification, { channel, status: 'queued' }));
      databaseUp = 1;
    } catch {
      databaseUp = 0;
    }
  });

  metrics.gauge('billing_delivery_queue_oldest_age_seconds', 'Age of the oldest entry waiting to be delivered, by channel (0 when none waits)', ['channel'], async (g) => {
    try {
      for (const channel of DELIVERY_CHANNELS) {
        const oldest = await em().findOne(Notification, { channel, status: 'queued' }, { orderBy: { createdAt: 'asc' }, fields: ['createdAt'] });
        g.labels(channel).set(oldest ? Math.max(0, (deps.clock.now().getTime() - oldest.createdAt.getTime()) / 1000) : 0);
      }
    } catch {
      databaseUp = 0;
    }
  });

  let verified: { at: number; ok: boolean; discrepancies: number } | null = null;
  let verifying: Promise<void> | null = null;
  const verify = async () => {
    if (verified && Date.now() - verified.at < deps.walletVerifySeconds * 1000) return;
    verifying ??= verifyWallets({ em: em() })
      .then((v) => void (verified = { at: Date.now(), ok: v.ok, discrepancies: v.discrepancies.length }))
      .catch(() => void (databaseUp = 0))
      .finally(() => (verifying = null));
    await verifying;
  };
  metrics.gauge('billing_wallet_verify_ok', 'Whether every wallet balance matches its ledger (1) or not (0), as `billing-admin wallet verify` checks', [], async (g) => {
    await verify();
    if (verified) g.set(verified.ok ? 1 : 0);
  });
  metrics.gauge('billing_wallet_verify_discrepancies', 'Wallets whose balance does not match their ledger at the last check', [], async (g) => {
    await verify();
    if (verified) g.set(verified.discrepancies);
  });
  metrics.gauge('billing_wallet_verify_timestamp_seconds', 'When the wallets were last checked (Unix time)', [], async (g) => {
    await verify();
    if (verified) g.set(verified.at / 1000);
  });
}
