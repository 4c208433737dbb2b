import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { ManualClock } from '../../src/domain/clock.js';
import { add, compare, subtract } from '../../src/domain/money.js';
import { ppnOf } from '../../src/domain/tax.js';
import { runBilling } from '../../src/services/billing/run-billing.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { fundWallet, simulate, subscribe, walletBalance, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 29 (docs/tax.md): a PKP seller charges PPN on taxed plans. Every invoice states DPP,
 * DPP Nilai Lain and PPN consistently (PPN = 12 % of 11/12 of the DPP, half-up to the rupiah);
 * the buyer's tax profile is validated and copied onto each invoice; credit notes carry their
 * share of the PPN and never more than the invoice's.
 */

const DAY = 24 * 60 * 60 * 1000;
const START = new Date('2026-03-01T03:00:00.000Z');
const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000' };
const TAXED_PLANS = [
  { slug: 'basic-tax', name: 'Basic', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'exclusive' as const },
  { slug: 'pro-tax', name: 'Pro', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'exclusive' as const },
  { slug: 'inclusive', name: 'Inclusive', price: 15000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'inclusive' as const },
  { slug: 'untaxed', name: 'Untaxed', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month' as const },
];
const BUSINESS = { buyer_type: 'business', npwp: '01.234.567.8-091.000', name: 'PT Contoh & <Anak>', address: 'Jl. Sudirman No. 1, Jakarta' };

/** What every taxed invoice must satisfy. */
function expectConsistentTax(invoice: Record<string, string>): void {
  const { otherTaxBase, taxAmount } = ppnOf(invoice.tax_base, 'IDR');
  expect(invoice.tax_rate).toBe('12.00');
  expect(invoice.other_tax_base).toBe(otherTaxBase);
  expect(invoice.tax_amount).toBe(taxAmount);
  expect(add(invoice.tax_base, invoice.tax_amount, invoice.tax_rounding)).toBe(invoice.total_amount);
  if (invoice.tax_behavior === 'exclusive') {
    expect(invoice.tax_base).toBe(invoice.subtotal);
    expect(invoice.tax_rounding).toBe('0.00');
  }
}

describe('PKP configuration', () => {
  it('refuses to start as a PKP without a well-formed NPWP and NITKU, naming each setting', () => {
    expect(() => loadConfig({ BILLING_PKP: 'true' })).toThrow(/BILLING_TAX_ID.*BILLING_SELLER_NITKU/);
    expect(() => loadConfig({ ...SELLER, BILLING_TAX_ID: '12345' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...SELLER, BILLING_SELLER_NITKU: '9912345678091000000000' })).toThrow(/start with the NPWP/);
    expect(loadConfig({ ...SELLER, BILLING_TAX_ID: '012345678091000' }).tax).toEqual({ pkp: true, sellerTaxId: '0012345678091000', sellerNitku: SELLER.BILLING_SELLER_NITKU });
    expect(loadConfig({}).tax.pkp).toBe(false);
  });
});

describe.each(DATABASES)('PPN on invoices on %s', (kind) => {
  const clock = new ManualClock(START);
  let server: TestServer;
  let user: TestUser;
  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: SELLER });
    await server.seedPlans(TAXED_PLANS);
  });
  afterAll(async () => server?.stop());
  beforeEach(async () => {
    clock.set(START);
    user = await server.createUser();
  });

  const invoice = async (id: string) => (await server.api('GET', `/invoices/${id}/`, { auth: user })).body;
  const putProfile = (body: unknown) => server.api('PUT', '/tax-profile/', { auth: user, body });

  describe('the tax profile', () => {
    it('is 404 until saved, then stored normalised: the old 15-digit NPWP gains its 0, the NITKU defaults to the head office', async () => {
      expect((await server.api('GET', '/tax-profile/', { auth: user })).status).toBe(404);
      const saved = await putProfile(BUSINESS);
      expect(saved.status, saved.text).toBe(200);
      expect(saved.body).toEqual({
        buyer_type: 'business', npwp: '0012345678091000', nitku: '0012345678091000000000', nik: null, passport: null, country: null, document_number: null,
        name: BUSINESS.name, address: BUSINESS.address, email: null,
      });
      expect((await server.api('GET', '/tax-profile/', { auth: user })).body).toEqual(saved.body);
      const person = await putProfile({ buyer_type: 'individual', nik: '3171 0155 0590 0001', name: 'Siti', address: 'Bandung', email: 'siti@example.com' });
      expect(person.body).toMatchObject({ buyer_type: 'individual', nik: '3171015505900001', npwp: null, nitku: null });
    });

    it.each([
      ['an NPWP of 14 digits', { ...BUSINESS, npwp: '12345678901234' }, 'npwp'],
      ['an NPWP of 17 digits', { ...BUSINESS, npwp: '12345678901234567' }, 'npwp'],
      ['an NPWP with letters', { ...BUSINESS, npwp: '00123456780910AB' }, 'npwp'],
      ['a business without an NPWP', { buyer_type: 'business', name: 'PT A', address: 'Jakarta' }, 'npwp'],
      ['a NITKU of 21 digits', { ...BUSINESS, nitku: '001234567809100000000' }, 'nitku'],
      ['a NITKU of another NPWP', { ...BUSINESS, nitku: '9912345678091000000000' }, 'nitku'],
      ['a NITKU with letters', { ...BUSINESS, nitku: '0012345678091000ABCDEF' }, 'nitku'],
      ['a NIK of 15 digits', { buyer_type: 'individual', nik: '317101234567000', name: 'Siti', address: 'Bandung' }, 'nik'],
      ['a NIK with letters', { buyer_type: 'individual', nik: '31710123456700X1', name: 'Siti', address: 'Bandung' }, 'nik'],
      ['an individual without a NIK', { buyer_type: 'individual', name: 'Siti', address: 'Bandung' }, 'nik'],
      // As Dukcapil writes it: the province 11-94, the birth day 01-31 (41-71 for a woman), the month 01-12.
      ['the impossible NIK 3171019999990001 (day 99, month 99)', { buyer_type: 'individual', nik: '3171019999990001', name: 'Siti', address: 'Bandung' }, 'nik'],
      ['a NIK of province 95', { buyer_type: 'individual', nik: '9571015505900001', name: 'Siti', address: 'Bandung' }, 'nik'],
      ['a NIK born on day 35', { buyer_type: 'individual', nik: '3171013505900001', name: 'Siti', address: 'Bandung' }, 'nik'],
      ['a NIK born in month 13', { buyer_type: 'individual', nik: '3171011513900001', name: 'Siti', address: 'Bandung' }, 'nik'],
      ['an individual with an NPWP', { buyer_type: 'individual', nik: '3171015505900001', npwp: '0012345678091000', name: 'Siti', address: 'Bandung' }, 'npwp'],
      ['a blank name', { ...BUSINESS, name: '   ' }, 'name'],
    ])('refuses %s with 400 naming the field, and saves nothing', async (_what, body, field) => {
      const res = await putProfile(body);
      expect(res.status, res.text).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/problem\+json/);
      expect((res.body.errors as { field: string }[]).map((e) => e.field)).toContain(field);
      expect((await server.api('GET', '/tax-profile/', { auth: user })).status).toBe(404);
    });

    it('refuses a wrong buyer type or an unknown field by the contract', async () => {
      expect((await putProfile({ ...BUSINESS, buyer_type: 'government' })).status).toBe(400);
      expect((await putProfile({ ...BUSINESS, vat: 'x' })).status).toBe(400);
    });
  });

  it("a taxed plan's first invoice: DPP, DPP Nilai Lain, PPN and the total the gateway is asked for; the buyer's profile is kept as it was", async () => {
    expect((await putProfile(BUSINESS)).status).toBe(200);
    const created = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'bank_transfer' });
    expect(created.status, created.text).toBe(201);
    expect(created.body.payment.gross_amount).toBe('166500.00');
    const first = await invoice(created.body.payment.invoice_id);
    expect(first).toMatchObject({
      subtotal: '150000.00', total_amount: '166500.00', tax_behavior: 'exclusive', tax_rate: '12.00', tax_base: '150000.00',
      other_tax_base: '137500.00', tax_amount: '16500.00', tax_rounding: '0.00', tax_invoice_number: null,
      buyer_tax_profile: { buyer_type: 'business', npwp: '0012345678091000', name: BUSINESS.name },
    });
    await simulate(server, created.body.payment.order_id, 'settle');
    expect((await invoice(first.id)).status).toBe('paid');
    // A later profile does not rewrite an issued invoice.
    await putProfile({ ...BUSINESS, name: 'PT Lain' });
    expect((await invoice(first.id)).buyer_tax_profile.name).toBe(BUSINESS.name);
  });

  it('an inclusive price holds its PPN: the total is the price, DPP + PPN + rounding add up to it', async () => {
    const created = await subscribe(server, user, { plan_id: 'inclusive', payment_type: 'bank_transfer' });
    expect(created.body.payment.gross_amount).toBe('15000.00');
    const first = await invoice(created.body.payment.invoice_id);
    expect(first).toMatchObject({ total_amount: '15000.00', subtotal: '15000.00', tax_base: '13514.00', tax_amount: '1487.00', tax_rounding: '-1.00', buyer_tax_profile: null });
    expectConsistentTax(first);
  });

  it('an invoice issued at 18:00 UTC on 31 December is dated 1 January where the seller is (Asia/Jakarta), and numbered in the new year', async () => {
    clock.set(new Date('2026-12-31T18:00:00.000Z'));
    const created = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'bank_transfer' });
    expect(await invoice(created.body.payment.invoice_id)).toMatchObject({ issue_date: '2027-01-01', due_date: '2027-01-01', number: expect.stringMatching(/^INV-2027-\d{6}$/) });
  });

  it('an untaxed plan carries no PPN on a PKP', async () => {
    const created = await subscribe(server, user, { plan_id: 'untaxed', payment_type: 'bank_transfer' });
    expect(await invoice(created.body.payment.invoice_id)).toMatchObject({ total_amount: '50000.00', tax_behavior: 'none', tax_rate: '0.00', tax_amount: '0.00', tax_base: '0.00' });
  });

  it('a renewal paid from the wallet carries the PPN; the wallet pays DPP + PPN', async () => {
    await fundWallet(server, user, '200000');
    const created = await subscribe(server, user, { plan_id: 'basic-tax', payment_type: 'wallet' });
    expect(created.status, created.text).toBe(201);
    expect(await walletBalance(server, user)).toBe('144500.00');
    clock.advance(31 * DAY);
    const { orm, config, gateway } = server.running.billing;
    await runBilling({ em: orm.em.fork(), config, gateway, clock }, {});
    const page = (await server.api('GET', `/invoices/`, { auth: user })).body;
    const renewal = page.results.find((i: { id: string }) => i.id !== created.body.payment.invoice_id);
    expect(renewal).toMatchObject({ status: 'paid', subtotal: '50000.00', tax_base: '50000.00', other_tax_base: '45833.33', tax_amount: '5500.00', total_amount: '55500.00' });
    expectConsistentTax(renewal);
    expect(await walletBalance(server, user)).toBe('89000.00');
  });

  it('an upgrade halfway: the proration invoice states DPP and PPN consistently and asks for what the new plan costs with PPN, less what was paid', async () => {
    await fundWallet(server, user, '500000');
    const created = await subscribe(server, user, { plan_id: 'basic-tax', payment_type: 'wallet' });
    clock.advance(15 * DAY);
    const before = await walletBalance(server, user);
    const changed = await server.api('POST', `/subscriptions/${created.body.subscription.id}/change-plan/`, { auth: user, body: { plan_id: 'pro-tax' } });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.subscription.plan.slug).toBe('pro-tax');
    const change = await invoice(changed.body.payment.invoice_id);
    expectConsistentTax(change);
    const [credit, charge] = [change.lines.find((l: { amount: string }) => l.amount.startsWith('-')), change.lines.find((l: { amount: string }) => !l.amount.startsWith('-'))];
    // 16 of 31 days of March remain: Pro's share 77,419 before PPN (85,935 with it); Basic's
    // unused share of the 55,500 paid is 28,645.
    expect(charge.amount).toBe('77419.00');
    const owed = subtract(add(charge.amount, ppnOf(charge.amount, 'IDR').taxAmount), '28645.00');
    // What the invoice asks is what is owed, or one rupiah more that goes back to the wallet.
    expect(compare(change.total_amount, owed) >= 0 && compare(change.total_amount, add(owed, '1.00')) <= 0, `${change.total_amount} for ${owed}`).toBe(true);
    expect(credit).toBeDefined();
    const spent = subtract(before, await walletBalance(server, user));
    expect(spent).toBe(owed);
  });

  it("refunds: each credit note's PPN is its share, the whole of them exactly the invoice's PPN, with the Coretax action each needs", async () => {
    const created = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'qris' });
    await simulate(server, created.body.payment.order_id, 'settle');
    const payment = created.body.payment;
    const partial = await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: { amount: 55500, reason: 'partial' } });
    expect(partial.status, partial.text).toBe(200);
    let notes = (await server.api('GET', '/credit-notes/', { auth: user })).body.results;
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({ amount: '55500.00', tax_amount: '5500.00', tax_action: 'amendment' });
    const rest = await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: { reason: 'the rest' } });
    expect(rest.status, rest.text).toBe(200);
    notes = (await server.api('GET', '/credit-notes/', { auth: user })).body.results;
    const last = notes.find((n: { amount: string }) => n.amount === '111000.00');
    expect(last).toMatchObject({ tax_amount: '11000.00', tax_action: 'buyer_cancellation_note' });
    const credited = add(...notes.map((n: { tax_amount: string }) => n.tax_amount));
    expect(credited).toBe((await invoice(payment.invoice_id)).tax_amount);
  });
});
