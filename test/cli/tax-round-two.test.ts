import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Invoice } from '../../src/db/entities/invoice.js';
import { ManualClock } from '../../src/domain/clock.js';
import { invoiceStates } from '../../src/domain/states/invoice-states.js';
import { refundPaymentAsStaff } from '../../src/services/refunds/refund-payment.js';
import { localDate } from '../../src/services/tax/tax-month.js';
import { cliEnv } from '../helpers/cli-server.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { child, elements, fakturs, parseXml, text, type XmlNode } from '../helpers/coretax-xml.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { fundWallet, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 37, tax round two, as finance sees it through billing-admin tax (docs/tax.md): passport
 * and other-document buyers in the Coretax file (golden), a profile saved after the invoice
 * attached at the first export, a PPN-0 invoice exported, the seller frozen on each invoice,
 * credits before the export taken off the faktur (and a full one never exported), and
 * corrections only for exported fakturs: chargebacks and write-offs with PPN standing.
 */

const GOLDEN = fileURLToPath(new URL('./fixtures/coretax-passport.xml', import.meta.url));
const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000' };
const NEW_SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0099988877766000', BILLING_SELLER_NITKU: '0099988877766000000000' };
const PLANS = [
  { slug: 'pro-tax', name: 'Pro', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'exclusive' as const },
  { slug: 'rupiah', name: 'Satu Rupiah', price: 1, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'exclusive' as const },
];
const FOREIGN = { buyer_type: 'foreign', passport: 'K1234567', country: 'SGP', name: 'Tan Wei Ming', address: '1 Raffles Place\nSingapore 048616', email: 'tan@example.sg' };
const OTHER = { buyer_type: 'other', document_number: '2C11AB1234567', name: 'John Smith', address: 'Jl. Bisma 4, Ubud' };
const BUSINESS = { buyer_type: 'business', npwp: '0011122233344000', name: 'PT Dua Putaran', address: 'Surabaya' };

const goodService = (faktur: XmlNode) => child(child(faktur, 'ListOfGoodService'), 'GoodService');

describe.each(DATABASES)('billing-admin tax, round two, on %s', (kind) => {
  const clock = new ManualClock(new Date('2026-05-04T03:00:00.000Z'));
  let server: TestServer;
  let dir: string;
  const bought: Record<string, { number: string; id: string; user: TestUser; orderId: string }> = {};

  const tax = (args: string[], env: Record<string, string> = SELLER): Promise<CliResult> => runCli(['tax', ...args], { ...cliEnv(server), ...env }, undefined, { cwd: dir });
  const em = () => server.running.billing.orm.em.fork() as EntityManager;
  const stored = (label: string) => em().findOneOrFail(Invoice, { number: bought[label].number });
  /** The CLI runs on the wall clock, the server on the test's: an export's stamp is moved to the test's clock. */
  const onTestClock = () => em().nativeUpdate(Invoice, { taxExportedAt: { $gt: clock.now() } }, { taxExportedAt: clock.now() });
  const refund = async (label: string, amount?: string) => {
    const { orm, config, gateway } = server.running.billing;
    await refundPaymentAsStaff({ em: orm.em.fork() as EntityManager, config, gateway, clock }, bought[label].orderId, { amount, reason: 'test', keepSubscription: true });
  };
  const issuer = async (label: string, action: 'chargeback' | 'partial_chargeback', amount?: number) => {
    const res = await server.request('POST', `/_simulator/v2/${bought[label].orderId}/${action}`, { body: amount === undefined ? {} : { amount } });
    expect(res.status, res.text).toBe(200);
  };

  async function buy(label: string, profile: object | null, plan: string, at: string, pay: 'wallet' | 'qris' | 'card' | 'bank_transfer' = 'wallet') {
    clock.set(new Date(at));
    const user = await server.createUser();
    if (profile) expect((await server.api('PUT', '/tax-profile/', { auth: user, body: profile })).status).toBe(200);
    if (pay === 'wallet') await fundWallet(server, user, '500000');
    const how = { card: { payment_type: 'credit_card', token: 'sim-card-accept-1' }, bank_transfer: { payment_type: 'bank_transfer', metadata: { bank: 'permata' } } };
    const created = await subscribe(server, user, { plan_id: plan, ...(pay === 'card' || pay === 'bank_transfer' ? how[pay] : { payment_type: pay }) });
    expect(created.status, created.text).toBe(201);
    if (pay !== 'wallet') await simulate(server, created.body.payment.order_id, 'settle');
    const body = (await server.api('GET', `/invoices/${created.body.payment.invoice_id}/`, { auth: user })).body;
    expect(body.status).toBe('paid');
    bought[label] = { number: body.number, id: body.id, user, orderId: created.body.payment.order_id };
  }
  const normalised = (xml: string) => Object.entries(bought).reduce((s, [label, b]) => s.replaceAll(`>${b.number}<`, `>{{${label}}}<`), xml);

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: SELLER });
    await server.seedPlans(PLANS);
    dir = await mkdtemp(join(tmpdir(), 'tax-round-two-'));
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a passport buyer and an other-document buyer are exported (golden file): Passport and Other ID, BuyerTin zeros, their country (row 7)', { timeout: 90_000 }, async () => {
    await buy('foreign', FOREIGN, 'pro-tax', '2026-05-04T03:00:00.000Z');
    await buy('other', OTHER, 'pro-tax', '2026-05-05T03:00:00.000Z');
    const res = await tax(['export', '--month', '2026-05', '--json']);
    expect(res.code, res.stderr).toBe(0);
    expect(res.json).toMatchObject({ invoices: 2, skipped: [], profiles_attached: [], files: ['coretax-2026-05.xml'] });
    const xml = await readFile(join(dir, 'coretax-2026-05.xml'), 'utf8');
    if (process.env.UPDATE_GOLDEN === '1') await writeFile(GOLDEN, normalised(xml));
    expect(normalised(xml)).toBe(await readFile(GOLDEN, 'utf8'));
    const [foreign, other] = fakturs(xml);
    const buyer = (f: XmlNode) => ['BuyerTin', 'BuyerDocument', 'BuyerCountry', 'BuyerDocumentNumber', 'BuyerIDTKU'].map((e) => text(f, e));
    expect(buyer(foreign)).toEqual(['0000000000000000', 'Passport', 'SGP', 'K1234567', '000000']);
    expect(buyer(other)).toEqual(['0000000000000000', 'Other ID', 'IDN', '2C11AB1234567', '000000']);
  });

  it('an invoice issued before its buyer saved a profile is skipped until they do, then takes that profile at its first export and the JSON says so; a Rp1 invoice (PPN 0) is exported; the seller is the one the invoice was made with (rows 8, 10)', { timeout: 120_000 }, async () => {
    await buy('late', null, 'pro-tax', '2026-06-02T03:00:00.000Z');
    await buy('rupiah', BUSINESS, 'rupiah', '2026-06-03T03:00:00.000Z');
    expect((await stored('rupiah'))).toMatchObject({ taxBase: '1.00', otherTaxBase: '0.92', taxAmount: '0.00', totalAmount: '1.00' });

    const first = await tax(['export', '--month', '2026-06', '--out', 'june.xml', '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.json).toMatchObject({ invoices: 1, profiles_attached: [], skipped: [{ invoice_number: bought.late.number, reason: expect.stringMatching(/^no buyer tax profile.*once the buyer saves one/) }] });
    const [rupiah] = fakturs(await readFile(join(dir, 'june.xml'), 'utf8'));
    expect(text(rupiah, 'RefDesc')).toBe(bought.rupiah.number);
    expect(['TaxBase', 'OtherTaxBase', 'VAT'].map((e) => text(goodService(rupiah), e))).toEqual(['1.00', '0.92', '0.00']);

    // The buyer saves a profile; the next export of June makes the faktur out to it, and keeps it on the invoice.
    expect((await server.api('PUT', '/tax-profile/', { auth: bought.late.user, body: BUSINESS })).status).toBe(200);
    // The seller's NPWP changed since: the invoice keeps the one it was made with.
    const second = await tax(['export', '--month', '2026-06', '--out', 'june-late.xml', '--json'], NEW_SELLER);
    expect(second.code, second.stderr).toBe(0);
    expect(second.json).toMatchObject({ invoices: 1, skipped: [], profiles_attached: [bought.late.number] });
    const human = await tax(['export', '--month', '2026-06', '--again', '--out', 'june-again.xml']);
    expect(human.stdout).not.toContain('Issued before their buyer saved a tax profile');
    const xml = await readFile(join(dir, 'june-late.xml'), 'utf8');
    expect(text(parseXml(xml), 'TIN')).toBe(SELLER.BILLING_TAX_ID);
    const [late] = fakturs(xml);
    expect([text(late, 'RefDesc'), text(late, 'BuyerTin'), text(late, 'SellerIDTKU')]).toEqual([bought.late.number, BUSINESS.npwp, SELLER.BILLING_SELLER_NITKU]);
    const invoice = (await server.api('GET', `/invoices/${bought.late.id}/`, { auth: bought.late.user })).body;
    expect(invoice.buyer_tax_profile).toMatchObject({ buyer_type: 'business', npwp: BUSINESS.npwp });
    expect(invoice.tax_exported_at).toEqual(expect.any(String));
    expect((await stored('late')).sellerTaxIdentity).toEqual({ npwp: SELLER.BILLING_TAX_ID, nitku: SELLER.BILLING_SELLER_NITKU, name: expect.any(String) });
  });

  it('credits before the first export: a part is taken off the faktur, the whole means no faktur, listed by tax corrections as not exported (row 9)', { timeout: 120_000 }, async () => {
    await buy('partly', BUSINESS, 'pro-tax', '2026-07-02T03:00:00.000Z', 'qris');
    await buy('cancelled', BUSINESS, 'pro-tax', '2026-07-03T03:00:00.000Z', 'qris');
    clock.set(new Date('2026-07-10T03:00:00.000Z'));
    await refund('partly', '5000');
    await refund('cancelled');
    const res = await tax(['export', '--month', '2026-07', '--out', 'july.xml', '--json']);
    expect(res.code, res.stderr).toBe(0);
    expect(res.json).toMatchObject({
      invoices: 1, tax_base: '145495.00', tax_amount: '16004.00',
      skipped: [{ invoice_number: bought.cancelled.number, reason: expect.stringMatching(/^credited in full before its first export/) }],
    });
    const [partly] = fakturs(await readFile(join(dir, 'july.xml'), 'utf8'));
    expect(['Price', 'TaxBase', 'OtherTaxBase', 'VAT'].map((e) => text(goodService(partly), e))).toEqual(['145495.00', '145495.00', '133370.42', '16004.00']);
    clock.advance(60_000);
    await onTestClock();

    const listed = await tax(['corrections', '--month', '2026-07', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    // The partial refund happened before the export: the faktur already holds it, nothing to correct.
    expect(listed.json).toEqual([
      expect.objectContaining({ kind: 'not_exported', invoice_number: bought.cancelled.number, tax_action: 'none', tax_amount: '0.00', instruction: expect.stringContaining('no faktur was made') }),
    ]);
  });

  it('after the export: a refund is a correction with DPP, DPP Nilai Lain and PPN before and after; a partial chargeback, a full chargeback and a write-off are listed with action none, PPN stands (rows 2, 9)', { timeout: 120_000 }, async () => {
    await buy('refunded', BUSINESS, 'pro-tax', '2026-08-02T03:00:00.000Z', 'qris');
    await buy('disputed', BUSINESS, 'pro-tax', '2026-08-03T03:00:00.000Z', 'card');
    await buy('charged', BUSINESS, 'pro-tax', '2026-08-04T03:00:00.000Z', 'card');
    const exported = await tax(['export', '--month', '2026-08', '--out', 'august.xml', '--json']);
    expect(exported.json).toMatchObject({ invoices: 3 });
    await onTestClock();

    clock.set(new Date('2026-09-03T03:00:00.000Z'));
    await refund('refunded', '5000');
    await issuer('disputed', 'partial_chargeback', 50000);
    await issuer('charged', 'chargeback');
    // Dunning gives up on the reopened invoice, as the billing run's last collection step does.
    const manager = em();
    const reopened = await manager.findOneOrFail(Invoice, { number: bought.charged.number });
    expect(reopened.status).toBe('open');
    invoiceStates.apply(reopened, 'mark_uncollectible', clock.now());
    await manager.flush();

    const value = (tax_base: string, other_tax_base: string, tax_amount: string) => ({ tax_base, other_tax_base, tax_amount });
    const full = value('150000.00', '137500.00', '16500.00');
    const september = await tax(['corrections', '--month', '2026-09', '--json']);
    expect(september.code, september.stderr).toBe(0);
    const ofCharged = expect.objectContaining({ kind: 'chargeback', invoice_number: bought.charged.number, credit_note_number: null, issued_on: '2026-09-03', amount: '166500.00', tax_amount: '0.00', tax_action: 'none', before: full, after: full, instruction: expect.stringMatching(/^PPN stands: a chargeback/) });
    const writeOff = expect.objectContaining({ kind: 'write_off', invoice_number: bought.charged.number, credit_note_number: null, issued_on: '2026-09-03', tax_action: 'none', before: full, after: full, instruction: expect.stringMatching(/^PPN stands: an invoice written off/) });
    expect(september.json).toEqual([
      expect.objectContaining({
        kind: 'credit_note', invoice_number: bought.refunded.number, amount: '5000.00', tax_amount: '496.00', tax_action: 'amendment',
        before: full, after: value('145495.00', '133370.42', '16004.00'), instruction: expect.stringContaining('PPN 16500.00 to 16004.00'),
      }),
      expect.objectContaining({ kind: 'chargeback', invoice_number: bought.disputed.number, credit_note_number: expect.stringMatching(/^CN-/), amount: '50000.00', tax_amount: '0.00', tax_action: 'none', before: full, after: full, instruction: expect.stringMatching(/^PPN stands/) }),
      ofCharged,
      writeOff,
    ]);
    // A full chargeback and a write-off are dated by the service's clock when they were applied,
    // not by the rows' last change: a later change (on the wall clock) moves neither.
    const later = em();
    const written = await later.findOneOrFail(Invoice, { number: bought.charged.number });
    written.nextRetryAt = new Date();
    await later.flush();
    const again = await tax(['corrections', '--month', '2026-09', '--json']);
    expect(again.json).toEqual(september.json);
    const wallMonth = localDate(new Date(), 'Asia/Jakarta').slice(0, 7);
    const now = await tax(['corrections', '--month', wallMonth, '--json']);
    expect((now.json as { invoice_number: string }[]).filter((r) => r.invoice_number === bought.charged.number)).toEqual([]);
    const human = await tax(['corrections', '--month', '2026-09']);
    expect(human.stdout).toContain(`(${bought.refunded.number}): DPP 150000.00 -> 145495.00, DPP Nilai Lain 137500.00 -> 133370.42, PPN 16500.00 -> 16004.00`);
  });

  it('after the export: a reversal by the gateway (deny after settlement) is listed on its own date with action none, PPN stands; paying the reopened invoice again makes no second faktur', { timeout: 120_000 }, async () => {
    await buy('reversed', BUSINESS, 'pro-tax', '2026-10-05T03:00:00.000Z', 'bank_transfer');
    const exported = await tax(['export', '--month', '2026-10', '--out', 'october.xml', '--json']);
    expect(exported.json).toMatchObject({ invoices: 1 });
    await onTestClock();

    clock.set(new Date('2026-11-30T18:30:00.000Z')); // 1 December in Jakarta
    const denied = await simulate(server, bought.reversed.orderId, 'deny');
    expect(denied.body.notification.http_status).toBe(200);
    expect((await stored('reversed')).status).toBe('open');

    const full = { tax_base: '150000.00', other_tax_base: '137500.00', tax_amount: '16500.00' };
    expect((await tax(['corrections', '--month', '2026-11', '--json'])).json).toEqual([]);
    const december = await tax(['corrections', '--month', '2026-12', '--json']);
    expect(december.code, december.stderr).toBe(0);
    expect(december.json).toEqual([
      expect.objectContaining({
        kind: 'reversal', invoice_number: bought.reversed.number, credit_note_number: null, issued_on: '2026-12-01', amount: '166500.00', tax_amount: '0.00', tax_action: 'none',
        before: full, after: full, instruction: expect.stringMatching(/^PPN stands: the gateway took payment back.*its next payment is paid on this faktur, not a new one/),
      }),
    ]);
    const human = await tax(['corrections', '--month', '2026-12']);
    expect(human.stdout).toContain('reversal');

    // The invoice is paid again in December: its faktur was made in October, so December's export holds none.
    clock.set(new Date('2026-12-02T03:00:00.000Z'));
    const { user } = bought.reversed;
    const subscriptionId = (await server.api('GET', `/invoices/${bought.reversed.id}/`, { auth: user })).body.subscription_id;
    const repaid = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: subscriptionId, payment_type: 'qris' } });
    expect(repaid.status, repaid.text).toBe(201);
    await simulate(server, repaid.body.payment.order_id, 'settle');
    expect((await stored('reversed')).status).toBe('paid');
    const decemberExport = await tax(['export', '--month', '2026-12', '--out', 'december.xml', '--json']);
    expect(decemberExport.json).toMatchObject({ invoices: 0 });
  });
});
