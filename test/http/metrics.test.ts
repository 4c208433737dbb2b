import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';
import { parsePrometheusText, sampleValue, type MetricFamily } from '../helpers/prometheus-text.js';
import { prepareDatabase, type Account } from '../helpers/reliability/accounts.js';
import { API, call, PROJECT_ROOT, startServerProcess, type ServerProcess } from '../helpers/reliability/server-process.js';

const TOKEN = 'metrics-token-3f9a1c';

describe.each(DATABASES)('GET /metrics (%s)', (kind) => {
  let db: TestDatabase;
  let server: ServerProcess;
  let alice: Account;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    ({ alice } = await prepareDatabase(db.url, ['alice']));
    server = await startServerProcess({ databaseUrl: db.url, env: { METRICS_TOKEN: TOKEN } });
  });
  afterAll(async () => {
    await server?.stop();
    await db?.drop();
  });

  const scrape = async (): Promise<Map<string, MetricFamily>> => {
    const res = await call(server.url, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return parsePrometheusText(res.text);
  };

  it('answers 401 without the bearer token, and never looks at Basic credentials', async () => {
    for (const headers of [{} as Record<string, string>, { authorization: 'Bearer wrong' }, { authorization: `Basic ${Buffer.from(`${alice.username}:${alice.password}`).toString('base64')}` }]) {
      const res = await call(server.url, 'GET', '/metrics', { headers });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ code: 'not_authenticated', type: 'https://billing.example/problems/not-authenticated' });
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
  });

  it('moves the counters as a subscribe → settle → webhook replay flow runs, in the strict text format', async () => {
    const before = await scrape();
    const v = (families: Map<string, MetricFamily>, name: string, labels: Record<string, string> = {}) => sampleValue(families, name, labels);
    expect(before.get('billing_http_request_duration_seconds')?.type).toBe('histogram');
    expect(before.get('billing_webhook_notifications_total')?.type).toBe('counter');
    expect(before.get('billing_gateway_request_duration_seconds')?.type).toBe('histogram');

    // Subscribe: one API request, one gateway charge.
    const created = await call(server.url, 'POST', `${API}/subscriptions/`, { basic: alice, body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
    expect(created.status, created.text).toBe(201);
    const orderId: string = created.body.payment.order_id;
    // A notification entry waits for the delivery worker (none runs here: no channel configured).
    const afterCreate = await scrape();
    expect(v(afterCreate, 'billing_http_request_duration_seconds_count', { operation: 'createSubscription', status: '201' })).toBe(
      v(before, 'billing_http_request_duration_seconds_count', { operation: 'createSubscription', status: '201' }) + 1,
    );
    expect(v(afterCreate, 'billing_gateway_request_duration_seconds_count', { endpoint: 'charge', outcome: 'ok' })).toBe(
      v(before, 'billing_gateway_request_duration_seconds_count', { endpoint: 'charge', outcome: 'ok' }) + 1,
    );

    // Settle through the simulator: it notifies the webhook, which answers ok.
    const settled = await call(server.url, 'POST', `/_simulator/v2/${orderId}/settle`);
    expect(settled.status, settled.text).toBe(200);
    expect(settled.body.notification.http_status).toBe(200);
    const afterSettle = await scrape();
    // NOTE: the simulator also notifies `pending` after the charge, in the background; so the
    // counts below are at least what this test sent, and outcomes always add up to requests.
    expect(v(afterSettle, 'billing_webhook_notifications_total', { outcome: 'ok' })).toBeGreaterThan(v(before, 'billing_webhook_notifications_total', { outcome: 'ok' }));

    // The gateway retries the same notification: a duplicate. A forged one: invalid.
    const log = await call(server.url, 'GET', '/_simulator/notifications');
    const payload = log.body.filter((n: { order_id: string; transaction_status: string }) => n.order_id === orderId && n.transaction_status === 'settlement')[0].payload;
    const replay = await call(server.url, 'POST', `${API}/webhook/notification/`, { body: payload });
    expect(replay.body.status).toBe('duplicate');
    const forged = await call(server.url, 'POST', `${API}/webhook/notification/`, { body: { ...payload, signature_key: 'f'.repeat(128) } });
    expect(forged.status).toBe(403);
    const afterReplay = await scrape();
    const delta = (name: string, labels: Record<string, string>) => v(afterReplay, name, labels) - v(before, name, labels);
    expect(delta('billing_webhook_notifications_total', { outcome: 'duplicate' })).toBeGreaterThanOrEqual(1);
    expect(delta('billing_webhook_notifications_total', { outcome: 'invalid' })).toBe(1);
    expect(delta('billing_webhook_notifications_total', {})).toBe(delta('billing_http_request_duration_seconds_count', { operation: 'receiveGatewayNotification' }));
    expect(delta('billing_http_request_duration_seconds_count', { operation: 'receiveGatewayNotification' })).toBeGreaterThanOrEqual(3);

    // Refused before routing: labelled unrouted, with the status.
    const wrong = await call(server.url, 'GET', `${API}/plans/`, { basic: { username: alice.username, password: 'wrong' } });
    expect(wrong.status).toBe(401);
    const afterWrong = await scrape();
    expect(v(afterWrong, 'billing_http_request_duration_seconds_count', { operation: 'unrouted', status: '401' })).toBe(
      v(before, 'billing_http_request_duration_seconds_count', { operation: 'unrouted', status: '401' }) + 1,
    );

    // Gauges read from the database at scrape time.
    expect(v(afterWrong, 'billing_metrics_database_up')).toBe(1);
    expect(v(afterWrong, 'billing_wallet_verify_ok')).toBe(1);
    expect(v(afterWrong, 'billing_wallet_verify_discrepancies')).toBe(0);
    expect(afterWrong.get('billing_delivery_queue_depth')?.samples.map((s) => s.labels.channel).sort()).toEqual(['email', 'webhook']);
    expect(afterWrong.get('billing_delivery_queue_oldest_age_seconds')?.type).toBe('gauge');
    expect(v(afterWrong, 'billing_billing_runs_total')).toBe(0);

    // The sample dashboard graphs only series the service exports.
    const dashboard = readFileSync(join(PROJECT_ROOT, 'docs/grafana-dashboard.json'), 'utf8');
    const exported = new Set([...afterWrong.values()].flatMap((f) => f.samples.map((s) => s.name)));
    const graphed = [...new Set(dashboard.match(/billing_[a-z_]+/g))].filter((name) => name !== 'billing_service');
    expect(graphed.filter((name) => !exported.has(name))).toEqual([]);
  });
});

describe('GET /metrics without METRICS_TOKEN', () => {
  it('is off: 404', async () => {
    const db = await createTestDatabase('sqlite');
    await prepareDatabase(db.url, []);
    const server = await startServerProcess({ databaseUrl: db.url });
    try {
      const res = await call(server.url, 'GET', '/metrics', { headers: { authorization: 'Bearer anything' } });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    } finally {
      await server.stop();
      await db.drop();
    }
  });
});
