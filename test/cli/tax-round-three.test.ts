import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BillableMetric } from '../../src/db/entities/billable-metric.js';
import { CreditNote } from '../../src/db/entities/credit-note.js';
import { Invoice, InvoiceLine } from '../../src/db/entities/invoice.js';
import { ManualClock } from '../../src/domain/clock.js';
import { createApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { runBilling } from '../../src/services/billing/run-billing.js';
import { refundPaymentAsStaff } from '../../src/services/refunds/refund-payment.js';
import { cliEnv } from '../helpers/cli-server.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { child, elements, fakturs, text, type XmlNode } from '../helpers/coretax-xml.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { fundWallet, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * A month closed as a finance officer closes it (docs/tax.md, "Which invoices a month holds" and
 * "What each faktur holds"): November 2026, paid by card, bank transfer and wallet; a per-seat
 * plan with a coupon and a seat change; a weekly metered plan renewed with its usage; an
 * inclusive price; a partial refund before the export; a chargeback before the export and one
 * after it; a payment the gateway reversed. The Coretax file is compared, faktur by faktur and
 * line by line, with a recomputation written here from the invoices' own lines, in whole cents
 * (BigInt), without the service's tax code.
 */

const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000', USAGE_GRACE_MINUTES: '60' };
const PLANS = [
  { slug: 'pro-tax', name: 'Pro', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'exclusive' as const },
  { slug: 'seats-tax', name: 'Tim', price: 40000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'exclusive' as const, per_unit: true },
  { slug: 'metered-tax', name: 'Meter', price: 99000, currency: 'IDR', interval: 1, interval_unit: 'week' as const, tax_behavior: 'exclusive' as const, charges: [{ metric: 'calls', model: 'standard', properties: { unit_amount: '4500' } }] },
  { slug: 'inclusive-tax', name: 'Hemat', price: 15000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'inclusive' as const },
];
const BUSINESS = { buyer_type: 'business', npwp: '0011122233344000', name: 'PT Tiga Putaran', address: 'Jakarta' };

const GOOD_FIELDS = ['Name', 'Unit', 'Price', 'Qty', 'TotalDiscount', 'TaxBase', 'OtherTaxBase', 'VAT'] as const;
const goods = (faktur: XmlNode) => elements(child(faktur, 'ListOfGoodService')).map((g) => Object.fromEntries(GOOD_FIELDS.map((f) => [f, text(g, f)])));

/* ---- the independent recomputation: whole cents as BigInt, half-up rounding written out ---- */
const cents = (money: string) => BigInt(Math.round(Number(money) * 100));
const show = (c: bigint) => `${c < 0n ? '-' : ''}${(c < 0n ? -c : c) / 100n}.${String((c < 0n ? -c : c) % 100n).padStart(2, '0')}`;
/** a / b rounded half up, for a, b ≥ 0. */
const divHalfUp = (a: bigint, b: bigint) => (2n * a + b) / (2n * b);
const divUp = (a: bigint, b: bigint) => (a + b - 1n) / b;
/** Whole rupiah, half up. */
const rupiah = (c: bigint) => divHalfUp(c, 100n) * 100n;
/** DPP Nilai Lain (11/12 of the DPP, to the cent) and PPN (12 % of it to the cent, then to the rupiah). */
const ppn = (dpp: bigint) => {
  const other = divHalfUp(dpp * 11n, 12n);
  return { other, vat: rupiah(divHalfUp(other * 12n, 100n)) };
};
/** Shares `total` over `exact` (numerators over a common `den`) in steps of `step`: floors, then the largest fractions, the earlier on a tie. */
function largestRemainder(total: bigint, exact: bigint[], den: bigint, step: bigint): bigint[] {
  const floors = exact.map((e) => (e / (den * step)) * step);
  let left = (total - floors.reduce((a, b) => a + b, 0n)) / step;
  const order = exact.map((e, i) => ({ i, frac: e - floors[i] * den })).sort((a, b) => (b.frac > a.frac ? 1 : b.frac < a.frac ? -1 : a.i - b.i));
  const out = [...floors];
  for (let k = 0; left > 0n; k = (k + 1) % order.length, left--) out[order[k].i] += step;
  for (let k = order.length - 1; left < 0n && k >= 0; k--, left++) out[order[k].i] -= step;
  return out;
}

const DAY_FORMAT = new Intl.DateTimeFormat('id-ID', { dateStyle: 'long', timeZone: 'Asia/Jakarta' });
const day = (at: Date) => DAY_FORMAT.format(at).replace(/\s/g, ' ');

describe.each(DATABASES)('the Coretax export of a month against an independent recomputation, on %s', (kind) => {
  const clock = new ManualClock(new Date('2026-11-01T03:00:00.000Z'));
  let server: TestServer;
  let dir: string;
  let writeKey: string;
  const bought: Record<string, { user: TestUser; orderId: string; invoiceId: string; subscriptionId: string }> = {};

  const tax = (args: string[]): Promise<CliResult> => runCli(['tax', ...args], { ...cliEnv(server), ...SELLER }, undefined, { cwd: dir });
  const em = () => server.running.billing.orm.em.fork() as EntityManager;
  const ctx = () => {
    const { orm, config, gateway } = server.running.billing;
    return { em: orm.em.fork() as EntityManager, config, gateway, clock };
  };
  /** The CLI runs on the wall clock: an export's stamp is moved to the test's clock. */
  const onTestClock = () => em().nativeUpdate(Invoice, { taxExportedAt: { $gt: clock.now() } }, { taxExportedAt: clock.now() });
  const issuer = async (label: string, action: 'chargeback') => {
    const res = await server.request('POST', `/_simulator/v2/${bought[label].orderId}/${action}`, { body: {} });
    expect(res.status, res.text).toBe(200);
  };

  async function buy(label: string, plan: string, at: string, pay: 'wallet' | 'card' | 'bank_transfer' | 'qris', extra: Record<string, unknown> = {}) {
    clock.set(new Date(at));
    const user = await server.createUser();
    expect((await server.api('PUT', '/tax-profile/', { auth: user, body: BUSINESS })).status).toBe(200);
    if (pay === 'wallet') await fundWallet(server, user, '2000000');
    const how = { card: { payment_type: 'credit_card', token: 'sim-card-accept-1' }, bank_transfer: { payment_type: 'bank_transfer', metadata: { bank: 'permata' } }, qris: { payment_type: 'qris' }, wallet: { payment_type: 'wallet' } };
    const created = await subscribe(server, user, { plan_id: plan, ...how[pay], ...extra });
    expect(created.status, created.text).toBe(201);
    if (pay !== 'wallet') await simulate(server, created.body.payment.order_id, 'settle');
    bought[label] = { user, orderId: created.body.payment.order_id, invoiceId: created.body.payment.invoice_id, subscriptionId: created.body.subscription.id };
  }

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: SELLER });
    const manager = em();
    manager.create(BillableMetric, { code: 'calls', name: 'API calls', aggregation: 'count', field: null, filters: null } as BillableMetric);
    await manager.flush();
    await server.seedPlans(PLANS);
    const { billing } = server.running;
    writeKey = (await createApiKey({ em: billing.orm.em.fork(), config: billing.config, clock: billing.clock }, cliActor(), { name: 'shop', scope: 'write' })).key;
    dir = await mkdtemp(join(tmpdir(), 'tax-round-three-'));
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('November: every invoice whose money was received is a faktur (a chargeback before the export included, a reversal not), one line per invoice line, equal to the recomputation to the cent; --again writes the same file; both chargebacks say PPN stands; tax record takes the charged-back one', { timeout: 300_000 }, async () => {
    await buy('chargedBefore', 'pro-tax', '2026-11-01T03:00:00.000Z', 'card');
    await buy('transfer', 'pro-tax', '2026-11-02T03:00:00.000Z', 'bank_transfer');
    await buy('chargedAfter', 'pro-tax', '2026-11-03T03:00:00.000Z', 'card');
    const quarter = await makePromotionCode(em(), { code: 'SEPEREMPAT', coupon: await makeCoupon(em(), { percentOff: '25.00' }) });
    await buy('seats', 'seats-tax', '2026-11-04T03:00:00.000Z', 'wallet', { quantity: 3, promotion_code: quarter.code });
    await buy('metered', 'metered-tax', '2026-11-05T03:00:00.000Z', 'wallet');
    await buy('refunded', 'pro-tax', '2026-11-06T03:00:00.000Z', 'qris', { promotion_code: quarter.code });
    await buy('reversed', 'pro-tax', '2026-11-07T03:00:00.000Z', 'bank_transfer');
    await buy('inclusive', 'inclusive-tax', '2026-11-08T03:00:00.000Z', 'wallet');

    // The gateway reverses the transfer (deny after settlement): that money never arrived.
    clock.set(new Date('2026-11-08T05:00:00.000Z'));
    await simulate(server, bought.reversed.orderId, 'deny');
    // Two more seats, charged at once from the wallet (discounted by the running coupon).
    clock.set(new Date('2026-11-10T03:00:00.000Z'));
    const more = await server.api('POST', `/subscriptions/${bought.seats.subscriptionId}/change-quantity/`, { auth: bought.seats.user, body: { quantity: 5 } });
    expect(more.status, more.text).toBe(200);
    // 23 calls in the metered week, then the renewal after the grace: the week's usage and the next week.
    const calls = Array.from({ length: 23 }, (_, i) => ({ transaction_id: `call-${kind}-${i}`, customer: bought.metered.user.id, code: 'calls', timestamp: new Date(Date.parse('2026-11-06T03:00:00.000Z') + i * 60_000).toISOString() }));
    const sent = await server.api('POST', '/events/batch/', { headers: { authorization: `Bearer ${writeKey}` }, body: { events: calls } });
    expect(sent.status, sent.text).toBe(202);
    clock.set(new Date('2026-11-12T05:00:00.000Z'));
    await runBilling(ctx(), {});
    // A partial refund before the export, and a chargeback before it.
    clock.set(new Date('2026-11-15T03:00:00.000Z'));
    await refundPaymentAsStaff(ctx(), bought.refunded.orderId, { amount: '100000', reason: 'test', keepSubscription: true });
    clock.set(new Date('2026-11-20T03:00:00.000Z'));
    await issuer('chargedBefore', 'chargeback');

    // The month is closed on 1 December.
    clock.set(new Date('2026-12-01T03:00:00.000Z'));
    const first = await tax(['export', '--month', '2026-11', '--out', 'november.xml', '--json']);
    expect(first.code, first.stderr).toBe(0);
    await onTestClock();
    const xml = await readFile(join(dir, 'november.xml'), 'utf8');

    // What the month should hold, recomputed from the invoices' lines: every invoice with a
    // received payment in November (taxable), the reversed one left out.
    const manager = em();
    const invoices = (await manager.find(Invoice, { taxBehavior: { $ne: 'none' }, taxBase: { $gt: '0.00' } }, { orderBy: { number: 'asc' } }));
    const reversed = await manager.findOneOrFail(Invoice, bought.reversed.invoiceId);
    const expected = invoices.filter((i) => i.id !== reversed.id);
    const byNumber = new Map(fakturs(xml).map((f) => [text(f, 'RefDesc'), f]));
    expect([...byNumber.keys()].sort()).toEqual(expected.map((i) => i.number).sort());
    expect(byNumber.has(reversed.number)).toBe(false);
    const chargedBefore = await manager.findOneOrFail(Invoice, bought.chargedBefore.invoiceId);
    expect(chargedBefore.status).toBe('open');
    expect(byNumber.has(chargedBefore.number)).toBe(true);
    // Kinds of line the month holds: the seat change, the usage, the plan's price.
    const allLines = await manager.find(InvoiceLine, { invoice: { $in: expected.map((i) => i.id) } }, { orderBy: { position: 'asc' } });
    expect(new Set(allLines.map((l) => l.kind))).toEqual(new Set(['subscription', 'proration', 'usage']));
    // Three Pro by card and transfer, the seats and their change, the metered week and its renewal, the refunded Pro, the inclusive price.
    expect(expected).toHaveLength(9);
    expect(allLines.filter((l) => cents(l.amount) > 0n)).toHaveLength(10);

    let totals = { dpp: 0n, other: 0n, vat: 0n };
    for (const invoice of expected) {
      const lines = allLines.filter((l) => l.invoice.id === invoice.id && cents(l.amount) > 0n);
      // Credit notes before the export (a chargeback's and an unusable settlement's take no DPP off: 0.00).
      const notes = await manager.find(CreditNote, { invoice: invoice.id });
      // DPP from the lines: exclusive, what they charged after discounts; inclusive, the price split.
      const net = lines.map((l) => cents(l.amount) - cents(l.discountAmount));
      const netSum = net.reduce((a, b) => a + b, 0n);
      let dpp = netSum;
      if (invoice.taxBehavior === 'inclusive') {
        // The whole rupiah whose DPP + PPN comes closest to the price; the nearer to price/1.11 on a tie.
        const guess = rupiah(divHalfUp(netSum * 100n, 111n));
        dpp = [guess, guess - 100n, guess + 100n].reduce((best, c) => {
          const miss = (d: bigint) => { const m = netSum - d - ppn(d).vat; return m < 0n ? -m : m; };
          return miss(c) < miss(best) ? c : best;
        });
      }
      expect(show(dpp), invoice.number).toBe(invoice.taxBase);
      dpp -= notes.reduce((a, n) => a + cents(n.taxBase), 0n);
      const { other, vat } = ppn(dpp);
      const faktur = byNumber.get(invoice.number)!;
      // Lines: the faktur's DPP shared in proportion to what each line charged; DPP Nilai Lain and
      // PPN shared to add up to the faktur's; price and discount shrink together.
      const bases = largestRemainder(dpp, net.map((n) => dpp * n), netSum, 100n);
      const others = largestRemainder(other, bases.map((b) => b * 11n), 12n, 1n);
      const vats = largestRemainder(vat, others.map((o) => o * 12n), 100n, 100n);
      const want = lines.map((l, i) => {
        const discount = divHalfUp(cents(l.discountAmount) * dpp, netSum);
        const price = divUp(bases[i] + discount, BigInt(l.quantity));
        const start = l.periodStart!;
        const end = l.periodEnd!;
        const words: Record<string, string> = {
          first_period: `${String(l.subject?.plan)} (1 ${l.subject?.unit === 'week' ? 'minggu' : 'bulan'} pertama), ${day(start)} s.d. ${day(end)}`,
          period: `${String(l.subject?.plan)} (${day(start)} s.d. ${day(end)})`,
          remaining_time: `Sisa waktu pada ${String(l.subject?.plan)}, ${day(start)} s.d. ${day(end)}`,
          usage: `Pemakaian API calls: ${String(l.subject?.units)}, ${day(start)} s.d. ${day(end)}`,
        };
        const days = Math.round((end.getTime() - start.getTime()) / 86_400_000);
        return {
          Name: words[String(l.subject?.type)],
          Unit: l.kind === 'subscription' && days >= 28 && days <= 31 ? 'UM.0024' : 'UM.0033',
          Price: show(price), Qty: String(l.quantity), TotalDiscount: show(price * BigInt(l.quantity) - bases[i]),
          TaxBase: show(bases[i]), OtherTaxBase: show(others[i]), VAT: show(vats[i]),
        };
      });
      expect(goods(faktur), invoice.number).toEqual(want);
      totals = { dpp: totals.dpp + dpp, other: totals.other + other, vat: totals.vat + vat };
    }
    expect(first.json).toMatchObject({ invoices: expected.length, tax_base: show(totals.dpp), other_tax_base: show(totals.other), tax_amount: show(totals.vat), skipped: [] });

    // The refund before the export is not a discount: the coupon gave 25 %, and the faktur's discount stays 25 % of its price.
    const refunded = goods(byNumber.get((await manager.findOneOrFail(Invoice, bought.refunded.invoiceId)).number)!)[0];
    expect(cents(refunded.TotalDiscount) * 4n).toBe(cents(refunded.Price));
    expect(cents(refunded.Price)).toBeLessThan(cents('150000.00'));
    const seatsFirst = goods(byNumber.get((await manager.findOneOrFail(Invoice, bought.seats.invoiceId)).number)!)[0];
    expect(seatsFirst).toMatchObject({ Price: '40000.00', Qty: '3', TotalDiscount: '30000.00', TaxBase: '90000.00' });

    // The chargeback after the export, in December.
    clock.set(new Date('2026-12-03T03:00:00.000Z'));
    await issuer('chargedAfter', 'chargeback');
    const again = await tax(['export', '--month', '2026-11', '--again', '--out', 'november-again.xml', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.json).toMatchObject({ invoices: first.json.invoices, tax_amount: first.json.tax_amount });
    expect(await readFile(join(dir, 'november-again.xml'), 'utf8')).toBe(xml);

    const chargedAfter = await manager.findOneOrFail(Invoice, bought.chargedAfter.invoiceId);
    const full = { tax_base: '150000.00', other_tax_base: '137500.00', tax_amount: '16500.00' };
    const stands = (number: string, issuedOn: string) => expect.objectContaining({ kind: 'chargeback', invoice_number: number, issued_on: issuedOn, tax_action: 'none', tax_amount: '0.00', before: full, after: full, instruction: expect.stringMatching(/^PPN stands/) });
    expect((await tax(['corrections', '--month', '2026-11', '--json'])).json).toEqual([stands(chargedBefore.number, '2026-11-20')]);
    expect((await tax(['corrections', '--month', '2026-12', '--json'])).json).toEqual([stands(chargedAfter.number, '2026-12-03')]);

    const recorded = await tax(['record', '--reason', 'test: NSFP from Coretax', chargedBefore.number, '04002600000000101', '--json']);
    expect(recorded.code, recorded.stderr).toBe(0);
    expect(recorded.json).toMatchObject({ invoice_number: chargedBefore.number, tax_invoice_number: '04002600000000101' });
  });

  it('the reversed invoice paid again in December: its faktur is due on that payment, in December\'s file and dated then; the charged-back invoices paid again make no second faktur', { timeout: 120_000 }, async () => {
    clock.set(new Date('2026-12-05T03:00:00.000Z'));
    for (const label of ['reversed', 'chargedBefore']) {
      const { user, subscriptionId } = bought[label];
      const repaid = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: subscriptionId, payment_type: 'qris' } });
      expect(repaid.status, repaid.text).toBe(201);
      await simulate(server, repaid.body.payment.order_id, 'settle');
    }
    const december = await tax(['export', '--month', '2026-12', '--out', 'december.xml', '--json']);
    expect(december.code, december.stderr).toBe(0);
    const reversed = await em().findOneOrFail(Invoice, bought.reversed.invoiceId);
    expect(december.json).toMatchObject({ invoices: 1, tax_base: '150000.00', tax_amount: '16500.00' });
    const [faktur] = fakturs(await readFile(join(dir, 'december.xml'), 'utf8'));
    expect([text(faktur, 'RefDesc'), text(faktur, 'TaxInvoiceDate')]).toEqual([reversed.number, '2026-12-05']);
    // November's fakturs are unchanged by December's payments; the one whose number is recorded is skipped, as ever.
    const again = await tax(['export', '--month', '2026-11', '--again', '--out', 'november-third.xml', '--json']);
    expect(again.code, again.stderr).toBe(0);
    const chargedBefore = await em().findOneOrFail(Invoice, bought.chargedBefore.invoiceId);
    expect(again.json.skipped).toEqual([{ invoice_number: chargedBefore.number, reason: expect.stringMatching(/already recorded/) }]);
    const refs = (file: string) => readFile(join(dir, file), 'utf8').then((xml) => fakturs(xml).map((f) => text(f, 'RefDesc')));
    expect(await refs('november-third.xml')).toEqual((await refs('november-again.xml')).filter((n) => n !== chargedBefore.number));
  });
});
