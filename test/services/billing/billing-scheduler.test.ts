import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { BILLING_PASS_LOCK_KEY } from '../../../src/services/billing/billing-scheduler.js';
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

const metricsOf = async (h: BillingHarness) => parsePrometheusText(await h.server.running.billing.metrics.registry.metrics());
const readyz = async (h: BillingHarness) => h.server.request('GET', '/readyz');

describe('BILLING_SCHEDULER_INTERVAL', () => {
  it('is 60 seconds unless told otherwise; 0 turns it off', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).billingSchedulerIntervalSeconds).toBe(60);
    expect(loadConfig({ NODE_ENV: 'test', BILLING_SCHEDULER_INTERVAL: '0' }).billingSchedulerIntervalSeconds).toBe(0);
  });
});

describe.each(DATABASES)('in-server billing scheduler (%s)', (kind) => {
  let h: BillingHarness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('renews due subscriptions on its own, with nobody running billing run, and /metrics and /readyz show the pass', async () => {
    h = await startBilling(kind, undefined, { BILLING_SCHEDULER_INTERVAL: '1' });
    const user = await h.user();
    await h.fund(user, '100000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    const renewed = await eventually(() => h!.sub(sub.id), (s) => s.cyclesCompleted === 2);
    expect(renewed.cyclesCompleted).toBe(2);
    expect(iso(renewed.currentPeriodEnd)).toBe('2027-03-31T10:00:00.000Z');

    // GET /metrics counts the passes and what they did, and when the last one ran.
    const counted = await eventually(
      () => metricsOf(h!),
      (m) => sampleValue(m, 'billing_billing_run_outcomes_total', { outcome: 'renewed' }) >= 1,
    );
    expect(sampleValue(counted, 'billing_billing_run_outcomes_total', { outcome: 'renewed' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(counted, 'billing_billing_runs_total', { result: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(counted, 'billing_billing_runs_total', { result: 'failed' })).toBe(0);
    const lastPass = sampleValue(counted, 'billing_scheduler_last_pass_timestamp_seconds');
    expect(Math.abs(lastPass - Date.now() / 1000)).toBeLessThan(60);
    expect(sampleValue(counted, 'billing_scheduler_last_success_timestamp_seconds')).toBeGreaterThan(0);
    expect(sampleValue(counted, 'billing_scheduler_last_pass_duration_seconds')).toBeGreaterThanOrEqual(0);

    // GET /readyz shows the scheduler: its last pass, outcome and duration.
    const ready = await readyz(h);
    expect(ready.status).toBe(200);
    expect(ready.body.checks.scheduler).toMatchObject({ ok: true, detail: null, interval_seconds: 1, stalled: false, last_outcome: 'ok' });
    expect(Date.parse(ready.body.checks.scheduler.last_pass_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(ready.body.checks.scheduler.last_pass_duration_seconds).toBeGreaterThanOrEqual(0);
  });

  it('is off with BILLING_SCHEDULER_INTERVAL=0, and /readyz says so', async () => {
    h = await startBilling(kind, undefined, { BILLING_SCHEDULER_INTERVAL: '0' });
    const user = await h.user();
    await h.fund(user, '100000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    await new Promise((r) => setTimeout(r, 1500));
    expect((await h.sub(sub.id)).cyclesCompleted).toBe(1);
    const ready = await readyz(h);
    expect(ready.status).toBe(200);
    expect(ready.body.checks.scheduler).toMatchObject({ ok: true, interval_seconds: 0, last_outcome: null, last_pass_at: null });
    expect(ready.body.checks.scheduler.detail).toContain('BILLING_SCHEDULER_INTERVAL=0');
  });

  it('a pass that throws is counted and shown, the process stays ready, and the next pass runs', async () => {
    h = await startBilling(kind, undefined, { BILLING_SCHEDULER_INTERVAL: '1' });
    const user = await h.user();
    await h.fund(user, '100000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    const connection = h.server.running.billing.orm.em.getConnection();
    // The pass cannot read the subscriptions while their table is away.
    await connection.execute('alter table subscriptions rename to subscriptions_away');
    const failed = await eventually(
      () => metricsOf(h!),
      (m) => sampleValue(m, 'billing_billing_runs_total', { result: 'failed' }) >= 1,
    );
    expect(sampleValue(failed, 'billing_billing_runs_total', { result: 'failed' })).toBeGreaterThanOrEqual(1);
    const ready = await readyz(h);
    // NOTE: shown, never counted: the process serves requests without a pass.
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ready');
    expect(ready.body.checks.scheduler).toMatchObject({ ok: false, last_outcome: 'failed', stalled: false });
    expect(ready.body.checks.scheduler.detail).toContain('failed');

    await connection.execute('alter table subscriptions_away rename to subscriptions');
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    const renewed = await eventually(() => h!.sub(sub.id), (s) => s.cyclesCompleted === 2);
    expect(renewed.cyclesCompleted).toBe(2);
    const after = await eventually(() => readyz(h!), (r) => r.body.checks.scheduler.last_outcome === 'ok');
    expect(after.body.checks.scheduler).toMatchObject({ ok: true, last_outcome: 'ok' });
  });
});

describe.runIf(DATABASES.includes('postgresql'))('in-server billing scheduler across processes on PostgreSQL', () => {
  let h: BillingHarness | undefined;
  let other: pg.Client | undefined;
  afterEach(async () => {
    await other?.end();
    other = undefined;
    await h?.stop();
    h = undefined;
  });

  it('skips (and counts a skip) while another process holds the pass lock, and passes once it is free', async () => {
    h = await startBilling('postgresql', undefined, { BILLING_SCHEDULER_INTERVAL: '1' });
    const user = await h.user();
    await h.fund(user, '100000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');

    // Another process's pass, as PostgreSQL sees it: a session holding the advisory lock.
    other = new pg.Client({ connectionString: h.server.db.url });
    await other.connect();
    const taken = await other.query('select pg_try_advisory_lock($1::bigint) as locked', [BILLING_PASS_LOCK_KEY.toString()]);
    expect(taken.rows[0].locked).toBe(true);

    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    const skipped = await eventually(
      () => metricsOf(h!),
      (m) => sampleValue(m, 'billing_billing_runs_total', { result: 'skipped' }) >= 2,
    );
    expect(sampleValue(skipped, 'billing_billing_runs_total', { result: 'skipped' })).toBeGreaterThanOrEqual(2);
    expect(sampleValue(skipped, 'billing_billing_runs_total', { result: 'ok' })).toBe(0);
    // Nothing was billed while the other held it.
    expect((await h.sub(sub.id)).cyclesCompleted).toBe(1);
    const ready = await readyz(h);
    expect(ready.body.checks.scheduler).toMatchObject({ ok: true, last_outcome: 'skipped', stalled: false, last_pass_at: null });

    await other.query('select pg_advisory_unlock($1::bigint)', [BILLING_PASS_LOCK_KEY.toString()]);
    const renewed = await eventually(() => h!.sub(sub.id), (s) => s.cyclesCompleted === 2);
    expect(renewed.cyclesCompleted).toBe(2);

    // The lock is released after each pass (not kept on a pooled connection): another process can take it between passes.
    const free = await eventually(
      async () => (await other!.query('select pg_try_advisory_lock($1::bigint) as locked', [BILLING_PASS_LOCK_KEY.toString()])).rows[0].locked as boolean,
      (locked) => locked,
    );
    expect(free).toBe(true);
  });
});
