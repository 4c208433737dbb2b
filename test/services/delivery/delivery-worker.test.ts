import { describe, expect, it } from 'vitest';
import { quietLogger } from '../../../src/logger.js';
import { startDeliveryWorker } from '../../../src/services/delivery/delivery-worker.js';
import { deliveryConfig, deliveryHarness, entry, recordEvent } from '../../helpers/delivery.js';
import { DATABASES } from '../../helpers/database.js';

describe.each(DATABASES)('the delivery worker on %s', (kind) => {
  const h = deliveryHarness(kind);
  const start = (env: Record<string, string>) =>
    startDeliveryWorker({ orm: h.store.orm, config: deliveryConfig(h.store.db.url, env), clock: h.clock, logger: quietLogger });

  it('does not start without SMTP_URL or OUTBOUND_WEBHOOK_URL, or with an interval of 0', () => {
    expect(start({})).toBeNull();
    expect(start({ SMTP_URL: h.smtp.url, DELIVERY_INTERVAL_SECONDS: '0' })).toBeNull();
  });

  it('stops without starting new sends: the send under way finishes, the rest stay queued for the next process', async () => {
    h.receiver.behaviour = 'hang';
    const user = await h.user();
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const entries = await recordEvent(h.store.orm, h.config, h.clock, user, 'subscription_renewed', { plan_name: 'Pro', n: i });
      ids.push(entries.find((n) => n.channel === 'webhook')!.id);
    }
    const worker = start({ OUTBOUND_WEBHOOK_URL: h.receiver.url, OUTBOUND_WEBHOOK_TIMEOUT_MS: '500', DELIVERY_INTERVAL_SECONDS: '3600' })!;
    const pass = worker.runNow();
    while (h.receiver.posts.length === 0) await new Promise((r) => setTimeout(r, 10));
    await worker.stop();
    const report = await pass;

    // Four lanes were each waiting on the hanging receiver; nothing else was claimed after stop.
    expect(report.retrying.length).toBe(h.receiver.posts.length);
    expect(report.retrying.length).toBeLessThanOrEqual(4);
    const states = await Promise.all(ids.map((id) => entry(h.store.orm, id)));
    expect(states.filter((n) => n.attempts === 1).map((n) => n.id).sort()).toEqual([...report.retrying].sort());
    expect(states.filter((n) => n.attempts === 0).length).toBe(8 - report.retrying.length);
    expect(states.every((n) => n.status === 'queued')).toBe(true);
  });
});
