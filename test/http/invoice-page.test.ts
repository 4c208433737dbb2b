import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BillableMetric } from '../../src/db/entities/billable-metric.js';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import type { PlanCharge } from '../../src/domain/usage/charge-models.js';
import { createApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { startBilling, DAY, type BillingHarness } from '../helpers/billing.js';
import { DATABASES } from '../helpers/database.js';
import { makePlan } from '../helpers/factories.js';
import type { TestUser } from '../helpers/subscriptions.js';
import { dbOf, simulate } from '../helpers/subscriptions.js';

/*
 * Every open invoice has its own hosted page (docs/hosted.md, "A page for every open invoice"):
 * its link is on the invoice in the API, opening it never charges anything, its form pays the
 * invoice by any method as POST /payments/charge/ does (another bank's virtual account replacing
 * the first one at the gateway), forty submits at once make one charge, and once paid the link
 * says so. A usage-only invoice left open after its subscription was canceled is paid there too.
 */

const T0 = new Date('2027-06-02T03:00:00.000Z');
const calls: PlanCharge = { metric: 'calls', metric_name: 'API calls', model: 'standard', properties: { unit_amount: '500' } };
const LINK = /^http:\/\/[^/]+\/pay\/inv_[A-Za-z0-9_-]{44}\/$/;

describe.each(DATABASES)('an open invoice\'s hosted page (%s)', { timeout: 120_000 }, (kind) => {
  let h: BillingHarness;
  let writeKey: string;
  let staff: TestUser;
  let customer: TestUser;
  let base = T0;

  beforeAll(async () => {
    h = await startBilling(kind, T0);
    const em = dbOf(h.server);
    em.create(BillableMetric, { code: 'calls', name: 'API calls', aggregation: 'count', field: null, filters: null } as BillableMetric);
    await em.flush();
    await makePlan(em, { slug: 'metered-small', name: 'Metered small', price: '50000.00', charges: [calls] });
    const { billing } = h.server.running;
    writeKey = (await createApiKey({ em: billing.orm.em.fork(), config: billing.config, clock: billing.clock }, cliActor(), { name: 'shop', scope: 'write' })).key;
    staff = await h.server.createUser({ isStaff: true });
  });
  afterAll(() => h?.stop());
  beforeEach(async () => {
    base = new Date(base.getTime() + 70 * DAY);
    h.clock.set(base);
    customer = await h.server.createUser();
  });

  const api = (method: string, path: string, body?: unknown, as: TestUser = customer) => h.server.api(method, path, { auth: as, body });
  const sim = () => h.server.running.billing.simulator!;
  const charges = () => sim().transactions().length;
  const paymentsOf = (invoiceId: string) => dbOf(h.server).find(Payment, { invoice: invoiceId }, { orderBy: { createdAt: 'asc' } });

  /** The invoice's page opened as a browser opens it: its cookie and the form's CSRF token kept. */
  async function openPage(url: string) {
    const path = new URL(url).pathname;
    const first = await h.server.request('GET', path);
    expect(first.status, first.text).toBe(200);
    const cookie = first.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(first.text)?.[1] ?? '';
    const post = (fields: Record<string, string>) =>
      h.server.request('POST', path, { headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, rawBody: new URLSearchParams({ csrf_token: csrf, ...fields }).toString() });
    const get = (suffix = '') => h.server.request('GET', `${path}${suffix}`, { headers: { cookie } });
    return { path, post, get, first };
  }

  /** Subscribes by Mandiri bill, pays, sends 7 calls, cancels now; the usage-only invoice's order then expires at the gateway. */
  async function canceledWithOpenUsage(): Promise<{ subId: string; invoice: Invoice }> {
    const created = await api('POST', '/subscriptions/', { plan_id: 'metered-small', payment_type: 'echannel' });
    expect(created.status, created.text).toBe(201);
    await simulate(h.server, created.body.payment.order_id, 'settle');
    const subId = created.body.subscription.id as string;
    const events = Array.from({ length: 7 }, (_, i) => ({ transaction_id: `p-${subId}-${i}`, customer: customer.id, code: 'calls', timestamp: new Date(base.getTime() + (i + 1) * 60_000).toISOString() }));
    h.clock.set(new Date(base.getTime() + DAY));
    expect((await h.server.api('POST', '/events/batch/', { headers: { authorization: `Bearer ${writeKey}` }, body: { events } })).status).toBe(202);
    expect((await api('POST', `/subscriptions/${subId}/cancel/`, { immediate: true })).status).toBe(200);
    const invoice = await dbOf(h.server).findOneOrFail(Invoice, { subscription: subId, billingReason: 'subscription_update' });
    expect(invoice).toMatchObject({ status: 'open', totalAmount: '3500.00' });
    const [collected] = await paymentsOf(invoice.id);
    await simulate(h.server, collected!.orderId, 'expire');
    return { subId, invoice };
  }

  it('a first invoice: its link in the API; GET and HEAD charge nothing; another bank\'s VA replaces the first at the gateway, and its settlement pays the invoice; then the link says Lunas and charges nothing', async () => {
    const created = await api('POST', '/subscriptions/', { plan_id: 'pro-monthly', payment_type: 'bank_transfer', metadata: { bank: 'bca' } });
    expect(created.status, created.text).toBe(201);
    const invoiceId = created.body.payment.invoice_id as string;
    const bca = created.body.payment.order_id as string;

    const own = await api('GET', `/invoices/${invoiceId}/`);
    expect(own.body.hosted_url).toMatch(LINK);
    const url = own.body.hosted_url as string;
    expect((await api('GET', '/invoices/')).body.results.find((i: { id: string }) => i.id === invoiceId).hosted_url).toBe(url);
    expect((await api('GET', `/admin/invoices/${invoiceId}/`, undefined, staff)).body.hosted_url).toBe(url);
    expect((await api('GET', `/admin/invoices/?user=${customer.id}`, undefined, staff)).body.results[0].hosted_url).toBe(url);
    // The same link on every read.
    expect((await api('GET', `/invoices/${invoiceId}/`)).body.hosted_url).toBe(url);

    const before = charges();
    const { path, post, get, first } = await openPage(url);
    for (let i = 0; i < 3; i += 1) expect((await h.server.request('GET', path)).status).toBe(200);
    for (let i = 0; i < 2; i += 1) expect((await h.server.request('HEAD', path)).status).toBe(200);
    expect((await get('status')).body).toMatchObject({ state: 'pending', order_id: bca });
    expect(charges()).toBe(before);
    expect((await paymentsOf(invoiceId)).map((p) => p.status)).toEqual(['pending']);
    expect(first.text).toContain(created.body.payment.payment_details.va_number);
    expect(first.text).toContain('Pilih metode lain');
    expect(first.text).toContain(`name="replaces" value="${bca}"`);
    expect((await get('?lang=en')).text).toContain('Choose another method');

    const swapped = await post({ payment_type: 'bank_transfer', bank: 'bni', replaces: bca });
    expect(swapped.status, swapped.text).toBe(303);
    expect(sim().transaction(bca)?.transaction_status).toBe('cancel');
    expect(charges() - before).toBe(1);
    const payments = await paymentsOf(invoiceId);
    expect(payments.map((p) => [p.paymentType, p.status])).toEqual([['bank_transfer', 'canceled'], ['bank_transfer', 'pending']]);
    const bni = payments[1]!;
    expect(bni.paymentDetails).toMatchObject({ bank: 'bni' });
    const waiting = await get();
    expect(waiting.text).toContain(String(bni.paymentDetails.va_number));
    expect(waiting.text).toMatch(/Transfer ke nomor virtual account BNI/);

    await simulate(h.server, bni.orderId, 'settle');
    expect((await dbOf(h.server).findOneOrFail(Invoice, invoiceId)).status).toBe('paid');
    expect((await api('GET', `/subscriptions/${created.body.subscription.id}/`)).body.status).toBe('active');

    const paid = await get();
    expect(paid.status).toBe(200);
    expect(paid.text).toContain('Lunas');
    expect(paid.text).not.toContain('id="checkout-form"');
    expect((await get('?lang=en')).text).toContain('Paid');
    expect((await h.server.request('HEAD', path)).status).toBe(200);
    expect((await get('status')).body).toMatchObject({ state: 'paid' });
    const late = await post({ payment_type: 'qris' });
    expect(late.status).toBe(303);
    expect(charges() - before).toBe(1);
    expect((await api('GET', `/invoices/${invoiceId}/`)).body.hosted_url).toBe(url);
  });

  it('a usage-only invoice left open after a cancel: the portal links it, forty submits at once make one charge, the gateway\'s settlement pays it, the subscription stays canceled', async () => {
    const { subId, invoice } = await canceledWithOpenUsage();
    const url = (await api('GET', `/invoices/${invoice.id}/`)).body.hosted_url as string;
    expect(url).toMatch(LINK);

    // The portal shows a pay link on the open invoice, leading to its page.
    const portal = await api('POST', '/portal-sessions/', { return_url: `${h.server.url}/shop` });
    expect(portal.status, portal.text).toBe(201);
    const portalPath = new URL(portal.body.url).pathname;
    const landing = await h.server.request('GET', portalPath);
    const portalCookie = landing.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const portalCsrf = /name="csrf_token" value="([^"]+)"/.exec(landing.text)![1]!;
    const claimed = await h.server.request('POST', portalPath, { headers: { cookie: portalCookie, 'content-type': 'application/x-www-form-urlencoded' }, rawBody: `csrf_token=${encodeURIComponent(portalCsrf)}` });
    expect(claimed.status).toBe(303);
    const shown = await h.server.request('GET', portalPath, { headers: { cookie: portalCookie } });
    expect(shown.text).toContain(`href="${new URL(url).pathname}"`);
    expect(shown.text).toMatch(/class="invoice-pay"[^>]*>Bayar</);

    const before = charges();
    const { post, get } = await openPage(url);
    expect((await get()).text).toContain('Rp\u00a03.500');
    const answers = await Promise.all(Array.from({ length: 40 }, () => post({ payment_type: 'qris' })));
    expect(answers.map((a) => a.status)).toEqual(Array(40).fill(303));
    expect(charges() - before).toBe(1);
    const payments = await paymentsOf(invoice.id);
    const pending = payments.filter((p) => p.status === 'pending');
    expect(pending.map((p) => p.paymentType)).toEqual(['qris']);
    expect((await get()).text).toContain('class="qr"');

    await simulate(h.server, pending[0]!.orderId, 'settle');
    expect((await dbOf(h.server).findOneOrFail(Invoice, invoice.id)).status).toBe('paid');
    expect((await api('GET', `/subscriptions/${subId}/`)).body.status).toBe('canceled');
    expect((await get()).text).toContain('Lunas');
    // Paid: the portal no longer offers to pay it.
    expect((await h.server.request('GET', portalPath, { headers: { cookie: portalCookie } })).text).not.toContain('class="invoice-pay"');
  });

  it('a voided invoice\'s link answers 200, says nothing is due, offers no form and charges nothing', async () => {
    const created = await api('POST', '/subscriptions/', { plan_id: 'basic-monthly', payment_type: 'qris' });
    expect(created.status, created.text).toBe(201);
    const invoiceId = created.body.payment.invoice_id as string;
    const url = (await api('GET', `/invoices/${invoiceId}/`)).body.hosted_url as string;
    const { post, get } = await openPage(url);
    // The never-paid subscription is canceled: its first invoice is voided.
    expect((await api('POST', `/subscriptions/${created.body.subscription.id}/cancel/`, { immediate: true })).status).toBe(200);
    expect((await dbOf(h.server).findOneOrFail(Invoice, invoiceId)).status).toBe('void');
    const before = charges();
    const page = await get();
    expect(page.status).toBe(200);
    expect(page.text).toContain('Tidak ada yang perlu dibayar');
    expect(page.text).not.toContain('id="checkout-form"');
    expect((await get('?lang=en')).text).toContain('Nothing is due');
    expect((await get('status')).body).toMatchObject({ state: 'nothing_due' });
    expect((await post({ payment_type: 'bank_transfer', bank: 'bni' })).status).toBe(303);
    expect(charges()).toBe(before);
    expect((await paymentsOf(invoiceId)).filter((p) => p.status === 'pending')).toEqual([]);
  });

  it('a forged link, one altered by a character, or another invoice\'s id under this one\'s seal answers 404 and charges nothing', async () => {
    const created = await api('POST', '/subscriptions/', { plan_id: 'basic-monthly', payment_type: 'qris' });
    const mine = (await api('GET', `/invoices/${created.body.payment.invoice_id}/`)).body.hosted_url as string;
    const other = await h.server.createUser();
    const theirs = await h.server.api('POST', '/subscriptions/', { auth: other, body: { plan_id: 'basic-monthly', payment_type: 'qris' } });
    const theirUrl = (await h.server.api('GET', `/invoices/${theirs.body.payment.invoice_id}/`, { auth: other })).body.hosted_url as string;
    const token = /inv_([A-Za-z0-9_-]{22})([A-Za-z0-9_-]{22})/.exec(mine)!;
    const theirToken = /inv_([A-Za-z0-9_-]{22})([A-Za-z0-9_-]{22})/.exec(theirUrl)!;
    const flip = (c: string) => (c === 'A' ? 'B' : 'A');
    const forged = [
      `inv_${theirToken[1]}${token[2]}`,
      `inv_${token[1]}${token[2]!.slice(0, 21)}${flip(token[2]!.slice(21))}`,
      `inv_${token[1]!.slice(0, 5)}${flip(token[1]![5]!)}${token[1]!.slice(6)}${token[2]}`,
      `inv_${'A'.repeat(44)}`,
      'inv_short',
    ];
    const before = charges();
    for (const t of forged) {
      const page = await h.server.request('GET', `/pay/${t}/`);
      expect(page.status, t).toBe(404);
      expect(page.text).not.toContain('csrf_token');
      expect((await h.server.request('HEAD', `/pay/${t}/`)).status).toBe(404);
      const posted = await h.server.request('POST', `/pay/${t}/`, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, rawBody: 'payment_type=qris' });
      expect(posted.status).toBe(404);
    }
    // A form without this browser's CSRF token charges nothing either.
    const refused = await h.server.request('POST', new URL(mine).pathname, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, rawBody: 'payment_type=bank_transfer&bank=bni' });
    expect(refused.status).toBe(403);
    expect(charges()).toBe(before);
  });
});
