import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Invoice } from '../../src/db/entities/invoice.js';
import { ManualClock } from '../../src/domain/clock.js';
import { PROJECT_ROOT } from '../../src/project-root.js';
import { closeDeliveryChannels, createDeliveryChannels } from '../../src/services/delivery/channels.js';
import { deliverDueNotifications } from '../../src/services/delivery/deliver-due-notifications.js';
import { DATABASES, type DatabaseKind } from '../helpers/database.js';
import { startSmtpCapture, type SmtpCapture } from '../helpers/delivery.js';
import { pdfText } from '../helpers/pdf.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 29 (docs/documents.md): documents for Indonesian customers. In BILLING_LOCALE (id-ID by
 * default) and BILLING_TIMEZONE (Asia/Jakarta): a taxed invoice shows both parties' NPWP, DPP,
 * DPP Nilai Lain, PPN 12 % and the total, and its Faktur Pajak number once recorded; a due one
 * says how to pay it; a refunded one says so; every date is the Jakarta date.
 */

const SELLER = {
  BILLING_PKP: 'true',
  BILLING_TAX_ID: '0012345678091000',
  BILLING_SELLER_NITKU: '0012345678091000000000',
  BILLING_COMPANY_NAME: 'PT Contoh Langganan Indonesia',
  BILLING_COMPANY_ADDRESS: 'Jl. Jenderal Sudirman Kav. 52-53|Jakarta Selatan 12190',
};
const PLANS = [
  { slug: 'pro-tax', name: 'Pro', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'exclusive' as const },
  { slug: 'inclusive', name: 'Inclusive', price: 15000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, tax_behavior: 'inclusive' as const },
];
const BUSINESS = { buyer_type: 'business', npwp: '09.876.543.2-109.000', name: 'PT Pembeli Jaya', address: 'Jl. Gatot Subroto No. 7, Bandung' };
const PERSON = { buyer_type: 'individual', nik: '3171015505900001', name: 'Siti Rahayu', address: 'Jl. Merdeka 10, Surabaya' };
const START = new Date('2026-03-10T03:00:00.000Z');

/** pdftotext keeps the layout; compare with runs of spaces made one. */
const squash = (text: string) => text.replace(/[ \t]+/g, ' ');
/** A date and time as the documents write them in Jakarta, in `locale` ("1 April 2026 pukul 01.30 WIB"). */
const jakartaDateTime = (iso: string, locale: string, zone: string) =>
  `${new Intl.DateTimeFormat(locale, { dateStyle: 'long', timeStyle: 'short', timeZone: 'Asia/Jakarta' }).format(new Date(iso))} ${zone}`.replace(/[\u00a0\u202f]/g, ' ');

/**
 * docs/images/taxed-invoice-id.png: page 1 at 80 dpi, written when the suite runs with
 * WRITE_DOCS_IMAGES=1 (docs/documents.md).
 */
async function writeDocsImage(pdf: Buffer): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'taxed-invoice-'));
  try {
    await writeFile(join(dir, 'invoice.pdf'), pdf);
    await promisify(execFile)('pdftoppm', ['-png', '-r', '80', '-f', '1', '-l', '1', '-singlefile', join(dir, 'invoice.pdf'), join(dir, 'page')]);
    await writeFile(join(PROJECT_ROOT, 'docs/images/taxed-invoice-id.png'), await readFile(join(dir, 'page.png')));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function pdfOf(server: TestServer, user: TestUser, path: string): Promise<{ status: number; body: Buffer }> {
  const res = await fetch(`${server.url}/api/subscriptions/${path}`, { headers: { authorization: `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}` } });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
}

async function textOf(server: TestServer, user: TestUser, path: string): Promise<string> {
  const res = await pdfOf(server, user, path);
  expect(res.status).toBe(200);
  return squash(await pdfText(res.body));
}

/** A new customer with `profile` as their tax profile. */
async function buyer(server: TestServer, profile: Record<string, string>): Promise<TestUser> {
  const user = await server.createUser();
  const saved = await server.api('PUT', '/tax-profile/', { auth: user, body: profile });
  expect(saved.status, saved.text).toBe(200);
  return user;
}

function taxedInvoicesIn(kind: DatabaseKind) {
  const clock = new ManualClock(START);
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: SELLER });
    await server.seedPlans(PLANS);
  });
  afterAll(async () => server?.stop());
  beforeEach(() => clock.set(START));

  it('a due taxed invoice in Bahasa Indonesia: both NPWPs, DPP, DPP Nilai Lain, PPN 12%, the total, and the bank and VA number to pay it to', async () => {
    const user = await buyer(server, BUSINESS);
    const created = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'bank_transfer', metadata: { bank: 'bni' } });
    expect(created.status, created.text).toBe(201);
    const details = created.body.payment.payment_details;
    const text = await textOf(server, user, `invoices/${created.body.payment.invoice_id}/pdf/`);

    expect(text).toContain('TAGIHAN');
    expect(text).not.toMatch(/\bFAKTUR\b(?! PAJAK)/);
    expect(text).toContain('PENJUAL');
    expect(text).toContain('PEMBELI');
    expect(text).toContain('NPWP: 0012345678091000');
    expect(text).toContain('NITKU: 0012345678091000000000');
    expect(text).toContain('PT Pembeli Jaya');
    expect(text).toContain('Jl. Gatot Subroto No. 7, Bandung');
    expect(text).toContain('NPWP: 0098765432109000');
    expect(text).toContain('NITKU: 0098765432109000000000');
    expect(text).toMatch(/Deskripsi Jml Harga Satuan Jumlah/);
    expect(text).toMatch(/Tanggal 10 Maret 2026/);
    expect(text).toMatch(/Jatuh Tempo \d{1,2} Maret 2026/);
    expect(text).toMatch(/Subtotal Rp 150\.000/);
    expect(text).toMatch(/DPP Rp 150\.000/);
    expect(text).toMatch(/DPP Nilai Lain \(11\/12\) Rp 137\.500/);
    expect(text).toMatch(/PPN 12% Rp 16\.500/);
    expect(text).not.toContain('Pembulatan');
    expect(text).toMatch(/Total Rp 166\.500/);
    expect(text).toMatch(/Jumlah Terutang Rp 166\.500/);
    expect(text).toContain('BELUM DIBAYAR');
    expect(text).toMatch(/Status Belum Dibayar/);

    expect(text).toContain('Cara Pembayaran');
    expect(text).toContain('Transfer tepat Rp 166.500 ke nomor Virtual Account BNI');
    expect(text).toMatch(/Bank BNI/);
    expect(text).toContain(`Nomor Virtual Account ${details.va_number}`);
    expect(text).toContain(`Pesanan ${created.body.payment.order_id}`);
    expect(text).toContain(`Bayar sebelum ${jakartaDateTime(details.expiry_time, 'id-ID', 'WIB')}`);
    expect(text).toMatch(/Halaman 1 dari 1/);
  });

  it('Mandiri bill payment shows the biller code and bill key; QRIS the QR code address and what to do with it', async () => {
    const user = await buyer(server, BUSINESS);
    const echannel = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'echannel' });
    expect(echannel.status, echannel.text).toBe(201);
    const bill = await textOf(server, user, `invoices/${echannel.body.payment.invoice_id}/pdf/`);
    expect(bill).toContain('Bayar Rp 166.500 melalui Mandiri Bill Payment');
    expect(bill).toContain(`Kode Perusahaan (Biller Code) ${echannel.body.payment.payment_details.biller_code}`);
    expect(bill).toContain(`Kode Bayar (Bill Key) ${echannel.body.payment.payment_details.bill_key}`);

    const other = await buyer(server, PERSON);
    const qris = await subscribe(server, other, { plan_id: 'pro-tax', payment_type: 'qris' });
    expect(qris.status, qris.text).toBe(201);
    const qr = await textOf(server, other, `invoices/${qris.body.payment.invoice_id}/pdf/`);
    // The sentence wraps: read it as one line.
    expect(qr.replace(/\s+/g, ' ')).toContain('pindai dengan aplikasi e-wallet atau mobile banking yang mendukung QRIS untuk membayar Rp 166.500.');
    // The address may wrap: all of it is on the page.
    expect(qr).toContain('Kode QR');
    expect(qr.replace(/\s+/g, '')).toContain(qris.body.payment.payment_details.qr_code_url);
  });

  it('a paid taxed invoice: Lunas, the Jakarta paid date, and the Faktur Pajak number once recorded, rendered anew', async () => {
    const user = await buyer(server, BUSINESS);
    const created = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'bank_transfer' });
    await simulate(server, created.body.payment.order_id, 'settle');
    const path = `invoices/${created.body.payment.invoice_id}/pdf/`;
    const before = await pdfOf(server, user, path);
    const paid = squash(await pdfText(before.body));
    expect(paid).toContain('LUNAS');
    expect(paid).toMatch(/Status Lunas/);
    expect(paid).toMatch(/Tanggal Bayar 10 Maret 2026/);
    expect(paid).toMatch(/Dibayar Rp 166\.500/);
    expect(paid).not.toContain('Cara Pembayaran');
    expect(paid).not.toContain('No. Faktur Pajak');

    // What `billing-admin tax record` stores once Coretax has approved the faktur.
    await dbOf(server).nativeUpdate(Invoice, { id: created.body.payment.invoice_id }, { taxInvoiceNumber: '04002600012345678' });
    const after = await pdfOf(server, user, path);
    expect(after.body.equals(before.body)).toBe(false);
    const recorded = squash(await pdfText(after.body));
    expect(recorded).toMatch(/No\. Faktur Pajak 04002600012345678/);

    if (kind === 'sqlite' && process.env.WRITE_DOCS_IMAGES === '1') await writeDocsImage(after.body);
  });

  it('an inclusive price to an individual: the NIK, and the rupiah of rounding on its own line', async () => {
    const user = await buyer(server, PERSON);
    const created = await subscribe(server, user, { plan_id: 'inclusive', payment_type: 'bank_transfer' });
    const text = await textOf(server, user, `invoices/${created.body.payment.invoice_id}/pdf/`);
    expect(text).toContain('Siti Rahayu');
    expect(text).toContain('NIK: 3171015505900001');
    expect(text).not.toContain('NPWP: 3171');
    expect(text).toMatch(/DPP Rp 13\.514/);
    expect(text).toMatch(/PPN 12% Rp 1\.487/);
    expect(text).toMatch(/Pembulatan -Rp 1\b/);
    expect(text).toMatch(/Total Rp 15\.000/);
  });

  it('refunds: partly, then in full; each credit note shows its PPN part', async () => {
    const user = await buyer(server, BUSINESS);
    const created = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'qris' });
    await simulate(server, created.body.payment.order_id, 'settle');
    const path = `invoices/${created.body.payment.invoice_id}/pdf/`;
    const refund = (body: unknown) => server.api('POST', `/payments/${created.body.payment.id}/refund/`, { auth: user, body });

    expect((await refund({ amount: 55500, reason: 'partial' })).status).toBe(200);
    const partly = await textOf(server, user, path);
    expect(partly).toContain('DIKEMBALIKAN SEBAGIAN');
    expect(partly).toMatch(/Status Dikembalikan sebagian Rp 55\.500/);
    expect(partly).toMatch(/Dikembalikan -Rp 55\.500/);
    expect(partly).toMatch(/Dibayar bersih Rp 111\.000/);
    const [note] = (await server.api('GET', `/credit-notes/?invoice_id=${created.body.payment.invoice_id}`, { auth: user })).body.results;
    const noteText = await textOf(server, user, `credit-notes/${note.id}/pdf/`);
    expect(noteText).toContain('NOTA KREDIT');
    expect(noteText).toContain('NPWP: 0012345678091000');
    expect(noteText).toContain('NPWP: 0098765432109000');
    expect(noteText).toMatch(/Total Dikreditkan Rp 55\.500/);
    expect(noteText).toMatch(/Termasuk PPN Rp 5\.500/);

    expect((await refund({ reason: 'the rest' })).status).toBe(200);
    const full = await textOf(server, user, path);
    expect(full).toContain('DIKEMBALIKAN');
    expect(full).not.toContain('DIKEMBALIKAN SEBAGIAN');
    expect(full).toMatch(/Status Dikembalikan seluruhnya/);
    expect(full).toMatch(/Dibayar bersih Rp 0\b/);
  });
}

describe.each(DATABASES)('taxed invoice PDFs in Bahasa Indonesia on %s', (kind) => taxedInvoicesIn(kind));

describe.each(DATABASES)('the Jakarta date of an invoice paid late on the last day of a month, in the PDF and in the emails, on %s', (kind) => {
  const clock = new ManualClock(new Date('2026-03-31T10:00:00.000Z'));
  let server: TestServer;
  let smtp: SmtpCapture;
  beforeAll(async () => {
    smtp = await startSmtpCapture();
    // Delivered by the test, at the time it chooses, not by the server's own worker.
    server = await startTestServer(kind, { clock, env: { ...SELLER, SMTP_URL: smtp.url, DELIVERY_INTERVAL_SECONDS: '0' } });
    await server.seedPlans(PLANS);
  });
  afterAll(async () => {
    await server?.stop();
    await smtp?.stop();
  });

  it('paid at 18:30 UTC on 31 March 2026 reads 1 April 2026 (01.30 WIB)', async () => {
    const user = await buyer(server, BUSINESS);
    const created = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'bank_transfer' });
    expect(created.status, created.text).toBe(201);
    clock.set(new Date('2026-03-31T18:30:00.000Z'));
    await simulate(server, created.body.payment.order_id, 'settle');

    const text = await textOf(server, user, `invoices/${created.body.payment.invoice_id}/pdf/`);
    expect(text).toMatch(/Tanggal 31 Maret 2026/);
    expect(text).toMatch(/Tanggal Bayar 1 April 2026/);
    expect(text).toMatch(/Dibayar pada 1 April 2026 pukul 01\.30 WIB/);
    expect(text).not.toMatch(/Tanggal Bayar 31 Maret/);

    const billing = server.running.billing;
    const channels = createDeliveryChannels(server.config);
    try {
      await deliverDueNotifications({ em: billing.orm.em.fork(), config: server.config, clock, channels, renderPdf: billing.documents.render });
    } finally {
      closeDeliveryChannels(channels);
    }
    const receipt = smtp.messages.find((m) => m.subject === `Bukti pembayaran: Rp 166.500 untuk pesanan ${created.body.payment.order_id}`);
    expect(receipt, smtp.messages.map((m) => m.subject).join('\n')).toBeDefined();
    const attached = squash(await pdfText(receipt!.attachments[0].content));
    expect(attached).toMatch(/Tanggal Bayar 1 April 2026/);

    // The activation email names the period's end: a month on, late in the UTC day, the next day in Jakarta.
    const subscription = (await server.api('GET', `/subscriptions/${created.body.subscription.id}/`, { auth: user })).body;
    const end = new Date(subscription.current_period_end);
    const utcDay = new Intl.DateTimeFormat('id-ID', { dateStyle: 'long', timeZone: 'UTC' }).format(end);
    const jakartaDay = new Intl.DateTimeFormat('id-ID', { dateStyle: 'long', timeZone: 'Asia/Jakarta' }).format(end);
    expect(jakartaDay).not.toBe(utcDay);
    const activated = smtp.messages.find((m) => m.subject.includes('sudah aktif'));
    expect(activated?.text).toContain(`Periode saat ini berakhir: ${jakartaDay}`);
    expect(activated?.text).not.toContain(utcDay);
  });
});

describe.each(DATABASES)('taxed invoice PDFs in English (BILLING_LOCALE=en-US) on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind, { clock: new ManualClock(START), env: { ...SELLER, BILLING_LOCALE: 'en-US' } });
    await server.seedPlans(PLANS);
  });
  afterAll(async () => server?.stop());

  it('the in-app notifications follow BILLING_LOCALE too', async () => {
    const user = await buyer(server, BUSINESS);
    const created = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'bank_transfer' });
    await simulate(server, created.body.payment.order_id, 'settle');
    const titles = (await server.api('GET', '/notifications/', { auth: user })).body.results.map((n: { title: string }) => n.title);
    expect(titles).toEqual(expect.arrayContaining(['Payment waiting', 'Payment received', 'Subscription active']));
  });

  it('shows the English labels, the same figures in en-US digits, how to pay, and a refund', async () => {
    const user = await buyer(server, BUSINESS);
    const created = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'bank_transfer', metadata: { bank: 'bca' } });
    const due = await textOf(server, user, `invoices/${created.body.payment.invoice_id}/pdf/`);
    expect(due).toContain('INVOICE');
    expect(due).not.toContain('TAGIHAN');
    expect(due).toContain('SELLER');
    expect(due).toContain('BUYER');
    expect(due).toContain('Tax ID: 0012345678091000');
    expect(due).toContain('Tax ID: 0098765432109000');
    expect(due).toMatch(/Description Qty Unit price Amount/);
    expect(due).toMatch(/Issue date March 10, 2026/);
    expect(due).toMatch(/DPP \(tax base\) IDR 150,000/);
    expect(due).toMatch(/VAT \(PPN\) 12% IDR 16,500/);
    expect(due).toMatch(/Total IDR 166,500/);
    expect(due).toContain('DUE');
    expect(due).toContain('How to pay');
    expect(due).toContain(`Virtual account number ${created.body.payment.payment_details.va_number}`);
    expect(due).toContain(`Pay before ${jakartaDateTime(created.body.payment.payment_details.expiry_time, 'en-US', 'GMT+7')}`);
    expect(due).toMatch(/Page 1 of 1/);

    const qris = await subscribe(server, user, { plan_id: 'pro-tax', payment_type: 'qris' });
    await simulate(server, qris.body.payment.order_id, 'settle');
    expect((await server.api('POST', `/payments/${qris.body.payment.id}/refund/`, { auth: user, body: { amount: 55500, reason: 'partial' } })).status).toBe(200);
    const refunded = await textOf(server, user, `invoices/${qris.body.payment.invoice_id}/pdf/`);
    expect(refunded).toContain('PARTIALLY REFUNDED');
    expect(refunded).toMatch(/Status Partially refunded IDR 55,500/);
  });
});
