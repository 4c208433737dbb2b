import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { User } from '../../src/db/entities/index.js';
import { Payment } from '../../src/db/entities/payment.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { quietLogger } from '../../src/logger.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { sendRaw as send, type Raw } from '../helpers/raw-http.js';
import { DATABASES, type DatabaseKind } from '../helpers/database.js';
import { makeSubscriptionWithPayment, signedNotification } from '../helpers/factories.js';
import { startTestServer, type Credentials, type TestServer } from '../helpers/server.js';
import { dbOf } from '../helpers/subscriptions.js';

/*
 * The webhook's fast path (src/http/hot-webhook.ts) against the normal path, notification for
 * notification: two servers over the same database, one with the fast path and one without.
 * Each case is sent twice, the same shape for two payments alike (one per server): status,
 * every header but Date, the body (log ids aside), and what each left in the database must be
 * the same. Both servers check every answer against openapi.yaml.
 */

const ORIGIN = 'https://app.example';
const WEBHOOK = '/api/subscriptions/webhook/notification/';


const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
/** Everything but Date; ids (each server logs its own row) and the order ids of the two payments as placeholders. */
function comparable(r: Raw, orderId: string) {
  const { date: _date, 'content-length': _length, ...headers } = r.headers;
  if (typeof headers['x-request-id'] === 'string') headers['x-request-id'] = headers['x-request-id'].replace(UUID, '(made up)');
  return { status: r.status, headers, text: r.text.split(orderId).join('(order)').replace(UUID, '(id)') };
}

const basic = (c: Credentials) => `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;

describe.each(DATABASES)('the webhook fast path answers as the normal path does (%s)', (kind: DatabaseKind) => {
  let setup: TestServer;
  let hot: RunningServer;
  let normal: RunningServer;
  let served = 0;
  let key: string;

  beforeAll(async () => {
    setup = await startTestServer(kind, { env: { CORS_ORIGINS: ORIGIN, SUBSCRIPTION_PROTECTED_PATHS: '/premium' } });
    key = setup.config.gateway.serverKey;
    hot = await startServer({ ...setup.config }, { logger: quietLogger, validateResponses: true, onHotWebhook: () => served++ });
    normal = await startServer({ ...setup.config }, { logger: quietLogger, validateResponses: true, hotWebhook: false });
  }, 600_000);
  afterAll(async () => {
    await hot?.stop();
    await normal?.stop();
    await setup?.stop();
  });

  const em = () => dbOf(setup).fork();
  const pendingOrder = async (user?: User) => (await makeSubscriptionWithPayment(em(), user ? { user } : {})).payment.orderId;
  const settlement = (orderId: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify(signedNotification(key, { order_id: orderId, transaction_status: 'settlement', gross_amount: '150000.00', fraud_status: 'accept', ...extra }));

  /** What the notification of `orderId` left: the payment's state and its logs' outcomes. */
  async function leftBehind(orderId: string) {
    const payment = await em().findOne(Payment, { orderId }, { populate: ['subscription', 'invoice'] });
    const logs = await em().find(WebhookLog, { orderId }, { orderBy: { createdAt: 'asc' } });
    return {
      payment: payment && { status: payment.status, invoice: payment.invoice?.status, subscription: payment.subscription?.status },
      logs: logs.map((l) => ({ status: l.status, attempts: l.attempts, error: l.error?.split(orderId).join('(order)').replace(UUID, '(id)') ?? null })),
    };
  }

  /**
   * One case on both servers: `make(orderId)` builds the request for an order of its own on each.
   * Returns the hot server's answer and whether its fast path answered.
   */
  async function both(
    label: string,
    make: (orderId: string) => { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer },
    orders?: [string, string],
  ): Promise<Raw & { fast: boolean }> {
    const [forHot, forNormal] = orders ?? [await pendingOrder(), await pendingOrder()];
    const ask = (server: RunningServer, orderId: string) => {
      const r = make(orderId);
      return send(server, r.method ?? 'POST', r.path ?? WEBHOOK, r.headers ?? { 'content-type': 'application/json' }, r.body);
    };
    const before = served;
    const fromHot = await ask(hot, forHot);
    const fast = served > before;
    const fromNormal = await ask(normal, forNormal);
    expect(comparable(fromHot, forHot), label).toEqual(comparable(fromNormal, forNormal));
    expect(await leftBehind(forHot), label).toEqual(await leftBehind(forNormal));
    return { ...fromHot, fast };
  }

  it('takes the gateway notification itself: settled, a duplicate, a wrong signature, an unreadable or empty body, with or without the slash', async () => {
    const settled = await both('settlement', (o) => ({ body: settlement(o) }));
    expect(settled.status).toBe(200);
    expect(JSON.parse(settled.text).status).toBe('ok');
    expect(settled.fast).toBe(true);

    const orders: [string, string] = [await pendingOrder(), await pendingOrder()];
    await both('first', (o) => ({ body: settlement(o) }), orders);
    const again = await both('the same again', (o) => ({ body: settlement(o) }), orders);
    expect(JSON.parse(again.text).status).toBe('duplicate');
    expect(again.fast).toBe(true);

    const cases: [string, (o: string) => { path?: string; headers?: Record<string, string>; body?: string | Buffer }, number][] = [
      ['no trailing slash', (o) => ({ path: WEBHOOK.slice(0, -1), body: settlement(o) }), 200],
      ['a CORS origin', (o) => ({ headers: { 'content-type': 'application/json', origin: ORIGIN }, body: settlement(o) }), 200],
      ['text/plain', (o) => ({ headers: { 'content-type': 'text/plain' }, body: settlement(o) }), 200],
      ['no content type', (o) => ({ headers: {}, body: settlement(o) }), 200],
      ['pending', (o) => ({ body: settlement(o, { transaction_status: 'pending', fraud_status: undefined }) }), 200],
      ['wrong signature', (o) => ({ body: settlement(o).replace(/"signature_key":"[0-9a-f]+"/, `"signature_key":"${'0'.repeat(128)}"`) }), 403],
      ['not JSON', (o) => ({ body: `order_id=${o}&transaction_status=settlement` }), 400],
      ['empty', () => ({ body: '' }), 400],
      ['NUL and a lone surrogate', (o) => ({ body: settlement(o).replace('midtrans payment notification', 'a\\u0000b\\ud800c') }), 200],
      ['unknown order', () => ({ body: settlement(`SUB-unknown-${Math.random().toString(36).slice(2)}`) }), 200],
    ];
    for (const [label, make, status] of cases) {
      const answer = await both(label, make);
      expect(answer.status, label).toBe(status);
      expect(answer.fast, label).toBe(true);
    }
  });

  it('a body over the limit is refused 413 before it is logged, on both', async () => {
    const big = await both('too large', (o) => ({ body: settlement(o).replace('midtrans payment notification', 'x'.repeat(70_000)) }));
    expect(big.status).toBe(413);
    expect(big.fast).toBe(true);
  });

  it('leaves to the normal path what authentication, the session or the router would see first: same answers', async () => {
    const customer = await setup.createUser();
    const cases: [string, (o: string) => { method?: string; path?: string; headers?: Record<string, string>; body?: string }][] = [
      ['a query string', (o) => ({ path: `${WEBHOOK}?source=dashboard`, body: settlement(o) })],
      ['an empty query', (o) => ({ path: `${WEBHOOK}?`, body: settlement(o) })],
      ['wrong Basic credentials', (o) => ({ headers: { 'content-type': 'application/json', authorization: basic({ username: customer.username, password: 'wrong' }) }, body: settlement(o) })],
      ['malformed Authorization', (o) => ({ headers: { 'content-type': 'application/json', authorization: 'Basic !!!' }, body: settlement(o) })],
      ['a Bearer key', (o) => ({ headers: { 'content-type': 'application/json', authorization: 'Bearer nonsense' }, body: settlement(o) })],
      ['a cookie', (o) => ({ headers: { 'content-type': 'application/json', cookie: 'billing.sid=abc; billing.sid.sig=def' }, body: settlement(o) })],
      ['Billing-Customer', (o) => ({ headers: { 'content-type': 'application/json', 'billing-customer': customer.username }, body: settlement(o) })],
      ['GET', () => ({ method: 'GET' })],
      ['PUT', (o) => ({ method: 'PUT', body: settlement(o) })],
      ['a path below it', (o) => ({ path: `${WEBHOOK}x/`, body: settlement(o) })],
    ];
    for (const [label, make] of cases) {
      const answer = await both(label, make);
      expect(answer.fast, label).toBe(false);
    }
    // Paths that canonical-path.ts rewrites to the exact one are the same request.
    const odd = await both('a doubled slash', (o) => ({ path: '/api/subscriptions//webhook/notification/', body: settlement(o) }));
    expect(odd.status).toBe(200);
  });

  it('a settlement taken by the fast path opens a protected path at that process’s next request', async () => {
    const customer = await setup.createUser();
    const user = await em().findOneOrFail(User, { id: customer.id });
    const orderId = await pendingOrder(user);
    const premium = () => send(hot, 'GET', '/premium/report', { authorization: basic(customer), accept: 'application/json' });
    expect((await premium()).status).toBe(403);
    const before = served;
    const settled = await send(hot, 'POST', WEBHOOK, { 'content-type': 'application/json' }, settlement(orderId));
    expect(settled.status).toBe(200);
    expect(served).toBe(before + 1);
    expect((await premium()).status).not.toBe(403);
  });
});
