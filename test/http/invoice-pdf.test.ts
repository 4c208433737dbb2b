import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { DATABASES } from '../helpers/database.js';
import { pdfText, renderFirstPage } from '../helpers/pdf.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { activeSubscription, simulate, type TestUser } from '../helpers/subscriptions.js';

const DAY = 24 * 60 * 60 * 1000;
const START = new Date('2026-01-15T03:00:00Z');

/** As in the change-plan suite: ten days into a 31-day period, Basic → Pro nets 67 742. */
const SELLER = {
  BILLING_COMPANY_NAME: 'PT Contoh Langganan Indonesia',
  BILLING_COMPANY_ADDRESS: 'Jl. Jenderal Sudirman Kav. 52-53|Jakarta Selatan 12190',
  BILLING_TAX_ID: '01.234.567.8-901.000',
};

/** pdftotext keeps the layout; compare with runs of spaces made one. */
const squash = (text: string) => text.replace(/[ \t]+/g, ' ');


/** The Bahasa words the documents print for a line the API describes in English (docs/documents.md, "Line descriptions"). */
function inBahasa(description: string): string {
  return description
    .replace(/^Unused time on (.+)$/, 'Sisa waktu $1 yang tidak terpakai')
    .replace(/^Remaining time on (.+)$/, 'Sisa waktu pada $1')
    .replace(/^Refund (\S+) of payment (\S+) \(invoice (\S+)\)$/, 'Pengembalian dana $1 atas pembayaran $2 (tagihan $3)');
}

describe.each(DATABASES)('invoice and credit-note PDFs on %s', (kind) => {
  let server: TestServer;
  let user: TestUser;
  let stranger: TestUser;
  const clock = new ManualClock(START);
  let first: { invoiceId: string; number: string };
  let proration: { invoiceId: string; number: string; lines: { description: string }[] };

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: SELLER });
    await server.seedPlans(STANDARD_PLANS);
    user = await server.createUser({ firstName: 'Siti', lastName: 'Rahayu' });
    stranger = await server.createUser();

    const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
    const firstInvoice = (await server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: user })).body;
    first = { invoiceId: firstInvoice.id, number: firstInvoice.number };

    clock.advance(10 * DAY);
    const changed = await server.api('POST', `/subscriptions/${subscription.id}/change-plan/`, { auth: user, body: { plan_id: 'pro-monthly', immediate: true } });
    expect(changed.status).toBe(200);
    await simulate(server, changed.body.payment.order_id, 'settle');
    const refund = await server.api('POST', `/payments/${changed.body.payment.id}/refund/`, { auth: user, body: { amount: '17742.00', reason: 'goodwill' } });
    expect(refund.status).toBe(200);
    const invoice = (await server.api('GET', `/invoices/${changed.body.payment.invoice_id}/`, { auth: user })).body;
    expect(invoice.amount_refunded).toBe('17742.00');
    proration = { invoiceId: invoice.id, number: invoice.number, lines: invoice.lines };
  });
  afterAll(() => server?.stop());

  const pdfOf = async (id: string, as: TestUser = user, kind: 'invoices' | 'credit-notes' = 'invoices') => {
    const res = await fetch(`${server.url}/api/subscriptions/${kind}/${id}/pdf/`, {
      headers: { authorization: `Basic ${Buffer.from(`${as.username}:${as.password}`).toString('base64')}` },
    });
    return { status: res.status, type: res.headers.get('content-type'), disposition: res.headers.get('content-disposition'), body: Buffer.from(await res.arrayBuffer()) };
  };

  it('a proration invoice with a refund: number, every line, totals, seller, customer, payment and refund', async () => {
    const res = await pdfOf(proration.invoiceId);
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/pdf');
    expect(res.disposition).toBe(`inline; filename="${proration.number}.pdf"`);
    expect(res.body.subarray(0, 5).toString()).toBe('%PDF-');

    const text = squash(await pdfText(res.body));
    expect(text).toContain('TAGIHAN');
    expect(text).toContain(proration.number);
    expect(text).toContain(SELLER.BILLING_COMPANY_NAME);
    expect(text).toContain('Jl. Jenderal Sudirman Kav. 52-53');
    expect(text).toContain('Jakarta Selatan 12190');
    expect(text).toContain(`NPWP: ${SELLER.BILLING_TAX_ID}`);
    expect(text).toContain('Siti Rahayu');
    expect(text).toContain(`${user.username}@example.com`);
    // Labels in Bahasa Indonesia, dates in Asia/Jakarta (the defaults): issued 25 January 2026.
    expect(text).toContain('TAGIHAN KEPADA');
    expect(text).toMatch(/Tanggal 25 Januari 2026/);
    expect(text).toMatch(/Deskripsi Jml Harga Satuan Jumlah/);

    expect(proration.lines).toHaveLength(2);
    // The lines' words are rendered in the document's language (Bahasa here); the API keeps the stored English.
    for (const line of proration.lines) {
      expect(text).toContain(inBahasa(line.description));
      expect(text).not.toContain(line.description);
    }
    expect(text).toMatch(/-Rp 33\.871/);
    expect(text).toMatch(/Rp 101\.613/);
    expect(text).toMatch(/Subtotal Rp 67\.742/);
    expect(text).toMatch(/Total Rp 67\.742/);
    expect(text).toMatch(/Dikembalikan -Rp 17\.742/);
    expect(text).toMatch(/Dibayar bersih Rp 50\.000/);
    expect(text).toContain('DIKEMBALIKAN SEBAGIAN');
    expect(text).toMatch(/Status Dikembalikan sebagian Rp 17\.742/);
    expect(text).toMatch(/Metode GoPay/);
    expect(text).toMatch(/Nota Kredit CN-2026-\d{6} Pengembalian dana ke GoPay -Rp 17\.742/);

    const png = await renderFirstPage(res.body);
    expect(png.subarray(1, 4).toString()).toBe('PNG');
  });

  it('the first invoice: the plan line with its period, paid, no refunds', async () => {
    const res = await pdfOf(first.invoiceId);
    expect(res.status).toBe(200);
    const text = squash(await pdfText(res.body));
    expect(text).toContain(first.number);
    expect(text).toMatch(/Basic/);
    expect(text).toMatch(/Periode 15 Jan 2026 – 15 Feb 2026/);
    expect(text).toMatch(/Total Rp 50\.000/);
    expect(text).toContain('LUNAS');
    expect(text).toMatch(/Status Lunas/);
    expect(text).not.toContain('Pengembalian Dana dan Nota Kredit');
  });

  it('a downgrade credits the wallet: the paid invoice lists the credit note and the net paid', async () => {
    const other = await server.createUser();
    clock.set(START);
    const { subscription, payment } = await activeSubscription(server, other, 'pro-monthly', 'gopay');
    clock.advance(10 * DAY);
    expect((await server.api('POST', `/subscriptions/${subscription.id}/change-plan/`, { auth: other, body: { plan_id: 'basic-monthly' } })).status).toBe(200);
    const invoice = (await server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: other })).body;
    expect(invoice.credit_notes).toHaveLength(1);
    const text = squash(await pdfText((await pdfOf(invoice.id, other)).body));
    expect(text).toMatch(new RegExp(`Nota Kredit ${invoice.credit_notes[0].number} Kredit prorata ke dompet -Rp 67\\.742`));
    expect(text).toMatch(/Dikreditkan ke dompet -Rp 67\.742/);
    expect(text).toMatch(/Dibayar bersih Rp 82\.258/);
  });

  it('renders the same bytes twice (the creation date is the issue date)', async () => {
    const [a, b] = [await pdfOf(first.invoiceId), await pdfOf(first.invoiceId)];
    expect(a.body.equals(b.body)).toBe(true);
  });

  it("another user's invoice and an unknown id answer 404 problem+json", async () => {
    const foreign = await pdfOf(proration.invoiceId, stranger);
    expect(foreign.status).toBe(404);
    expect(foreign.type).toMatch(/application\/problem\+json/);
    expect(JSON.parse(foreign.body.toString()).code).toBe('not_found');
    expect((await pdfOf('00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it('a credit note: its number, the invoice it credits, the line, the total, seller and customer', async () => {
    const notes = (await server.api('GET', `/credit-notes/?invoice_id=${proration.invoiceId}`, { auth: user })).body.results;
    expect(notes).toHaveLength(1);
    const note = (await server.api('GET', `/credit-notes/${notes[0].id}/`, { auth: user })).body;
    const res = await pdfOf(note.id, user, 'credit-notes');
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/pdf');
    expect(res.disposition).toBe(`inline; filename="${note.number}.pdf"`);

    const text = squash(await pdfText(res.body));
    expect(text).toContain('NOTA KREDIT');
    expect(text).toContain(note.number);
    expect(text).toMatch(new RegExp(`No. Tagihan ${proration.number}`));
    expect(text).toContain(SELLER.BILLING_COMPANY_NAME);
    expect(text).toContain(`NPWP: ${SELLER.BILLING_TAX_ID}`);
    expect(text).toContain('Siti Rahayu');
    // A long description wraps inside its column: every word is there.
    for (const line of note.lines) for (const word of inBahasa(line.description).split(' ')) expect(text).toContain(word);
    expect(text).toContain('Pengembalian dana');
    expect(text).toMatch(/Total Dikreditkan Rp 17\.742/);
    expect(text).toMatch(/Alasan Pengembalian dana/);
    expect(text).toMatch(/Dikreditkan Ke GoPay/);
    expect(text).toMatch(/Catatan goodwill/);
    expect((await renderFirstPage(res.body)).subarray(1, 4).toString()).toBe('PNG');

    expect((await pdfOf(note.id, stranger, 'credit-notes')).status).toBe(404);
    expect((await pdfOf('00000000-0000-4000-8000-000000000000', user, 'credit-notes')).status).toBe(404);
  });

  it('needs authentication', async () => {
    const res = await fetch(`${server.url}/api/subscriptions/invoices/${first.invoiceId}/pdf/`);
    expect(res.status).toBe(401);
  });
});
