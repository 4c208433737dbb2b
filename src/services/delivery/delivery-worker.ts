import type { Config } from '../../config.js';
import type { Orm } from '../../db/orm.js';
import type { Clock } from '../../domain/clock.js';
import type { Logger } from '../../logger.js';
import type { RenderPdf } from '../documents/document-renderer.js';
import { closeDeliveryChannels, createDeliveryChannels } from './channels.js';
import { loggableMessage } from '../../db/loggable-error.js';
import { deliverDueNotifications, type DeliveryReport } from './deliver-due-notifications.js';

/** Entries one timer tick may try; the next tick carries on, so a backlog never blocks shutdown for long. */
const PER_TICK = 200;

export interface DeliveryWorker {
  /** Runs a pass now (after the one in progress, if any). */
  runNow(): Promise<DeliveryReport>;
  /** Stops the timer, lets the sends under way finish, and starts no more. */
  stop(): Promise<void>;
}

/**
 * The server's background sender: a delivery pass every DELIVERY_INTERVAL_SECONDS, one pass at a
 * time in this process (other processes may run theirs; entries are claimed). Returns null when
 * neither SMTP_URL nor OUTBOUND_WEBHOOK_URL is set, or the interval is 0.
 */
export function startDeliveryWorker(deps: { orm: Orm; config: Config; clock: Clock; logger: Logger; renderPdf?: RenderPdf }): DeliveryWorker | null {
  const { orm, config, clock, logger, renderPdf } = deps;
  if (!(config.smtpUrl || config.outboundWebhookUrl) || config.deliveryIntervalSeconds <= 0) return null;
  if (config.outboundWebhookUrl && !config.outboundWebhookSecret) {
    logger.warn('OUTBOUND_WEBHOOK_URL is set without OUTBOUND_WEBHOOK_SECRET: webhook entries wait (unsigned events are never sent)');
  }
  const channels = createDeliveryChannels(config);
  const stopping = new AbortController();
  let current: Promise<DeliveryReport> | null = null;

  const pass = async (): Promise<DeliveryReport> => {
    const report = await deliverDueNotifications({ em: orm.em.fork(), config, clock, channels, renderPdf }, { limit: PER_TICK, signal: stopping.signal });
    if (report.delivered.length) logger.info('notifications delivered', { delivered: report.delivered.length });
    // Each failure at warn with its reason (the SMTP or HTTP answer): an operator sees why without a query.
    for (const id of report.retrying) logger.warn('notification not delivered; retried later', { id, reason: report.errors[id] });
    for (const id of report.failed) logger.warn('notification failed for good', { id, reason: report.errors[id] });
    return report;
  };
  const run = (): Promise<DeliveryReport> => {
    const next: Promise<DeliveryReport> = (current ?? Promise.resolve()).catch(() => undefined).then(pass);
    current = next;
    void next.finally(() => {
      if (current === next) current = null;
    }).catch(() => undefined);
    return next;
  };

  const timer = setInterval(() => {
    if (current) return; // still busy with the previous tick
    run().catch((err) => logger.warn('notification delivery pass failed', { error: loggableMessage(err) }));
  }, config.deliveryIntervalSeconds * 1000);
  timer.unref();

  return {
    runNow: run,
    async stop() {
      clearInterval(timer);
      stopping.abort();
      await current?.catch(() => undefined);
      closeDeliveryChannels(channels);
    },
  };
}
