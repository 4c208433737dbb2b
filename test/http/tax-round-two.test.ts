import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { add, compare, subtract } from '../../src/domain/money.js';
import { ppnOf } from '../../src/domain/tax.js';
import { DATABASES } from '../helpers/database.js';
import { pdfText } from '../helpers/pdf.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { fundWallet, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 37, tax round two (docs/tax.md): identity numbers of zeros refused; foreign (passport)
 * and other buyers; a credit note's PPN as Coretax recomputes it on the amended DPP, with
 * tax_base and tax_rounding; chargebacks take no PPN off; tax_exported_at on invoices; line
 * words in the document's language.
 */

const DAY = 24 * 60 * 60 * 1000;
const START = new Date('2026-03-01T03:00:00.000Z');
const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000' };
const PLANS = [
  { slug: 'basic-tax', name: 'Basic', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'exclusive' as const },
  { slug: 'pro-tax', name: 'Pro', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'exclusive' as const },
];
const BUSINESS = { buyer_type: 'business', npwp: '0012345678091000', name: 'PT Contoh', address: 'Jakarta' };
const squash = (text: string) => text.replace(/[ \t]+/g, ' ');

describe.each(DATABASES)('tax round two on %s', (kind) => {
  const clock = new ManualClock(START);
  let server: TestServer;
  let user: TestUser;
  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: SELLER });
    await server.seedPlans(PLANS);
  });
  afterAll(async () => server?.stop());
  beforeEach(async () => {
    clock.set(START);
    user = await server.createUser();
  });

  const putProfile = (body: unknown) => server.api('PUT', '/tax-profile/', { auth: user, body });
  const invoice = async (id: string) => (await server.api('GET', `/invoices/${id}/`, { auth: user })).body;
  const creditNotes = async () => (await server.api('GET', '/credit-notes/', { auth: user })).body.results as Record<string, string>[];
  const pdf = async (path: string) => {
    const res = await fetch(`${server.url}/api/subscriptions/${path}`, { headers: { authorization: `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}` } });
    expect(res.status).toBe(200);
    return squash(await pdfText(Buffer.from(await res.arrayBuffer())));
  };
  const fields = (res: { body: { errors?: { field: string }[] } }) => (res.body.errors ?? []).map((e) => e.field);

  describe('identity numbers of zeros (row 5)', () => {
    it.each([
      ['an NPWP of sixteen zeros', { ...BUSINESS, npwp: '0000000000000000' }, 'npwp'],
      ['an NPWP of fifteen zeros (old format)', { ...BUSINESS, npwp: '00.000.000.0-000.000' }, 'npwp'],
      ['a NITKU of zeros', { ...BUSINESS, nitku: '0000000000000000000000' }, 'nitku'],
      ['a NIK of sixteen zeros', { buyer_type: 'individual', nik: '0000 0000 0000 0000', name: 'Siti', address: 'Bandung' }, 'nik'],
      ['a passport of zeros', { buyer_type: 'foreign', passport: '000000000', country: 'SGP', name: 'Tan', address: 'Singapore' }, 'passport'],
    ])('refuses %s with 400 naming the field; nothing is saved', async (_what, body, field) => {
      const res = await putProfile(body);
      expect(res.status, res.text).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/problem\+json/);
      expect(fields(res)).toEqual([field]);
      expect(res.body.errors[0].message).toMatch(/zeros/);
      expect((await server.api('GET', '/tax-profile/', { auth: user })).status).toBe(404);
    });
  });

  describe('foreign and other buyers (row 7)', () => {
    it('a foreign buyer gives a passport and its country; the invoice carries PPN and the profile', async () => {
      const saved = await putProfile({ buyer_type: 'foreign', passport: 'k1234 567', country: 'sgp', name: 'Tan Wei Ming', address: '1 Raffles Place, Singapore' });
      expect(saved.status, saved.text).toBe(200);
      expect(saved.body).toEqual({
        buyer_type: 'foreign', npwp: null, nitku: null, nik: null, passport: 'K1234567', country: 'SGP', document_number: null,
        name: 'Tan Wei Ming', address: '1 Raffles Place, Singapore', email: null,
      });
      const created = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'bank_transfer' });
      expect(created.status, created.text).toBe(201);
      const first = await invoice(created.body.payment.invoice_id);
      expect(first).toMatchObject({ tax_amount: '16500.00', total_amount: '166500.00', tax_exported_at: null, buyer_tax_profile: { buyer_type: 'foreign', passport: 'K1234567', country: 'SGP' } });
      // The taxed invoice names the buyer by the passport, in the document's language (Bahasa by default).
      const text = await pdf(`invoices/${first.id}/pdf/`);
      expect(text).toContain('Paspor (SGP): K1234567');
      expect(text).not.toContain('Passport');
    });

    it('an other buyer gives a document number; its country defaults to IDN', async () => {
      const saved = await putProfile({ buyer_type: 'other', document_number: 'KITAS-2C11AB1234', name: 'John Doe', address: 'Denpasar' });
      expect(saved.status, saved.text).toBe(200);
      expect(saved.body).toMatchObject({ buyer_type: 'other', document_number: 'KITAS2C11AB1234', country: 'IDN', passport: null, npwp: null });
      const created = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'bank_transfer' });
      expect(created.status, created.text).toBe(201);
      expect(await pdf(`invoices/${created.body.payment.invoice_id}/pdf/`)).toContain('Identitas lain (IDN): KITAS2C11AB1234');
    });

    it.each([
      ['a foreign buyer without a country', { buyer_type: 'foreign', passport: 'K1234567', name: 'Tan', address: 'SG' }, ['country']],
      ['an unknown country', { buyer_type: 'foreign', passport: 'K1234567', country: 'XYZ', name: 'Tan', address: 'SG' }, ['country']],
      ['a passport of Indonesia', { buyer_type: 'foreign', passport: 'K1234567', country: 'IDN', name: 'Tan', address: 'SG' }, ['country']],
      ['a foreign buyer with an NPWP', { buyer_type: 'foreign', passport: 'K1234567', country: 'SGP', npwp: '0012345678091000', name: 'Tan', address: 'SG' }, ['npwp']],
      ['an other buyer without a document', { buyer_type: 'other', name: 'John', address: 'Bali' }, ['document_number']],
      ['a business with a passport', { ...BUSINESS, passport: 'K1234567' }, ['passport']],
    ])('refuses %s with 400 naming the field', async (_what, body, expected) => {
      const res = await putProfile(body);
      expect(res.status, res.text).toBe(400);
      expect(fields(res)).toEqual(expected);
    });
  });

  it("a Rp5,000 refund on a 166,500 invoice: the credit note's PPN is what Coretax recomputes on the amended DPP; tax_base + tax_amount + tax_rounding = amount; the rest credits exactly the rest (row 6)", async () => {
    expect((await putProfile(BUSINESS)).status).toBe(200);
    const created = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'qris' });
    await simulate(server, created.body.payment.order_id, 'settle');
    const payment = created.body.payment;
    const refund = await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: { amount: 5000, reason: 'goodwill' } });
    expect(refund.status, refund.text).toBe(200);
    const [note] = await creditNotes();
    // DPP 150,000 → 145,495: PPN 16,500 → 16,004 as Coretax computes it (11 % of 145,495 is 16,004.45).
    expect(note).toMatchObject({ amount: '5000.00', tax_base: '4505.00', tax_amount: '496.00', tax_rounding: '-1.00', tax_action: 'amendment' });
    expect(ppnOf(subtract('150000.00', note.tax_base), 'IDR').taxAmount).toBe(subtract('16500.00', note.tax_amount));
    const detail = (await server.api('GET', `/credit-notes/${note.id}/`, { auth: user })).body;
    expect(detail).toMatchObject({ tax_base: '4505.00', tax_rounding: '-1.00' });
    // The credit note's document shows the DPP it takes off and the rupiah of rounding.
    const text = await pdf(`credit-notes/${note.id}/pdf/`);
    expect(text).toMatch(/DPP Rp ?4\.505/);
    expect(text).toMatch(/Pembulatan -Rp ?1|Pembulatan Rp ?-1|Pembulatan −Rp ?1/);

    const rest = await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: { reason: 'the rest' } });
    expect(rest.status, rest.text).toBe(200);
    const notes = await creditNotes();
    const last = notes.find((n) => n.id !== note.id)!;
    expect(last).toMatchObject({ amount: '161500.00', tax_base: '145495.00', tax_amount: '16004.00', tax_rounding: '1.00', tax_action: 'buyer_cancellation_note' });
    for (const n of notes) expect(add(n.tax_base, n.tax_amount, n.tax_rounding)).toBe(n.amount);
    expect(add(...notes.map((n) => n.tax_base))).toBe('150000.00');
    expect(add(...notes.map((n) => n.tax_amount))).toBe('16500.00');
  });

  it('property: a refund of any amount on an exclusive or inclusive invoice of any price leaves a faktur whose PPN is what Coretax recomputes from its DPP; refunding the rest takes off exactly the invoice\'s DPP and PPN (row 6)', { timeout: 180_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1_000, max: 5_000_000 }),
        fc.constantFrom('exclusive' as const, 'inclusive' as const),
        fc.integer({ min: 1, max: 999 }),
        async (price, behavior, perMille) => {
          const slug = `p-${behavior}-${price}`;
          await server.seedPlans([{ slug, name: `Plan ${price}`, price, currency: 'IDR', interval: 1, interval_unit: 'month', tax_behavior: behavior }]);
          user = await server.createUser();
          const created = await subscribe(server, user, { plan_id: slug, payment_type: 'qris' });
          expect(created.status, created.text).toBe(201);
          await simulate(server, created.body.payment.order_id, 'settle');
          const paid = await invoice(created.body.payment.invoice_id);
          const amount = Math.max(1, Math.floor((Number(paid.total_amount) * perMille) / 1000));
          const refund = await server.api('POST', `/payments/${created.body.payment.id}/refund/`, { auth: user, body: { amount, reason: 'property' } });
          expect(refund.status, refund.text).toBe(200);
          const [note] = await creditNotes();
          expect(add(note.tax_base, note.tax_amount, note.tax_rounding)).toBe(note.amount);
          expect(compare(note.tax_rounding, '-1.00') >= 0 && compare(note.tax_rounding, '1.00') <= 0, note.tax_rounding).toBe(true);
          // The amended faktur: DPP after, and the PPN Coretax recomputes from it.
          const dppAfter = subtract(paid.tax_base, note.tax_base);
          expect(ppnOf(dppAfter, 'IDR').taxAmount).toBe(subtract(paid.tax_amount, note.tax_amount));
          const rest = await server.api('POST', `/payments/${created.body.payment.id}/refund/`, { auth: user, body: { reason: 'the rest' } });
          expect(rest.status, rest.text).toBe(200);
          const notes = await creditNotes();
          expect(notes).toHaveLength(2);
          for (const n of notes) expect(add(n.tax_base, n.tax_amount, n.tax_rounding)).toBe(n.amount);
          expect(add(...notes.map((n) => n.tax_base))).toBe(paid.tax_base);
          expect(add(...notes.map((n) => n.tax_amount))).toBe(paid.tax_amount);
        },
      ),
      { numRuns: 8 },
    );
  });

  it('a partial chargeback of a taxed card payment issues a credit note that takes no DPP or PPN off; a full chargeback issues none (row 2)', async () => {
    expect((await putProfile(BUSINESS)).status).toBe(200);
    const created = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'credit_card', token: 'sim-card-accept-1' });
    expect(created.status, created.text).toBe(201);
    await simulate(server, created.body.payment.order_id, 'settle');
    const partial = await server.request('POST', `/_simulator/v2/${created.body.payment.order_id}/partial_chargeback`, { body: { amount: 50000 } });
    expect(partial.status, partial.text).toBe(200);
    const notes = await creditNotes();
    expect(notes).toEqual([expect.objectContaining({ reason: 'chargeback', amount: '50000.00', tax_base: '0.00', tax_amount: '0.00', tax_rounding: '0.00', tax_action: 'none' })]);

    const other = await server.createUser();
    const second = await subscribe(server, other, { plan_id: 'pro-tax', payment_type: 'credit_card', token: 'sim-card-accept-1' });
    await simulate(server, second.body.payment.order_id, 'settle');
    const full = await server.request('POST', `/_simulator/v2/${second.body.payment.order_id}/chargeback`, { body: {} });
    expect(full.status, full.text).toBe(200);
    expect((await server.api('GET', '/credit-notes/', { auth: other })).body.results).toEqual([]);
    const reopened = (await server.api('GET', `/invoices/${second.body.payment.invoice_id}/`, { auth: other })).body;
    // The invoice is owed again; its PPN is unchanged.
    expect(reopened).toMatchObject({ status: 'open', tax_amount: '16500.00', tax_base: '150000.00' });
  });

  it('a Bahasa invoice with a plan change names its lines in Bahasa on the PDF; the API keeps the stored words (row 11)', async () => {
    await fundWallet(server, user, '500000');
    const created = await subscribe(server, user, { plan_id: 'basic-tax', payment_type: 'wallet' });
    expect(created.status, created.text).toBe(201);
    clock.advance(15 * DAY);
    const changed = await server.api('POST', `/subscriptions/${created.body.subscription.id}/change-plan/`, { auth: user, body: { plan_id: 'pro-tax' } });
    expect(changed.status, changed.text).toBe(200);
    const text = await pdf(`invoices/${changed.body.payment.invoice_id}/pdf/`);
    expect(text).toContain('Sisa waktu pada Pro');
    expect(text).toContain('Sisa waktu Basic yang tidak terpakai');
    expect(text).not.toContain('Remaining time on Pro');
    expect(text).not.toContain('Unused time on Basic');
    const first = await pdf(`invoices/${created.body.payment.invoice_id}/pdf/`);
    expect(first).toContain('Basic (1 bulan pertama)');
  });
});
