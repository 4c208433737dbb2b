import { createHash } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BillableMetric } from '../../src/db/entities/billable-metric.js';
import type { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { User } from '../../src/db/entities/user.js';
import { matchesFilters, parseUnits } from '../../src/domain/usage/aggregation.js';
import type { PlanCharge } from '../../src/domain/usage/charge-models.js';
import { createApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { localDate } from '../../src/domain/billing-calendar.js';
import { invoiceDocumentView } from '../../src/services/documents/invoice-document.js';
import { renderInvoicePdf } from '../../src/services/documents/invoice-pdf.js';
import { exportCoretax } from '../../src/services/tax/export-coretax.js';
import { parseTaxMonth } from '../../src/services/tax/tax-month.js';
import { cancelSubscription } from '../../src/services/subscriptions/cancel-subscription.js';
import { changeSubscriptionPlan, previewPlanChange } from '../../src/services/subscriptions/change-subscription-plan.js';
import { eventStore } from '../../src/services/usage/event-store.js';
import { usageOf } from '../../src/services/usage/usage-charges.js';
import { startBilling, DAY, iso, type BillingHarness } from '../helpers/billing.js';
import { DATABASES } from '../helpers/database.js';
import { makePlan } from '../helpers/factories.js';
import { dbOf, gatewayStatus, simulate } from '../helpers/subscriptions.js';

/*
 * Usage billed in arrears (docs/usage.md, 'Billing in arrears'), with events sent to POST
 * /events/batch/: the renewal invoice of a plan with charges carries the period's price and its
 * usage with PPN, made only USAGE_GRACE_MINUTES after the period's end; a closed window refuses
 * late events; a trial's usage, a cancellation at the period's end or now, an expiry at
 * max_cycles, a plan change now or at the renewal, and a window with no usage.
 */

const T0 = new Date('2027-03-01T03:00:00.000Z');
const MINUTE = 60_000;
const GRACE = 60 * MINUTE;
const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000', USAGE_GRACE_MINUTES: '60' };

const calls = (unitAmount: string): PlanCharge => ({ metric: 'calls', metric_name: 'API calls', model: 'standard', properties: { unit_amount: unitAmount } });
const gb = (unitAmount: string): PlanCharge => ({ metric: 'gb', metric_name: 'Transfer (GB)', model: 'standard', properties: { unit_amount: unitAmount } });

describe.each(DATABASES)('usage billed in arrears (%s)', { timeout: 180_000 }, (kind) => {
  let h: BillingHarness;
  let writeKey: string;
  /** Each test starts its subscriptions at its own time, after the previous test's. */
  let base = T0;

  beforeAll(async () => {
    h = await startBilling(kind, T0, SELLER);
    const em = dbOf(h.server);
    em.create(BillableMetric, { code: 'calls', name: 'API calls', aggregation: 'count', field: null, filters: null } as BillableMetric);
    em.create(BillableMetric, { code: 'gb', name: 'Transfer (GB)', aggregation: 'sum', field: 'gb', filters: null } as BillableMetric);
    await em.flush();
    // Rp 100.000 a month + Rp 4.500 a call, PPN on top (exclusive).
    await makePlan(em, { slug: 'metered', name: 'Metered', price: '100000.00', taxBehavior: 'exclusive', charges: [calls('4500')] });
    await makePlan(em, { slug: 'metered-big', name: 'Metered Big', price: '200000.00', charges: [calls('3000'), gb('1000')] });
    await makePlan(em, { slug: 'metered-trial', name: 'Metered trial', price: '50000.00', trialPeriodDays: 7, charges: [calls('1000')] });
    await makePlan(em, { slug: 'metered-once', name: 'Metered once', price: '50000.00', maxCycles: 1, charges: [calls('1000')] });
    await makePlan(em, { slug: 'plain', name: 'Plain', price: '50000.00' });
    const { billing } = h.server.running;
    writeKey = (await createApiKey({ em: billing.orm.em.fork(), config: billing.config, clock: billing.clock }, cliActor(), { name: 'shop', scope: 'write' })).key;
  });
  afterAll(() => h?.stop());

  /** A new test's start, 70 days after the last one's: earlier subscriptions are out of the way. */
  function nextStart(): Date {
    base = new Date(base.getTime() + 70 * DAY);
    h.clock.set(base);
    return base;
  }

  async function subscribe(plan: string, funds = '2000000.00'): Promise<{ user: User; sub: Subscription }> {
    const user = await h.user();
    await h.fund(user, funds);
    const made = await h.subscribe(user, plan, 'wallet');
    return { user, sub: await h.sub(made.id) };
  }

  let serial = 0;
  const event = (user: User, code: string, at: Date, properties?: Record<string, unknown>) => ({
    transaction_id: `bill_${++serial}`,
    customer: user.id,
    code,
    timestamp: at.toISOString(),
    ...(properties ? { properties } : {}),
  });

  /** POST /events/batch/; null when the endpoint is not there yet (the events are then stored through the event store). */
  async function post(events: Record<string, unknown>[]) {
    const res = await h.server.api('POST', '/events/batch/', { headers: { authorization: `Bearer ${writeKey}` }, body: { events } });
    return res.status === 501 || res.status === 404 ? null : res;
  }

  /** Sends events that all happened by now: the clock moves on to the last of them when it is behind. */
  async function send(events: Record<string, unknown>[]): Promise<void> {
    const last = Math.max(...events.map((e) => new Date(e.timestamp as string).getTime()));
    if (h.clock.now().getTime() < last) h.clock.set(new Date(last + 1));
    const res = await post(events);
    if (!res) return storeDirectly(events);
    expect(res.status, res.text).toBe(202);
    expect(res.body.accepted).toBe(events.length);
  }

  async function storeDirectly(events: Record<string, unknown>[]): Promise<void> {
    await dbOf(h.server).transactional(async (em) => {
      const prepared = [];
      for (const e of events) {
        const metric = await em.findOneOrFail(BillableMetric, { code: e.code as string });
        const sub = await em.findOneOrFail(Subscription, { liveUserId: e.customer as string });
        const props = (e.properties ?? {}) as Record<string, unknown>;
        prepared.push({
          customerId: e.customer as string,
          transactionId: e.transaction_id as string,
          bodyHash: createHash('sha256').update(JSON.stringify([e.code, e.timestamp, props])).digest('hex'),
          subscriptionId: sub.id,
          metricId: metric.id,
          timestamp: new Date(e.timestamp as string),
          valueMicro: metric.aggregation === 'sum' ? parseUnits(props[metric.field!]) : null,
          uniqueValue: null,
          counted: matchesFilters(metric.filters, props),
          properties: JSON.stringify(props),
          receivedAt: h.clock.now(),
        });
      }
      await eventStore.insert(em as never, prepared);
    });
  }

  /** `n` calls spread over [from, from + n minutes). */
  const callsFrom = (user: User, from: Date, n: number) => Array.from({ length: n }, (_, i) => event(user, 'calls', new Date(from.getTime() + i * MINUTE)));

  /** A billing run at `at`. */
  async function runAt(at: Date) {
    h.clock.set(at);
    return h.run();
  }

  const usageLinesOf = (invoice: Invoice) => invoice.lines.getItems().filter((l) => l.kind === 'usage');
  const usageOnly = async (subId: string) => (await h.invoices(subId)).filter((i) => i.billingReason === 'subscription_update' && i.lines.getItems().every((l) => l.kind === 'usage'));

  it('renews a metered plan only after the grace, its invoice the period price and the usage with PPN (Rp 100.000 + 40 calls x Rp 4.500 = Rp 280.000, PPN Rp 30.800); a late event in the grace counts, one for the closed window is refused and the next window counts it', async () => {
    const start = nextStart();
    const { user, sub } = await subscribe('metered');
    const plain = await subscribe('plain');
    const periodEnd = sub.currentPeriodEnd!;
    await send(callsFrom(user, new Date(start.getTime() + DAY), 39));

    // Just after the period's end: the plain plan renews, the metered one waits for late events.
    await runAt(new Date(periodEnd.getTime() + MINUTE));
    expect((await h.invoices(plain.sub.id)).filter((i) => i.billingReason === 'subscription_cycle')).toHaveLength(1);
    expect((await h.invoices(sub.id)).filter((i) => i.billingReason === 'subscription_cycle')).toHaveLength(0);
    // A late event of the period, sent in the grace, is billed with it.
    await send([event(user, 'calls', new Date(periodEnd.getTime() - 1000))]);
    await runAt(new Date(periodEnd.getTime() + GRACE - 1));
    expect((await h.invoices(sub.id)).filter((i) => i.billingReason === 'subscription_cycle')).toHaveLength(0);

    await runAt(new Date(periodEnd.getTime() + GRACE));
    const [renewal] = (await h.invoices(sub.id)).filter((i) => i.billingReason === 'subscription_cycle');
    expect(renewal).toMatchObject({ status: 'paid', subtotal: '280000.00', taxBehavior: 'exclusive', taxBase: '280000.00', otherTaxBase: '256666.67', taxAmount: '30800.00', totalAmount: '310800.00' });
    const lines = renewal.lines.getItems().map((l) => ({ kind: l.kind, amount: l.amount, discountAmount: l.discountAmount, start: iso(l.periodStart), end: iso(l.periodEnd), subject: l.subject }));
    expect(lines).toEqual([
      expect.objectContaining({ kind: 'subscription', amount: '100000.00', start: iso(periodEnd) }),
      {
        kind: 'usage', amount: '180000.00', discountAmount: '0.00', start: iso(sub.currentPeriodStart), end: iso(periodEnd),
        subject: { type: 'usage', metric: 'calls', metric_name: 'API calls', aggregation: 'count', model: 'standard', units: '40' },
      },
    ]);
    expect(iso((await h.sub(sub.id)).usageBilledUntil)).toBe(iso(periodEnd));

    // The billed window is closed: an event in it is refused; one after it counts in the next window.
    const late = await post([event(user, 'calls', new Date(periodEnd.getTime() - 1))]);
    if (late) {
      expect(late.status, late.text).toBe(422);
      expect(late.text).toContain('period_closed');
    }
    await send([event(user, 'calls', new Date(periodEnd.getTime() + 1))]);
    const renewed = await h.sub(sub.id);
    const next = await usageOf(h.ctx(), renewed, renewed.plan, periodEnd, renewed.currentPeriodEnd!);
    expect(next.map((u) => [u.units, u.amount])).toEqual([['1', '4500.00']]);
  });

  it("bills a trial's usage at its end, with the first period's price", async () => {
    nextStart();
    const { user, sub } = await subscribe('metered-trial');
    expect(sub.status).toBe('trialing');
    await send(callsFrom(user, new Date(sub.currentPeriodStart!.getTime() + MINUTE), 3));
    await runAt(new Date(sub.trialEnd!.getTime() + GRACE));
    const [first] = (await h.invoices(sub.id)).filter((i) => i.billingReason === 'subscription_cycle');
    expect(first.totalAmount).toBe('53000.00');
    expect(usageLinesOf(first).map((l) => [l.amount, iso(l.periodStart), iso(l.periodEnd)])).toEqual([['3000.00', iso(sub.currentPeriodStart), iso(sub.trialEnd)]]);
    expect((await h.sub(sub.id)).status).toBe('active');
  });

  it('cancel at the period end: after the grace, a final usage-only invoice for the period, then canceled', async () => {
    nextStart();
    const { user, sub } = await subscribe('metered-big');
    await send([...callsFrom(user, new Date(sub.currentPeriodStart!.getTime() + DAY), 2), event(user, 'gb', new Date(sub.currentPeriodStart!.getTime() + 2 * DAY), { gb: '1.5' })]);
    await cancelSubscription(h.ctx(), user, sub.id, { immediate: false });
    const periodEnd = sub.currentPeriodEnd!;
    await runAt(new Date(periodEnd.getTime() + MINUTE));
    expect((await h.sub(sub.id)).status).toBe('active');
    const before = await h.balance(user);

    await runAt(new Date(periodEnd.getTime() + GRACE));
    expect((await h.sub(sub.id)).status).toBe('canceled');
    const [final] = await usageOnly(sub.id);
    expect(final).toMatchObject({ status: 'paid', totalAmount: '7500.00', periodStart: sub.currentPeriodStart, periodEnd });
    expect(usageLinesOf(final).map((l) => [l.subject?.metric, l.subject?.units, l.amount])).toEqual([['calls', '2', '6000.00'], ['gb', '1.5', '1500.00']]);
    expect(Number(before) - Number(await h.balance(user))).toBe(7500);
  });

  it('cancel now: the usage so far billed now, the window closed there; a window with no usage issues no invoice', async () => {
    const start = nextStart();
    const { user, sub } = await subscribe('metered-big');
    await send(callsFrom(user, new Date(start.getTime() + MINUTE), 5));
    const now = new Date(start.getTime() + 3 * DAY);
    h.clock.set(now);
    await cancelSubscription(h.ctx(), user, sub.id, { immediate: true });
    const ended = await h.sub(sub.id);
    expect(ended.status).toBe('canceled');
    expect(iso(ended.usageBilledUntil)).toBe(iso(now));
    const [final] = await usageOnly(sub.id);
    expect(final).toMatchObject({ status: 'paid', totalAmount: '15000.00', periodStart: sub.currentPeriodStart, periodEnd: now });
    // 0 GB: the charge is listed at 0 on the invoice that bills something.
    expect(usageLinesOf(final).map((l) => [l.subject?.metric, l.amount])).toEqual([['calls', '15000.00'], ['gb', '0.00']]);

    // No usage at all: nothing issued, the window still closed.
    const quiet = await subscribe('metered-big');
    const later = new Date(now.getTime() + DAY);
    h.clock.set(later);
    await cancelSubscription(h.ctx(), quiet.user, quiet.sub.id, { immediate: true });
    expect(await usageOnly(quiet.sub.id)).toEqual([]);
    expect(iso((await h.sub(quiet.sub.id)).usageBilledUntil)).toBe(iso(later));
  });

  it('expiry at max_cycles: the last period’s usage on a usage-only invoice after the grace', async () => {
    nextStart();
    const { user, sub } = await subscribe('metered-once');
    await send(callsFrom(user, new Date(sub.currentPeriodStart!.getTime() + DAY), 4));
    await runAt(new Date(sub.currentPeriodEnd!.getTime() + MINUTE));
    expect((await h.sub(sub.id)).status).toBe('active');
    await runAt(new Date(sub.currentPeriodEnd!.getTime() + GRACE));
    expect((await h.sub(sub.id)).status).toBe('expired');
    const [final] = await usageOnly(sub.id);
    expect(final).toMatchObject({ status: 'paid', totalAmount: '4000.00', periodEnd: sub.currentPeriodEnd });
  });

  it("a plan change now bills the usage so far under the old plan on its own invoice; the change's invoice is its preview", async () => {
    const start = nextStart();
    const { user, sub } = await subscribe('metered-big');
    await send(callsFrom(user, new Date(start.getTime() + MINUTE), 3));
    const now = new Date(start.getTime() + 10 * DAY);
    h.clock.set(now);
    const preview = await previewPlanChange(h.ctx(), user, sub.id, 'metered');
    const changed = await changeSubscriptionPlan(h.ctx(), user, sub.id, { planId: 'metered', quote: { pricedAt: preview.pricedAt, net: preview.terms!.net } });
    expect(changed.subscription.plan.slug).toBe('metered');
    const [usage] = await usageOnly(sub.id);
    expect(usage).toMatchObject({ status: 'paid', totalAmount: '9000.00', periodStart: sub.currentPeriodStart, periodEnd: now });
    const change = (await h.invoices(sub.id)).filter((i) => i.billingReason === 'subscription_update' && i.id !== usage.id);
    for (const invoice of change) expect(invoice.totalAmount).toBe(preview.terms!.net);
    expect(iso((await h.sub(sub.id)).usageBilledUntil)).toBe(iso(now));
  });

  /**
   * A Metered subscriber over HTTP who made 2 calls, then went down to Plain at once: the 2 calls
   * (Rp 9.990 with PPN) are on a usage invoice whose first order is sent and still pending.
   */
  const openUsageInvoice = async () => {
    const start = nextStart();
    const customer = await h.server.createUser();
    const created = await h.server.api('POST', '/subscriptions/', { auth: customer, body: { plan_id: 'metered', payment_type: 'bank_transfer' } });
    expect(created.status, created.text).toBe(201);
    await simulate(h.server, created.body.payment.order_id, 'settle');
    const subId = created.body.subscription.id as string;
    await send(callsFrom({ id: customer.id } as User, new Date(start.getTime() + MINUTE), 2));
    h.clock.set(new Date(start.getTime() + 3 * DAY));
    const changed = await h.server.api('POST', `/subscriptions/${subId}/change-plan/`, { auth: customer, body: { plan_id: 'plain', immediate: true } });
    expect(changed.status, changed.text).toBe(200);
    const [usage] = await usageOnly(subId);
    return { customer, subId, usage };
  };

  it('a usage invoice paid through POST /payments/charge/ stays a usage invoice: an expired charge leaves it open with its usage on it, a settled one pays it and nothing goes to the wallet', async () => {
    const { customer, subId, usage } = await openUsageInvoice();
    expect(usage).toMatchObject({ status: 'open', totalAmount: '9990.00' });
    const walletAfterChange = (await h.server.api('GET', '/wallet/me/', { auth: customer })).body.balance;
    const ordersOf = async () => (await dbOf(h.server).find(Payment, { invoice: usage.id }, { orderBy: { createdAt: 'asc' } })).map((p) => p.orderId);

    // The customer pays it again (the first order still pending) and lets that order expire.
    const charged = await h.server.api('POST', '/payments/charge/', { auth: customer, body: { subscription_id: subId } });
    expect(charged.status, charged.text).toBe(201);
    expect(charged.body.payment.gross_amount).toBe('9990.00');
    await simulate(h.server, charged.body.payment.order_id, 'expire');
    const [stillOpen] = await usageOnly(subId);
    expect(stillOpen.status).toBe('open');
    expect((await h.sub(subId)).plan.slug).toBe('plain');

    // Paid at last: the invoice is paid; the wallet gets nothing (it was no plan change's money).
    const again = await h.server.api('POST', '/payments/charge/', { auth: customer, body: { subscription_id: subId } });
    expect(again.status, again.text).toBe(201);
    await simulate(h.server, again.body.payment.order_id, 'settle');
    const [paid] = await usageOnly(subId);
    expect(paid.status).toBe('paid');
    expect((await h.server.api('GET', '/wallet/me/', { auth: customer })).body.balance).toBe(walletAfterChange);
    expect(await ordersOf()).toHaveLength(3);
  });

  it('40 charges of a usage invoice at once (a double click, forty tabs): one order is left to pay, every other is canceled here and at the gateway, and paying it pays the invoice once', async () => {
    const { customer, subId, usage } = await openUsageInvoice();
    const walletBefore = (await h.server.api('GET', '/wallet/me/', { auth: customer })).body.balance;

    const answers = await Promise.all(Array.from({ length: 40 }, () => h.server.api('POST', '/payments/charge/', { auth: customer, body: { subscription_id: subId } })));
    for (const r of answers) expect([201, 409, 503], r.text).toContain(r.status);
    expect(answers.filter((r) => r.status === 201).length).toBeGreaterThan(0);
    for (const r of answers.filter((a) => a.status === 201)) expect(r.body.payment).toMatchObject({ gross_amount: '9990.00', subscription_id: null });

    const payments = await dbOf(h.server).find(Payment, { invoice: usage.id }, { orderBy: { createdAt: 'asc' } });
    const pending = payments.filter((p) => p.status === 'pending');
    expect(pending).toHaveLength(1);
    for (const p of payments.filter((q) => q.status !== 'pending')) {
      const gw = await gatewayStatus(h.server, p.orderId);
      if (gw.status_code === '404') continue; // withdrawn before it reached the gateway
      expect(gw.transaction_status, p.orderId).not.toBe('pending');
    }

    await simulate(h.server, pending[0].orderId, 'settle');
    const [paid] = await usageOnly(subId);
    expect(paid).toMatchObject({ status: 'paid', totalAmount: '9990.00' });
    const settled = (await dbOf(h.server).find(Payment, { invoice: usage.id })).filter((p) => p.status === 'settled');
    expect(settled).toHaveLength(1);
    expect((await h.server.api('GET', '/wallet/me/', { auth: customer })).body.balance).toBe(walletBefore);
    expect((await h.sub(subId)).plan.slug).toBe('plain');
  });

  it('after a paid upgrade, ending now bills the window opened by the change (the change invoice starts its period there)', async () => {
    const start = nextStart();
    const { user, sub } = await subscribe('metered');
    await send(callsFrom(user, new Date(start.getTime() + MINUTE), 2));
    const changedAt = new Date(start.getTime() + 5 * DAY);
    h.clock.set(changedAt);
    await changeSubscriptionPlan(h.ctx(), user, sub.id, { planId: 'metered-big' });
    expect((await h.sub(sub.id)).plan.slug).toBe('metered-big');
    await send(callsFrom(user, new Date(changedAt.getTime() + MINUTE), 3));
    h.clock.set(new Date(changedAt.getTime() + DAY));
    await cancelSubscription(h.ctx(), user, sub.id, { immediate: true });
    const usage = await usageOnly(sub.id);
    // 2 calls at Rp 4.500 with PPN under Metered (Rp 9.990), then 3 at Metered Big's Rp 3.000 and 0 GB.
    expect(usage.map((i) => [i.status, i.totalAmount])).toEqual([['paid', '9990.00'], ['paid', '9000.00']]);
    // The change's invoice holds the period start the window starts at: the window is on the lines.
    expect(usage[1].periodStart).toBeNull();
    expect(usageLinesOf(usage[1]).map((l) => [iso(l.periodStart), iso(l.periodEnd), l.amount])).toEqual([[iso(changedAt), iso(h.clock.now()), '9000.00'], [iso(changedAt), iso(h.clock.now()), '0.00']]);
  });

  it('a scheduled change bills the period’s usage under the old plan at the renewal', async () => {
    nextStart();
    const { user, sub } = await subscribe('metered-big');
    await send(callsFrom(user, new Date(sub.currentPeriodStart!.getTime() + DAY), 2));
    await changeSubscriptionPlan(h.ctx(), user, sub.id, { planId: 'plain', immediate: false });
    await runAt(new Date(sub.currentPeriodEnd!.getTime() + GRACE));
    const [renewal] = (await h.invoices(sub.id)).filter((i) => i.billingReason === 'subscription_cycle');
    // Plain's Rp 50.000 for the new period; 2 calls at Metered Big's Rp 3.000 and 0 GB for the old one.
    expect(renewal.totalAmount).toBe('56000.00');
    expect(usageLinesOf(renewal).map((l) => [l.subject?.metric, l.amount])).toEqual([['calls', '6000.00'], ['gb', '0.00']]);
    expect((await h.sub(sub.id)).plan.slug).toBe('plain');
  });

  it('ending now voids an unpaid renewal that switched to a scheduled plan: its usage is billed again as the old plan priced it, not under the new one', async () => {
    nextStart();
    // Funds for the first period only: the renewal stays open, unpaid.
    const { user, sub } = await subscribe('metered-big', '200000.00');
    await send(callsFrom(user, new Date(sub.currentPeriodStart!.getTime() + DAY), 2));
    await changeSubscriptionPlan(h.ctx(), user, sub.id, { planId: 'plain', immediate: false });
    await runAt(new Date(sub.currentPeriodEnd!.getTime() + GRACE));
    const [renewal] = (await h.invoices(sub.id)).filter((i) => i.billingReason === 'subscription_cycle');
    expect(renewal.status).toBe('open');
    expect((await h.sub(sub.id)).plan.slug).toBe('plain');

    await cancelSubscription(h.ctx(), user, sub.id, { immediate: true });
    const invoices = await h.invoices(sub.id);
    expect(invoices.find((i) => i.id === renewal.id)?.status).toBe('void');
    // Plain charges no calls: priced again under it, the 2 calls would be billed nowhere.
    const [final] = await usageOnly(sub.id);
    expect(final.status).toBe('open');
    expect(usageLinesOf(final).map((l) => [l.subject?.metric, l.subject?.units, l.amount, iso(l.periodStart), iso(l.periodEnd)])).toEqual(
      usageLinesOf(renewal).map((l) => [l.subject?.metric, l.subject?.units, l.amount, iso(l.periodStart), iso(l.periodEnd)]),
    );
    expect(usageLinesOf(final).map((l) => [l.subject?.metric, l.amount])).toEqual([['calls', '6000.00'], ['gb', '0.00']]);
    expect(final.totalAmount).toBe('6000.00');
  });

  it('a window closed early takes the events stamped at its closing instant and ahead of it; a scheduled plan that does not charge a metric refuses its events after the period', async () => {
    const start = nextStart();
    const { user, sub } = await subscribe('metered-big');
    const now = new Date(start.getTime() + 2 * DAY);
    h.clock.set(now);
    // One at the cancel's very instant, one 4 minutes ahead (accepted: within the 5 minutes).
    const ahead = new Date(now.getTime() + 4 * MINUTE);
    const res = await post([event(user, 'calls', now), event(user, 'calls', ahead)]);
    expect(res?.status, res?.text).toBe(202);
    await cancelSubscription(h.ctx(), user, sub.id, { immediate: true });
    const [final] = await usageOnly(sub.id);
    expect(usageLinesOf(final).map((l) => [l.subject?.metric, l.subject?.units, l.amount])).toEqual([['calls', '2', '6000.00'], ['gb', '0', '0.00']]);
    expect(iso(final.periodEnd)).toBe(iso(new Date(ahead.getTime() + 1)));
    expect(iso((await h.sub(sub.id)).usageBilledUntil)).toBe(iso(new Date(ahead.getTime() + 1)));

    // A change to Plain (no charges) scheduled for the period's end: events after it would bill nowhere.
    const other = await subscribe('metered-big');
    await changeSubscriptionPlan(h.ctx(), other.user, other.sub.id, { planId: 'plain', immediate: false });
    h.clock.set(new Date(other.sub.currentPeriodEnd!.getTime() + MINUTE));
    const late = await post([event(other.user, 'calls', new Date(other.sub.currentPeriodEnd!.getTime() - MINUTE)), event(other.user, 'calls', other.sub.currentPeriodEnd!)]);
    expect(late?.status).toBe(422);
    expect(late?.body).toMatchObject({ code: 'period_closed', errors: [{ field: 'events[1].timestamp' }] });
  });

  it('a usage line on the invoice PDF and in the Coretax export, in Bahasa Indonesia, with its PPN (3 calls: DPP Rp 13.500, PPN Rp 1.485)', async () => {
    const start = nextStart();
    const { user, sub } = await subscribe('metered');
    await dbOf(h.server).nativeUpdate(User, { id: user.id }, { taxProfile: { buyer_type: 'individual', nik: '3171012345670001', name: 'Siti Aminah', address: 'Jl. Melati 3, Depok' } as never });
    await send(callsFrom(user, new Date(start.getTime() + MINUTE), 3));
    h.clock.set(new Date(start.getTime() + 2 * DAY));
    await cancelSubscription(h.ctx(), user, sub.id, { immediate: true });
    const [final] = await usageOnly(sub.id);
    expect(final).toMatchObject({ status: 'paid', taxBase: '13500.00', otherTaxBase: '12375.00', taxAmount: '1485.00', totalAmount: '14985.00' });

    // The document's words (what the PDF prints), and the PDF itself renders.
    const view = await invoiceDocumentView(h.ctx(), final);
    expect(view.lines.map((l) => l.description)).toEqual(['Pemakaian API calls: 3']);
    const { pdf } = await renderInvoicePdf(h.ctx(), final);
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');

    const dir = await mkdtemp(join(tmpdir(), 'usage-coretax-'));
    const month = parseTaxMonth(localDate(final.paidAt!, h.server.running.billing.config.documents.timeZone).slice(0, 7))!;
    const exported = await exportCoretax(h.ctx(), { month, out: join(dir, 'coretax.xml'), again: false });
    const xml = await readFile(exported.files[0].path, 'utf8');
    const faktur = xml.slice(xml.indexOf(`<RefDesc>${final.number}</RefDesc>`));
    // Its own line, named with the window it bills.
    expect(faktur).toMatch(/<Name>Pemakaian API calls: 3, \d{1,2} \S+ \d{4} s\.d\. \d{1,2} \S+ \d{4}<\/Name>/);
    expect(faktur).toContain('<Unit>UM.0033</Unit>');
    expect(faktur).toContain('<TaxBase>13500.00</TaxBase>');
    expect(faktur).toContain('<VAT>1485.00</VAT>');
  });
});
