/*
 * A small backend of a SaaS that bills through this service (docs/integrating.md), on plain
 * node:http. It keeps its own users; the billing service keeps their subscriptions. It never
 * holds a customer's password for the billing service: one API key does everything.
 *
 *   POST /signup           {"id": "u_81723", "email": "sari@example.com"}
 *                          → makes the customer (POST /admin/customers/, external_id = our id)
 *   POST /upgrade          {"plan": "starter-monthly"}, as user X-User: u_81723
 *                          → 303 to a hosted checkout link (POST /checkout-sessions/, Billing-Customer)
 *   GET  /app/…            as user X-User: u_81723: served only if the access check allows it
 *                          (GET /admin/customers/ext:u_81723/access/?path=…), else 402
 *   POST /webhooks/billing the service's signed events (X-Billing-Signature): 400 if the signature
 *                          is wrong or stale, 200 once verified (duplicates included)
 *   GET  /events           what the receiver accepted, for a look (no real app would show this)
 *
 * Its settings, from the environment:
 *   BILLING_URL             the billing service (default http://127.0.0.1:3000)
 *   BILLING_API_KEY         a write key: `npx billing-admin api-keys create --name shop --scope write --reason "the shop backend"`
 *   BILLING_WEBHOOK_SECRET  the service's OUTBOUND_WEBHOOK_SECRET
 *   APP_URL                 where this app is reached (default http://127.0.0.1:PORT): the
 *                           checkout sends customers back here, so the billing service lists
 *                           its origin in HOSTED_RETURN_ORIGINS
 *   PORT                    default 4000
 *
 * "Users" here are a header (X-User) to keep the example short: use your own sessions.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const billingUrl = (process.env.BILLING_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '');
const api = `${billingUrl}/api/subscriptions`;
const apiKey = process.env.BILLING_API_KEY ?? '';
const webhookSecret = process.env.BILLING_WEBHOOK_SECRET ?? '';
const port = Number(process.env.PORT ?? 4000);
const appUrl = (process.env.APP_URL ?? `http://127.0.0.1:${port}`).replace(/\/+$/, '');
if (!apiKey || !webhookSecret) {
  console.error('set BILLING_API_KEY (a write key) and BILLING_WEBHOOK_SECRET (the service\'s OUTBOUND_WEBHOOK_SECRET)');
  process.exit(2);
}

/** A call to the billing service with the key; `customer` acts for that customer (Billing-Customer). */
async function billing(method: string, path: string, opts: { body?: unknown; customer?: string; idempotencyKey?: string } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${apiKey}` };
  if (opts.customer) headers['billing-customer'] = `ext:${opts.customer}`;
  if (opts.idempotencyKey) headers['idempotency-key'] = opts.idempotencyKey;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${api}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, any>) : {} };
}

/**
 * The outbound webhook's signature (docs/delivery.md, 'Verifying the signature'):
 * `X-Billing-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, keyed with
 * the secret; refused more than five minutes from our clock.
 */
export function verifyBillingSignature(secret: string, header: string | undefined, rawBody: Buffer, toleranceSeconds = 300): boolean {
  const parts = (header ?? '').split(',').map((p) => {
    const eq = p.indexOf('=');
    return eq < 0 ? ['', ''] : [p.slice(0, eq).trim(), p.slice(eq + 1).trim()];
  });
  const t = parts.find(([k]) => k === 't')?.[1];
  if (!t || !/^\d+$/.test(t) || Math.abs(Date.now() / 1000 - Number(t)) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest();
  return parts
    .filter(([k]) => k === 'v1')
    .some(([, v]) => {
      const given = Buffer.from(v, 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}

const events = new Map<string, { id: string; type: string; data: unknown }>();

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 1024 * 1024) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function jsonOf(raw: Buffer): Record<string, any> | null {
  try {
    const value: unknown = JSON.parse(raw.toString('utf8'));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, any>) : null;
  } catch {
    return null;
  }
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', appUrl);
  const user = typeof req.headers['x-user'] === 'string' ? req.headers['x-user'] : null;

  if (req.method === 'POST' && url.pathname === '/signup') {
    const input = jsonOf(await readBody(req));
    if (!input || typeof input.id !== 'string') return send(res, 400, { error: 'send {"id": "...", "email": "..."}' });
    // Our user id is the customer's external_id: later calls name it as ext:<id>.
    const made = await billing('POST', '/admin/customers/', { body: { external_id: input.id, email: input.email }, idempotencyKey: `signup-${input.id}` });
    // A sign-up retried after a lost answer finds the customer made the first time.
    if (made.status === 201) return send(res, 201, { user: input.id, customer: made.body.id });
    if (made.status === 409 && made.body.code === 'customer_exists') return send(res, 200, { user: input.id, existing: true });
    return send(res, 502, { error: 'billing refused the customer', billing: made.body });
  }

  if (req.method === 'POST' && url.pathname === '/upgrade') {
    if (!user) return send(res, 401, { error: 'who are you? (X-User)' });
    const input = jsonOf(await readBody(req)) ?? {};
    const link = await billing('POST', '/checkout-sessions/', {
      customer: user,
      body: { plan_id: typeof input.plan === 'string' ? input.plan : 'starter-monthly', success_url: `${appUrl}/app/welcome`, cancel_url: `${appUrl}/pricing` },
    });
    if (link.status !== 201) return send(res, 502, { error: 'no checkout link', billing: link.body });
    // The customer's browser goes to the hosted checkout; it comes back to success_url once paid.
    return send(res, 303, { url: link.body.url }, { location: link.body.url as string });
  }

  if (req.method === 'POST' && url.pathname === '/webhooks/billing') {
    const raw = await readBody(req);
    const signature = req.headers['x-billing-signature'];
    if (!verifyBillingSignature(webhookSecret, typeof signature === 'string' ? signature : undefined, raw)) {
      return send(res, 400, { error: 'bad signature' });
    }
    const event = jsonOf(raw);
    if (!event || typeof event.id !== 'string') return send(res, 400, { error: 'not an event' });
    // Delivery is at least once: the event id makes a resend harmless. Answer fast; work later.
    if (!events.has(event.id)) events.set(event.id, { id: event.id, type: String(event.type), data: event.data });
    return send(res, 200, { received: event.id });
  }

  if (req.method === 'GET' && url.pathname === '/events') return send(res, 200, { events: [...events.values()] });

  if (req.method === 'GET' && url.pathname.startsWith('/app/')) {
    if (!user) return send(res, 401, { error: 'who are you? (X-User)' });
    // Ask on every request (or cache for a few seconds): a payment counts the moment it settles.
    const access = await billing('GET', `/admin/customers/ext:${encodeURIComponent(user)}/access/?path=${encodeURIComponent(url.pathname)}`);
    // 404: no such customer (a user who never signed up here).
    if (access.status === 404) return send(res, 403, { error: 'unknown customer' });
    if (access.status !== 200) return send(res, 502, { error: 'access check failed', billing: access.body });
    if (!access.body.allowed) return send(res, 402, { error: 'a subscription is needed', reason: access.body.reason, upgrade: `${appUrl}/upgrade` });
    return send(res, 200, { page: url.pathname, for: user, reason: access.body.reason });
  }

  send(res, 404, { error: 'not found' });
}

const server = createServer((req, res) => {
  handle(req, res).catch((err: unknown) => {
    console.error(err);
    if (!res.headersSent) send(res, 500, { error: 'internal error' });
    else res.end();
  });
});
server.listen(port, '127.0.0.1', () => console.log(`example backend listening on ${appUrl}/ (billing at ${billingUrl})`));
