/*
 * A client of the billing API, typed from openapi.yaml with openapi-typescript and openapi-fetch:
 * subscribe, pay through the gateway simulator, list invoices, top up the wallet, then read
 * notifications over a login session (cookie jar + X-CSRF-Token).
 *
 *   BILLING_URL=http://127.0.0.1:3000 BILLING_USERNAME=alice BILLING_PASSWORD='a long password' \
 *     npx tsx examples/client/subscribe-and-top-up.ts
 *
 * It needs a server running with the built-in simulator (no GATEWAY_BASE_URL) and a user
 * (`npx billing-admin users create`). It prints one JSON line per step and exits 1 on a failure.
 * It runs any number of times for the same user: it first ends the subscription a run before
 * left active (canceled at the period's end), since a customer has one live subscription.
 * Your own project would import `paths` from the file its `openapi-typescript` run wrote.
 */
import { randomUUID } from 'node:crypto';
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from '../../src/http/generated/openapi.js';

type Problem = components['schemas']['Problem'];

const base = (process.env.BILLING_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '');
const username = process.env.BILLING_USERNAME ?? 'alice';
const password = process.env.BILLING_PASSWORD ?? '';

const step = (name: string, detail: Record<string, unknown>) => console.log(JSON.stringify({ step: name, ...detail }));

/** Ends the script on an error answer, printing the problem document the server sent. */
function must<T>(answer: { data?: T; error?: Problem; response: Response }, what: string): T {
  if (answer.data === undefined) {
    throw new Error(`${what}: ${answer.response.status} ${JSON.stringify(answer.error ?? null)}`);
  }
  return answer.data;
}

/** The gateway simulator's development command: the payment is made, the webhook is sent. */
async function payAtGateway(orderId: string): Promise<void> {
  const res = await fetch(`${base}/_simulator/v2/${encodeURIComponent(orderId)}/settle`, { method: 'POST' });
  if (!res.ok) throw new Error(`simulator settle ${orderId}: ${res.status} ${await res.text()}`);
}

async function main(): Promise<void> {
  // A server-side client: HTTP Basic on every request, no session, no CSRF token.
  const api = createClient<paths>({
    baseUrl: `${base}/api/subscriptions`,
    headers: { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}` },
  });

  // The catalogue carries an ETag; sending it back answers 304 while it holds. openapi-fetch
  // passes a 304 on as neither data nor a Problem (its `error` is then an empty string, though
  // typed as the error statuses' Problem): look at the status first.
  const plans = await api.GET('/plans/', { params: { query: { ordering: 'price' } } });
  const plan = must(plans, 'list plans').results.find((p) => p.interval_unit === 'month' && !p.trial_period_days && p.currency === 'IDR');
  if (!plan) throw new Error('no monthly plan: seed some with `npx billing-admin plans seed examples/plans.yaml`');
  const etag = plans.response.headers.get('etag');
  const again = await api.GET('/plans/', { params: { query: { ordering: 'price' }, header: { 'If-None-Match': etag ?? undefined } } });
  const revalidated = again.response.status === 304;
  step('plans', { plan: plan.slug, price: plan.price, revalidated, data: again.data ?? null });

  // One live subscription per customer: a run before this one left its subscription active until
  // the period's end, and subscribing again would answer 409 subscription_exists. End it now, so
  // that the example runs any number of times. (A never-paid one needs nothing: subscribing
  // replaces it.)
  const live = await api.GET('/subscriptions/active/');
  if (live.data) {
    must(await api.POST('/subscriptions/{id}/cancel/', { params: { path: { id: live.data.id } }, body: { immediate: true, reason: 'example run again' } }), 'end the previous run');
  }
  step('made_room', { ended: live.data?.id ?? null });

  // Subscribe: an Idempotency-Key makes a retry after a lost answer safe (same key, same body).
  const subscribeKey = randomUUID();
  const subscribeBody = { plan_id: plan.slug, payment_type: 'bank_transfer' as const };
  const created = must(await api.POST('/subscriptions/', { body: subscribeBody, params: { header: { 'Idempotency-Key': subscribeKey } } }), 'subscribe');
  const retried = must(await api.POST('/subscriptions/', { body: subscribeBody, params: { header: { 'Idempotency-Key': subscribeKey } } }), 'subscribe again');
  // A plan with a trial starts without a payment; this example wants one to pay.
  const payment = created.payment;
  if (!payment) throw new Error(`${plan.slug} starts with a trial: pick a plan without one`);
  // `bank` is an enum in the generated types: bca | bni | bri | cimb | permata | mandiri.
  const bank = payment.payment_details.bank;
  step('subscribed', { subscription: created.subscription.id, status: created.subscription.status, order_id: payment.order_id, bank, replayed: retried.subscription.id === created.subscription.id });

  await payAtGateway(payment.order_id);
  const active = must(await api.GET('/subscriptions/active/'), 'active subscription');
  step('paid', { subscription: active.id, status: active.status, current_period_end: active.current_period_end });

  const invoices = must(await api.GET('/invoices/', { params: { query: { page_size: 10 } } }), 'invoices');
  step('invoices', { count: invoices.count, statuses: invoices.results.map((i) => i.status), totals: invoices.results.map((i) => i.total_amount) });

  const topup = must(await api.POST('/topups/', { body: { amount: '50000', payment_type: 'bank_transfer' }, params: { header: { 'Idempotency-Key': randomUUID() } } }), 'top up');
  await payAtGateway(topup.order_id);
  const wallet = must(await api.GET('/wallet/me/'), 'wallet');
  step('topped_up', { topup: topup.id, balance: wallet.balance, currency: wallet.currency });

  // A browser-style client: log in once, keep the session cookie, send X-CSRF-Token on changes.
  const jar = new Map<string, string>();
  let csrfToken = '';
  const session: Middleware = {
    onRequest({ request }) {
      if (jar.size > 0) request.headers.set('cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '));
      if (csrfToken && request.method !== 'GET') request.headers.set('x-csrf-token', csrfToken);
      return request;
    },
    onResponse({ response }) {
      for (const cookie of response.headers.getSetCookie()) {
        const [pair] = cookie.split(';');
        const eq = pair.indexOf('=');
        jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
      }
      return response;
    },
  };
  const browser = createClient<paths>({ baseUrl: `${base}/api/subscriptions` });
  browser.use(session);
  csrfToken = must(await browser.POST('/auth/login/', { body: { username, password } }), 'login').csrf_token;
  const unread = must(await browser.GET('/notifications/unread/'), 'unread notifications');
  const first = unread.results[0];
  if (first) must(await browser.POST('/notifications/{id}/mark-read/', { params: { path: { id: first.id } } }), 'mark read');
  // `immediate` has a default (false: at the period's end), so it may be left out.
  const canceled = must(await browser.POST('/subscriptions/{id}/cancel/', { params: { path: { id: active.id } }, body: { reason: 'example finished' } }), 'cancel');
  step('session', { unread: unread.count, marked_read: first?.id ?? null, cancel_at_period_end: canceled.cancel_at_period_end, status: canceled.status });
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
});
