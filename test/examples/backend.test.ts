import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { DATABASES } from '../helpers/database.js';
import { PROJECT_ROOT } from '../helpers/reliability/server-process.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';

/*
 * examples/backend (its README) run as written: its own process, talking to a real billing server
 * over HTTP with a write key, receiving the server's signed outbound webhooks.
 */
const SECRET = 'whsec_example_backend_test';

/** A port nobody listens on now, for the example (the billing server must know its URL before it starts). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function startExample(env: Record<string, string>): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/backend/server.ts'], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the example did not start within 60 s:\n${output}`)), 60_000);
    child.stdout!.on('data', () => {
      if (output.includes('listening on')) {
        clearTimeout(timer);
        resolve({ child, output: () => output });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the example exited (${code}):\n${output}`));
    });
  });
}

const sign = (secret: string, t: number, body: string) => `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;

describe.each(DATABASES)('examples/backend against a running billing server (%s)', { timeout: 180_000 }, (kind) => {
  let server: TestServer;
  let example: { child: ChildProcess; output: () => string };
  let appUrl: string;
  let writeKey: string;

  beforeAll(async () => {
    const port = await freePort();
    appUrl = `http://127.0.0.1:${port}`;
    server = await startTestServer(kind, {
      env: {
        OUTBOUND_WEBHOOK_URL: `${appUrl}/webhooks/billing`,
        OUTBOUND_WEBHOOK_SECRET: SECRET,
        DELIVERY_INTERVAL_SECONDS: '1',
        SUBSCRIPTION_PROTECTED_PATHS: '/app/',
        HOSTED_RETURN_ORIGINS: appUrl,
      },
    });
    await server.seedPlans(STANDARD_PLANS);
    const billing = server.running.billing;
    writeKey = (await createApiKey({ em: billing.orm.em.fork(), config: billing.config, clock: billing.clock }, cliActor(), { name: 'example-backend', scope: 'write' })).key;
    example = await startExample({ BILLING_URL: server.url, BILLING_API_KEY: writeKey, BILLING_WEBHOOK_SECRET: SECRET, PORT: String(port), APP_URL: appUrl });
  });
  afterAll(async () => {
    if (example && example.child.exitCode === null) {
      const exited = new Promise((r) => example.child.once('exit', r));
      example.child.kill('SIGTERM');
      await exited;
    }
    await server?.stop();
  });

  const app = async (method: string, path: string, opts: { user?: string; body?: unknown; headers?: Record<string, string>; rawBody?: string } = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.user) headers['x-user'] = opts.user;
    let body = opts.rawBody;
    if (body === undefined && opts.body !== undefined) body = JSON.stringify(opts.body);
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const res = await fetch(`${appUrl}${path}`, { method, headers, body, redirect: 'manual' });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  };

  it('sign up makes the customer; upgrade sends it to checkout; once paid through the simulator the guarded route serves it, and the signed event arrives', async () => {
    const id = `u_${kind}_${process.pid}`;
    const signup = await app('POST', '/signup', { body: { id, email: `${id}@example.com` } });
    expect(signup.status, JSON.stringify(signup.body)).toBe(201);
    const customer = await server.api('GET', `/admin/customers/ext:${id}/`, { headers: { authorization: `Bearer ${writeKey}` } });
    expect(customer.status).toBe(200);
    expect(customer.body).toMatchObject({ id: signup.body.customer, external_id: id, has_password: false });
    // A sign-up retried after a lost answer makes nothing new.
    expect((await app('POST', '/signup', { body: { id, email: `${id}@example.com` } })).status).toBeLessThan(300);

    const before = await app('GET', '/app/reports/', { user: id });
    expect(before.status).toBe(402);
    expect(before.body.reason).toBe('subscription_required');

    const upgrade = await app('POST', '/upgrade', { user: id, body: { plan: 'basic-monthly' } });
    expect(upgrade.status, JSON.stringify(upgrade.body)).toBe(303);
    const checkout = new URL(upgrade.headers.get('location')!);
    expect(checkout.origin).toBe(server.url);

    // The customer's browser on the hosted checkout: it picks a BCA virtual account.
    const page = await server.request('GET', checkout.pathname);
    expect(page.status).toBe(200);
    const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.text)![1]!;
    const chosen = await server.request('POST', checkout.pathname, {
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      rawBody: new URLSearchParams({ csrf_token: csrf, payment_type: 'bank_transfer', bank: 'bca' }).toString(),
    });
    expect(chosen.status).toBe(303);

    // The customer pays the virtual account: the simulator settles it and notifies the webhook.
    const payments = await server.api<any>('GET', '/payments/', { headers: { authorization: `Bearer ${writeKey}`, 'billing-customer': `ext:${id}` } });
    expect(payments.status).toBe(200);
    const orderId = payments.body.results[0].order_id as string;
    expect((await server.request('POST', `/_simulator/v2/${orderId}/settle`)).status).toBe(200);

    const after = await app('GET', '/app/reports/', { user: id });
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(after.body).toMatchObject({ page: '/app/reports/', for: id, reason: 'subscription_active' });
    // Someone who never signed up: the access check answers 404, the example 403.
    expect((await app('GET', '/app/reports/', { user: `${id}_someone_else` })).status).toBe(403);

    // The delivery worker (every second here) posts payment_succeeded, signed; the example accepts it.
    let received: Array<{ type: string; data: { order_id?: string } }> = [];
    for (let i = 0; i < 120 && !received.some((e) => e.type === 'payment_succeeded'); i += 1) {
      await new Promise((r) => setTimeout(r, 250));
      received = (await app('GET', '/events')).body.events;
    }
    expect(received.find((e) => e.type === 'payment_succeeded')?.data.order_id).toBe(orderId);
  });

  it('a forged, unsigned or stale webhook is refused with 400 and not kept; one signed with the secret is accepted once', async () => {
    const event = { id: `forged-${kind}`, type: 'payment_succeeded', created_at: new Date().toISOString(), data: { order_id: 'SUB-FORGED' } };
    const body = JSON.stringify(event);
    const now = Math.floor(Date.now() / 1000);
    const refused = [
      await app('POST', '/webhooks/billing', { rawBody: body, headers: { 'x-billing-signature': sign('not-the-secret', now, body) } }),
      await app('POST', '/webhooks/billing', { rawBody: body }),
      await app('POST', '/webhooks/billing', { rawBody: body, headers: { 'x-billing-signature': sign(SECRET, now - 3600, body) } }),
      await app('POST', '/webhooks/billing', { rawBody: body.replace('SUB-FORGED', 'SUB-TAMPERED'), headers: { 'x-billing-signature': sign(SECRET, now, body) } }),
    ];
    expect(refused.map((r) => r.status)).toEqual([400, 400, 400, 400]);
    expect((await app('GET', '/events')).body.events.map((e: { id: string }) => e.id)).not.toContain(event.id);

    const real = { ...event, id: `signed-${kind}` };
    const realBody = JSON.stringify(real);
    for (let i = 0; i < 2; i += 1) {
      const accepted = await app('POST', '/webhooks/billing', { rawBody: realBody, headers: { 'x-billing-signature': sign(SECRET, now, realBody) } });
      expect(accepted.status).toBe(200);
    }
    const ids = (await app('GET', '/events')).body.events.map((e: { id: string }) => e.id);
    expect(ids.filter((x: string) => x === real.id)).toHaveLength(1);
  });
});
