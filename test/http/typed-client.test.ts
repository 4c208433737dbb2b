import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../src/http/generated/openapi.js';
import { createApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { activeSubscription } from '../helpers/subscriptions.js';

describe('a client generated from openapi.yaml', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  it('lists and reads plans, typed end to end', async () => {
    const client = createClient<paths>({ baseUrl: `${server.url}/api/subscriptions` });
    const list = await client.GET('/plans/', { params: { query: { interval_unit: 'month', ordering: '-price', page_size: 2 } } });
    expect(list.response.status).toBe(200);
    const page = list.data!;
    const first = page.results[0];
    // Typed fields: price is a money string, interval_unit an enum.
    const price: string = first.price;
    expect(price).toBe('150000.00');
    expect(page.next).toMatch(/page=2/);

    const one = await client.GET('/plans/{slug}/', { params: { path: { slug: first.slug } } });
    expect(one.data?.name).toBe(first.name);

    const missing = await client.GET('/plans/{slug}/', { params: { path: { slug: 'absent' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.code).toBe('not_found');
  });

  it('covers the staff routes with an API key: every list, look-up, action and report typed, no casts', async () => {
    const billing = server.running.billing;
    const { key } = await createApiKey({ em: billing.orm.em.fork(), config: billing.config, clock: billing.clock }, cliActor(), { name: 'typed-client', scope: 'write' });
    const staff = createClient<paths>({ baseUrl: `${server.url}/api/subscriptions`, headers: { authorization: `Bearer ${key}` } });
    const customer = await server.createUser();
    const { subscription, payment } = await activeSubscription(server, customer, 'basic-monthly', 'bank_transfer');

    const subs = await staff.GET('/admin/subscriptions/', { params: { query: { user: customer.username, status: 'active' } } });
    const owner: string = subs.data!.results[0].user.username;
    expect(owner).toBe(customer.username);
    const one = await staff.GET('/admin/subscriptions/{id}/', { params: { path: { id: subscription.id } } });
    expect(one.data?.plan.slug).toBe('basic-monthly');
    const paid = await staff.GET('/admin/payments/{id}/', { params: { path: { id: payment.id }, query: { gateway: true } } });
    const gatewayStatus: string | undefined = paid.data?.gateway?.gateway_status.transaction_status;
    expect(gatewayStatus).toBe('settlement');
    for (const list of [
      await staff.GET('/admin/invoices/', { params: { query: { user: customer.id } } }),
      await staff.GET('/admin/payments/', { params: { query: { order_id: payment.order_id } } }),
      await staff.GET('/admin/refunds/', { params: { query: { status: 'succeeded' } } }),
      await staff.GET('/admin/credit-notes/', {}),
      await staff.GET('/admin/topups/', {}),
      await staff.GET('/admin/notifications/', { params: { query: { user: customer.username } } }),
      await staff.GET('/admin/webhook-logs/', { params: { query: { status: 'processed' } } }),
      await staff.GET('/admin/audit-events/', {}),
    ]) {
      expect(list.response.status).toBe(200);
      expect(list.data!.count).toBeGreaterThanOrEqual(0);
    }
    const invoice = await staff.GET('/admin/invoices/{id}/', { params: { path: { id: payment.invoice_id! } } });
    expect(invoice.data?.lines.length).toBeGreaterThan(0);

    const adjusted = await staff.POST('/admin/wallets/{user}/adjust/', { params: { path: { user: customer.username } }, body: { amount: '10000', reason: 'typed client' } });
    const balance: string | undefined = adjusted.data?.wallet.balance;
    expect(balance).toBe('10000.00');
    const wallet = await staff.GET('/admin/wallets/{user}/', { params: { path: { user: customer.id } } });
    expect(wallet.data?.transactions.results[0].amount).toBe('10000.00');
    const paused = await staff.POST('/admin/subscriptions/{id}/pause/', { params: { path: { id: subscription.id } }, body: { reason: 'typed client' } });
    expect(paused.data?.status).toBe('paused');
    const resumed = await staff.POST('/admin/subscriptions/{id}/resume/', { params: { path: { id: subscription.id } }, body: { reason: 'typed client' } });
    expect(resumed.data?.status).toBe('active');
    const refund = await staff.POST('/admin/payments/{id}/refund/', { params: { path: { id: payment.id } }, body: { reason: 'typed client', amount: '1000', keep_subscription: true } });
    expect(refund.data?.refund.order_id).toBe(payment.order_id);
    const canceled = await staff.POST('/admin/subscriptions/{id}/cancel/', { params: { path: { id: subscription.id } }, body: { reason: 'typed client', at_period_end: true } });
    expect(canceled.data?.cancel_at_period_end).toBe(true);
    const logs = await staff.GET('/admin/webhook-logs/', {});
    const replay = await staff.POST('/admin/webhook-logs/{id}/replay/', { params: { path: { id: logs.data!.results[0].id } }, body: { reason: 'typed client' } });
    expect(replay.error?.code).toBe('invalid_state');
    const notes = await staff.GET('/admin/notifications/', {});
    const inApp = notes.data!.results.find((n) => n.channel === 'in_app')!;
    const resend = await staff.POST('/admin/notifications/{id}/resend/', { params: { path: { id: inApp.id } }, body: { reason: 'typed client' } });
    expect(resend.response.status).toBe(409);
    const sync = await staff.POST('/admin/subscriptions/{id}/sync/', { params: { path: { id: subscription.id } }, body: { reason: 'typed client' } });
    expect(sync.data?.id).toBe(subscription.id);

    const month = new Date().toISOString().slice(0, 7);
    const revenue = await staff.GET('/admin/reports/revenue/', { params: { query: { from: month, to: month } } });
    const collected: string | undefined = revenue.data?.rows[0].collected;
    expect(collected).toMatch(/^\d+\.\d{2}$/);
    const mrr = await staff.GET('/admin/reports/mrr/', { params: { query: { from: month, to: month } } });
    expect(mrr.data?.rows).toHaveLength(1);
    const churn = await staff.GET('/admin/reports/churn/', { params: { query: { from: month, to: month } } });
    const customers: number | undefined = churn.data?.rows[0].customers_at_start;
    expect(customers).toBeGreaterThanOrEqual(0);
    const audit = await staff.GET('/admin/audit-events/', { params: { query: { target: subscription.id } } });
    // The sync found nothing to change, and a change that changes nothing records nothing.
    expect(audit.data?.results.map((e) => e.action)).toEqual(['subscription.cancel', 'subscription.resume', 'subscription.pause']);
  });

  it('acts for a customer with a key and the typed Billing-Customer header, and asks the access check', async () => {
    const billing = server.running.billing;
    const { key } = await createApiKey({ em: billing.orm.em.fork(), config: billing.config, clock: billing.clock }, cliActor(), { name: 'typed-backend', scope: 'write' });
    const backend = createClient<paths>({ baseUrl: `${server.url}/api/subscriptions`, headers: { authorization: `Bearer ${key}` } });
    const made = await backend.POST('/admin/customers/', { body: { external_id: `typed_${process.pid}`, email: 'typed@example.com' } });
    const customer = `ext:${made.data!.external_id!}`;
    // The header is a typed parameter of every customer operation.
    const header: { 'Billing-Customer'?: string } = { 'Billing-Customer': customer };
    const subscribed = await backend.POST('/subscriptions/', { params: { header }, body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer' } });
    const status: string | undefined = subscribed.data?.subscription.status;
    expect(status).toBe('pending');
    const mine = await backend.GET('/subscriptions/', { params: { header: { 'Billing-Customer': customer }, query: { status: 'pending' } } });
    expect(mine.data?.results.map((s) => s.id)).toEqual([subscribed.data!.subscription.id]);
    const link = await backend.POST('/portal-sessions/', { params: { header }, body: { return_url: `${server.url}/account` } });
    expect(link.data?.url).toMatch(/^http/);
    const missing = await backend.GET('/wallet/me/', {});
    expect(missing.response.status).toBe(400);
    expect(missing.error?.errors?.[0]?.field).toBe('Billing-Customer');
    const access = await backend.GET('/admin/customers/{customer}/access/', { params: { path: { customer }, query: { path: '/app/' } } });
    const reason: 'path_not_protected' | 'staff' | 'subscription_active' | 'subscription_required' | 'customer_disabled' | undefined = access.data?.reason;
    expect(reason).toBe('path_not_protected');
  });
});
