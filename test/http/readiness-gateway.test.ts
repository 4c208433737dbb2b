import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { CREDENTIAL_PROBE_ORDER_ID } from '../../src/services/health/gateway-credentials.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { SERVER_KEY, startHarness, until, type Harness } from '../helpers/simulator.js';
import { subscribe } from '../helpers/subscriptions.js';

/*
 * Row 7 and 8 of issue 40: /readyz proves the gateway's server key with a status call for an
 * order that cannot exist (404: the key works; 401: it does not), at start and every 5 minutes,
 * never on every probe; a customer paying through a refused key gets a generic 502, the operator's
 * log keeps the hint; GATEWAY_NOTIFICATION_URL goes on every charge as X-Override-Notification.
 * The gateway here is a simulator of its own (it answers 401 for a key it does not know, as Midtrans does).
 */

const FIVE_MINUTES = 5 * 60 * 1000;

function credentialChecks(gateway: Harness): number {
  return gateway.sim.requests().filter((r) => r.operation === 'status' && r.path.includes(CREDENTIAL_PROBE_ORDER_ID)).length;
}

describe.each(DATABASES)('/readyz and the gateway server key on %s', (kind) => {
  let gateway: Harness;
  let wrong: TestServer;
  let right: TestServer;
  const warnings: string[] = [];
  const clock = new ManualClock(new Date());

  beforeAll(async () => {
    gateway = await startHarness();
    wrong = await startTestServer(kind, {
      env: { GATEWAY_BASE_URL: gateway.baseUrl, GATEWAY_SERVER_KEY: 'SB-Mid-server-NOT-THE-KEY', GATEWAY_NOTIFICATION_URL: 'https://billing.example/hooks/midtrans/' },
      clock,
      logger: { info: () => undefined, warn: (message: string, fields?: Record<string, unknown>) => void warnings.push(`${message} ${JSON.stringify(fields ?? {})}`), error: () => undefined } as never,
    });
    right = await startTestServer(kind, {
      env: { GATEWAY_BASE_URL: gateway.baseUrl, GATEWAY_SERVER_KEY: SERVER_KEY, GATEWAY_NOTIFICATION_URL: 'https://billing.example/hooks/midtrans/' },
    });
    await wrong.seedPlans(STANDARD_PLANS);
    await right.seedPlans(STANDARD_PLANS);
  });
  afterAll(async () => {
    await wrong?.stop();
    await right?.stop();
    await gateway?.stop();
  });

  it('a wrong key: not ready, the gateway check naming GATEWAY_SERVER_KEY; the right key: ready', async () => {
    const notReady = await wrong.request('GET', '/readyz');
    expect(notReady.status).toBe(503);
    expect(notReady.body.status).toBe('not_ready');
    expect(notReady.body.checks.database).toEqual({ ok: true, detail: null });
    expect(notReady.body.checks.gateway).toEqual({ ok: false, detail: expect.stringContaining('GATEWAY_SERVER_KEY') });
    // The probe is public: the key itself is never in it.
    expect(notReady.text).not.toContain('SB-Mid-server-NOT-THE-KEY');

    const ready = await right.request('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks.gateway).toEqual({ ok: true, detail: null });
  });

  it('asks the gateway at start and then every 5 minutes, never on every probe', async () => {
    const before = credentialChecks(gateway);
    for (let i = 0; i < 10; i += 1) expect((await wrong.request('GET', '/readyz')).status).toBe(503);
    expect(credentialChecks(gateway)).toBe(before);

    clock.advance(FIVE_MINUTES);
    await wrong.request('GET', '/readyz');
    await until(() => credentialChecks(gateway) === before + 1);
    for (let i = 0; i < 5; i += 1) await wrong.request('GET', '/readyz');
    expect(credentialChecks(gateway)).toBe(before + 1);
  });

  it('the customer paying through a refused key gets a generic 502; the operator log keeps the hint', async () => {
    const user = await wrong.createUser();
    const res = await subscribe(wrong, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('gateway_error');
    expect(res.text).not.toMatch(/server key|client key/i);
    expect(res.text).not.toMatch(/GATEWAY_[A-Z]/);
    expect(warnings.join('\n')).toMatch(/server key/);
    expect(warnings.join('\n')).toMatch(/GATEWAY_SERVER_KEY/);
  });

  it('GATEWAY_NOTIFICATION_URL goes on every charge as X-Override-Notification', async () => {
    const user = await right.createUser();
    const res = await subscribe(right, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    expect(res.status).toBe(201);
    const tx = gateway.sim.transaction(res.body.payment.order_id);
    expect(tx?.override_notification_urls).toEqual(['https://billing.example/hooks/midtrans/']);
  });
});

describe.each(DATABASES)('/readyz with the built-in simulator on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
  });
  afterAll(() => server?.stop());

  it('checks the simulator the same way, at start: one status call for the order that cannot exist, answered 404', async () => {
    const checks = () => server.running.billing.simulator!.requests().filter((r) => r.path.includes(CREDENTIAL_PROBE_ORDER_ID));
    // Asked once the server listens, before any probe.
    await until(() => checks().length === 1);
    const ready = await server.request('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks.gateway).toEqual({ ok: true, detail: null });
    await server.request('GET', '/readyz');
    expect(checks()).toHaveLength(1);
  });
});
