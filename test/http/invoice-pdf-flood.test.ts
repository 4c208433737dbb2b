import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Invoice, InvoiceLine } from '../../src/db/entities/invoice.js';
import { User } from '../../src/db/entities/user.js';
import { DATABASES } from '../helpers/database.js';
import { pdfText } from '../helpers/pdf.js';
import { parsePrometheusText, sampleValue } from '../helpers/prometheus-text.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { activeSubscription, dbOf, type TestUser } from '../helpers/subscriptions.js';

const TOKEN = 'pdf-flood-metrics-token';
/** Issue 28, row 12: one user asks for 400 PDFs at once. */
const FLOOD = 400;
const DISTINCT = 40;

const basic = (user: TestUser) => `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}`;

describe.each(DATABASES)('a flood of PDF requests on %s', (kind) => {
  let server: TestServer;
  let flooder: TestUser;
  let bystander: TestUser;
  let invoices: { id: string; number: string }[];

  beforeAll(async () => {
    server = await startTestServer(kind, { env: { METRICS_TOKEN: TOKEN } });
    await server.seedPlans(STANDARD_PLANS);
    bystander = await server.createUser();
    await activeSubscription(server, bystander, 'basic-monthly');

    // Forty invoices of one customer, each a document of its own.
    flooder = await server.createUser();
    const em = dbOf(server);
    const owner = em.getReference(User, flooder.id);
    const made = Array.from({ length: DISTINCT }, (_, i) => {
      const number = `INV-2026-9${String(i).padStart(5, '0')}`;
      const invoice = em.create(Invoice, {
        number, user: owner, status: 'open', billingReason: 'subscription_cycle', currency: 'IDR',
        issueDate: '2026-11-01', dueDate: '2026-11-04', subtotal: '50000.00', totalAmount: '50000.00', amountRefunded: '0.00',
      } as unknown as Invoice);
      em.create(InvoiceLine, { invoice, position: 0, description: `Basic, month ${i + 1}`, kind: 'subscription', quantity: 1, unitAmount: '50000.00', amount: '50000.00' } as unknown as InvoiceLine);
      return invoice;
    });
    await em.flush();
    invoices = made.map((i) => ({ id: i.id, number: i.number }));
  });
  afterAll(() => server?.stop());

  const pdf = async (id: string) => {
    const res = await fetch(`${server.url}/api/subscriptions/invoices/${id}/pdf/`, { headers: { authorization: basic(flooder) } });
    return { status: res.status, type: res.headers.get('content-type'), retryAfter: res.headers.get('retry-after'), body: Buffer.from(await res.arrayBuffer()) };
  };
  const metric = async (name: string, labels: Record<string, string> = {}) => {
    const res = await server.request('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    return sampleValue(parsePrometheusText(res.text), name, labels);
  };

  it(`when one user asks for ${FLOOD} PDFs of ${DISTINCT} invoices at once: the burst beyond the limit is 429, none 500, the rest are the PDFs, and another user is served meanwhile`, async () => {
    const refusedBefore = await metric('billing_document_renders_refused_total', { reason: 'user_limit' });
    const flood = Promise.all(Array.from({ length: FLOOD }, (_, i) => pdf(invoices[i % DISTINCT].id)));
    const plain = await server.api('GET', '/subscriptions/active/', { auth: bystander });
    expect(plain.status).toBe(200);
    const answers = await flood;

    const statuses = new Set(answers.map((a) => a.status));
    expect([...statuses].filter((s) => s !== 200 && s !== 429)).toEqual([]);
    const refused = answers.filter((a) => a.status === 429);
    const served = answers.filter((a) => a.status === 200);
    expect(refused.length).toBeGreaterThan(0);
    expect(served.length).toBeGreaterThan(0);
    for (const answer of refused) {
      expect(answer.type).toMatch(/application\/problem\+json/);
      expect(JSON.parse(answer.body.toString()).code).toBe('rate_limited');
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    for (const answer of served) {
      expect(answer.type).toBe('application/pdf');
      expect(answer.body.subarray(0, 5).toString()).toBe('%PDF-');
    }
    expect(await metric('billing_document_renders_refused_total', { reason: 'user_limit' })).toBe(refusedBefore + refused.length);

    // Once the burst is over, every one of the invoices is served, each its own document.
    const later = await pdf(invoices[DISTINCT - 1].id);
    expect(later.status).toBe(200);
    expect(await pdfText(later.body)).toContain(invoices[DISTINCT - 1].number);
  });

  it('the same invoice asked for 50 times, ten at a time, a second apart (the limits), is rendered once, and every answer is the same PDF', async () => {
    const [invoice] = invoices;
    // A version of its own: the invoice changes (paid), so no earlier render of it counts.
    const em = dbOf(server);
    await em.nativeUpdate(Invoice, { id: invoice.id }, { status: 'paid', paidAt: new Date('2026-11-02T03:00:00Z') });
    const renderedBefore = await metric('billing_documents_rendered_total');
    const hitsBefore = await metric('billing_document_cache_hits_total');

    const answers: Awaited<ReturnType<typeof pdf>>[] = [];
    // A second apart, the first a second after the requests before it: cached answers count
    // against the user's ten a second too.
    for (let wave = 0; wave < 5; wave++) {
      await new Promise((resolve) => setTimeout(resolve, 1_050));
      answers.push(...(await Promise.all(Array.from({ length: 10 }, () => pdf(invoice.id)))));
    }
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
    expect(answers.every((a) => a.body.equals(answers[0].body))).toBe(true);
    expect(await pdfText(answers[0].body)).toContain('LUNAS');
    expect(await metric('billing_documents_rendered_total')).toBe(renderedBefore + 1);
    expect(await metric('billing_document_cache_hits_total')).toBe(hitsBefore + 49);
  });
});
