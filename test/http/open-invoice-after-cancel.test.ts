import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BillableMetric } from '../../src/db/entities/billable-metric.js';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import { User } from '../../src/db/entities/user.js';
import type { PlanCharge } from '../../src/domain/usage/charge-models.js';
import { createApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { startBilling, DAY, type BillingHarness } from '../helpers/billing.js';
import { DATABASES } from '../helpers/database.js';
import { makePlan } from '../helpers/factories.js';
import type { TestUser } from '../helpers/subscriptions.js';
import { dbOf, simulate } from '../helpers/subscriptions.js';

/*
 * An open invoice stays payable whatever became of its subscription (docs/usage.md,
 * 'Collection'): a metered subscription canceled now with 7 calls leaves a usage-only invoice of
 * Rp 3.500, collected by Mandiri bill; the gateway expires that order, the invoice is open again,
 * and POST /payments/charge/ pays it by every method, named by its subscription or by the
 * invoice itself, without reviving the subscription.
 */

const T0 = new Date('2027-05-03T03:00:00.000Z');
const calls: PlanCharge = { metric: 'calls', metric_name: 'API calls', model: 'standard', properties: { unit_amount: '500' } };

describe.each(DATABASES)('an open invoice after its subscription ended (%s)', { timeout: 180_000 }, (kind) => {
  let h: BillingHarness;
  let writeKey: string;
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
  });
  afterAll(() => h?.stop());
  beforeEach(async () => {
    base = new Date(base.getTime() + 70 * DAY);
    h.clock.set(base);
    customer = await h.server.createUser();
  });

  const api = (method: string, path: string, body?: unknown, as: TestUser = customer) => h.server.api(method, path, { auth: as, body });
  const charge = (body: Record<string, unknown>, as?: TestUser) => api('POST', '/payments/charge/', body, as);

  /** Subscribes by Mandiri bill, pays, sends 7 calls, cancels now: the usage-only invoice's order then expires at the gateway. */
  async function canceledWithOpenUsage(): Promise<{ subId: string; invoice: Invoice }> {
    const created = await api('POST', '/subscriptions/', { plan_id: 'metered-small', payment_type: 'echannel' });
    expect(created.status, created.text).toBe(201);
    await simulate(h.server, created.body.payment.order_id, 'settle');
    const subId = created.body.subscription.id as string;
    const events = Array.from({ length: 7 }, (_, i) => ({ transaction_id: `c-${subId}-${i}`, customer: customer.id, code: 'calls', timestamp: new Date(base.getTime() + (i + 1) * 60_000).toISOString() }));
    h.clock.set(new Date(base.getTime() + DAY));
    const sent = await h.server.api('POST', '/events/batch/', { headers: { authorization: `Bearer ${writeKey}` }, body: { events } });
    expect(sent.status, sent.text).toBe(202);
    const canceled = await api('POST', `/subscriptions/${subId}/cancel/`, { immediate: true });
    expect(canceled.status, canceled.text).toBe(200);
    const invoice = await dbOf(h.server).findOneOrFail(Invoice, { subscription: subId, billingReason: 'subscription_update' });
    expect(invoice).toMatchObject({ status: 'open', totalAmount: '3500.00' });
    const [collected] = await dbOf(h.server).find(Payment, { invoice: invoice.id });
    expect(collected).toMatchObject({ paymentType: 'echannel', status: 'pending' });
    await simulate(h.server, collected.orderId, 'expire');
    expect((await dbOf(h.server).findOneOrFail(Invoice, invoice.id)).status).toBe('open');
    return { subId, invoice };
  }

  it('POST /payments/charge/ pays it by every method, named by its subscription or by itself; paying it revives nothing', async () => {
    const { subId, invoice } = await canceledWithOpenUsage();
    const methods: Record<string, unknown>[] = [
      { payment_type: 'echannel' },
      { payment_type: 'bank_transfer', metadata: { bank: 'bni' } },
      { payment_type: 'qris' },
      { payment_type: 'gopay' },
      { payment_type: 'shopeepay' },
      { token: '481111-1114-a1b2c3d4-e5f6-7a8b-9c0d-e1f2a3b4c5d6' },
    ];
    let last = null as null | { order_id: string };
    for (const [i, method] of methods.entries()) {
      const named = i % 2 === 0 ? { subscription_id: subId } : { invoice_id: invoice.id };
      const res = await charge({ ...named, ...method });
      expect(res.status, `${JSON.stringify(method)}: ${res.text}`).toBe(201);
      expect(res.body.payment).toMatchObject({ invoice_id: invoice.id, subscription_id: null, gross_amount: '3500.00' });
      last = res.body.payment;
    }
    // Every earlier order was canceled; only the last one is left to pay.
    const pending = await dbOf(h.server).find(Payment, { invoice: invoice.id, status: 'pending' });
    expect(pending.map((p) => p.orderId)).toEqual([last!.order_id]);

    await simulate(h.server, pending[0].orderId, 'settle');
    expect((await dbOf(h.server).findOneOrFail(Invoice, invoice.id)).status).toBe('paid');
    const sub = (await api('GET', `/subscriptions/${subId}/`)).body;
    expect(sub.status).toBe('canceled');
    expect((await api('GET', '/wallet/me/')).body.balance).toBe('0.00');

    // Paid: nothing is due any more, by either name; the ended subscription refuses as before.
    expect((await charge({ invoice_id: invoice.id })).body).toMatchObject({ code: 'nothing_due' });
    expect((await charge({ subscription_id: subId })).body).toMatchObject({ code: 'invalid_state' });
  });

  it('the wallet pays it too; bad names answer 4xx', async () => {
    const { subId, invoice } = await canceledWithOpenUsage();
    const other = await h.server.createUser();
    expect((await charge({ invoice_id: invoice.id }, other)).status).toBe(404);
    expect((await charge({})).status).toBe(400);
    const mine = await api('POST', '/subscriptions/', { plan_id: 'basic-monthly', payment_type: 'qris' });
    const mixed = await charge({ subscription_id: mine.body.subscription.id, invoice_id: invoice.id });
    expect(mixed.status, mixed.text).toBe(400);
    expect(mixed.body.errors[0]).toMatchObject({ field: 'invoice_id' });

    await h.fund(await dbOf(h.server).findOneOrFail(User, customer.id), '5000.00');
    const paid = await charge({ invoice_id: invoice.id, payment_type: 'wallet' });
    expect(paid.status, paid.text).toBe(201);
    expect(paid.body.payment).toMatchObject({ status: 'settled', subscription_id: null });
    expect((await dbOf(h.server).findOneOrFail(Invoice, invoice.id)).status).toBe('paid');
    expect((await api('GET', `/subscriptions/${subId}/`)).body.status).toBe('canceled');
  });
});
