import { afterEach, describe, expect, it } from 'vitest';
import { DATABASES } from '../../helpers/database.js';
import { parsePrometheusText, sampleValue } from '../../helpers/prometheus-text.js';
import { iso, startBilling, type BillingHarness } from '../../helpers/billing.js';

async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > until) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.each(DATABASES)('in-server billing scheduler (%s)', (kind) => {
  let h: BillingHarness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('renews due subscriptions on its own every BILLING_SCHEDULER_INTERVAL seconds', async () => {
    h = await startBilling(kind, undefined, { BILLING_SCHEDULER_INTERVAL: '1' });
    const user = await h.user();
    await h.fund(user, '100000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    const renewed = await eventually(() => h!.sub(sub.id), (s) => s.cyclesCompleted === 2);
    expect(renewed.cyclesCompleted).toBe(2);
    expect(iso(renewed.currentPeriodEnd)).toBe('2027-03-31T10:00:00.000Z');

    // GET /metrics counts the passes and what they did.
    const { metrics } = h.server.running.billing;
    const counted = await eventually(
      async () => parsePrometheusText(await metrics.registry.metrics()),
      (m) => sampleValue(m, 'billing_billing_run_outcomes_total', { outcome: 'renewed' }) >= 1,
    );
    expect(sampleValue(counted, 'billing_billing_run_outcomes_total', { outcome: 'renewed' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(counted, 'billing_billing_runs_total', { result: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(counted, 'billing_billing_runs_total', { result: 'failed' })).toBe(0);
  });

  it('is off by default', async () => {
    h = await startBilling(kind);
    const user = await h.user();
    await h.fund(user, '100000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    await new Promise((r) => setTimeout(r, 1500));
    expect((await h.sub(sub.id)).cyclesCompleted).toBe(1);
  });
});
