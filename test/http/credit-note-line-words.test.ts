import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Payment } from '../../src/db/entities/payment.js';
import { ManualClock } from '../../src/domain/clock.js';
import { runBilling } from '../../src/services/billing/run-billing.js';
import { DATABASES } from '../helpers/database.js';
import { signedNotification } from '../helpers/factories.js';
import { pdfText } from '../helpers/pdf.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { activeSubscription, dbOf, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * Credit notes made by the wallet's credits (a plan change's unused time, a settlement nobody
 * could use, one that came after its period had passed) render their line in the document's
 * language like every other line (docs/documents.md, "Line descriptions"): the credit-note module
 * stores what the line is from what it is told, and the PDF in Bahasa Indonesia (the default
 * BILLING_LOCALE) shows Bahasa words, while the API keeps the English description.
 */

const DAY = 24 * 60 * 60 * 1000;
const START = new Date('2026-03-02T03:00:00.000Z');
/** pdftotext keeps the layout (a long line wraps beside its amount): runs of spaces made one, amounts left out. */
const squash = (text: string) => text.replace(/\s+/g, ' ').replace(/Rp [\d.]+ /g, '');

describe.each(DATABASES)('wallet credit notes in Bahasa Indonesia on %s', (kind) => {
  let server: TestServer;
  let user: TestUser;
  const clock = new ManualClock(START);
  beforeAll(async () => {
    server = await startTestServer(kind, { clock });
    await server.seedPlans(STANDARD_PLANS);
  }, 60_000);
  afterAll(() => server?.stop());
  beforeEach(async () => {
    clock.set(START);
    user = await server.createUser();
  });

  const billingRun = () => {
    const { orm, gateway, config } = server.running.billing;
    return runBilling({ em: orm.em.fork(), config, gateway, clock }, {});
  };
  const webhook = (fields: Parameters<typeof signedNotification>[1]) => server.api('POST', '/webhook/notification/', { body: signedNotification(server.config.gateway.serverKey, fields) });
  const notes = async () => (await server.api('GET', '/credit-notes/', { auth: user })).body.results as { id: string; number: string; reason: string }[];
  const pdfOf = async (id: string) => {
    const res = await fetch(`${server.url}/api/subscriptions/credit-notes/${id}/pdf/`, {
      headers: { authorization: `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}` },
    });
    expect(res.status).toBe(200);
    return squash(await pdfText(Buffer.from(await res.arrayBuffer())));
  };
  const linesOf = async (id: string) => (await server.api('GET', `/credit-notes/${id}/`, { auth: user })).body.lines as { description: string }[];

  it('a proration credit: "Sisa waktu Pro yang tidak terpakai setelah pindah ke Basic"', async () => {
    const { subscription } = await activeSubscription(server, user, 'pro-monthly');
    clock.advance(10 * DAY);
    const down = await server.api('POST', `/subscriptions/${subscription.id}/change-plan/`, { auth: user, body: { plan_id: 'basic-monthly' } });
    expect(down.status, down.text).toBe(200);
    const [note] = await notes();
    expect(note.reason).toBe('proration_credit');
    const text = await pdfOf(note.id);
    expect(text).toContain('Sisa waktu Pro yang tidak terpakai setelah pindah ke Basic');
    expect(text).not.toContain('Unused time');
    expect(await linesOf(note.id)).toEqual([expect.objectContaining({ description: 'Unused time on Pro after moving to Basic' })]);
  });

  it('a settlement after its subscription ended: "tidak dapat digunakan (langganannya sudah berakhir)"', async () => {
    const created = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer' });
    expect((await server.api('POST', `/subscriptions/${created.body.subscription.id}/cancel/`, { auth: user, body: { immediate: true } })).status).toBe(200);
    const late = await webhook({ order_id: created.body.payment.order_id, transaction_status: 'settlement', gross_amount: '150000.00' });
    expect(late.status, late.text).toBe(200);
    const [note] = await notes();
    expect(note.reason).toBe('unusable_settlement');
    const invoice = (await server.api('GET', `/invoices/${created.body.payment.invoice_id}/`, { auth: user })).body;
    const text = await pdfOf(note.id);
    expect(text).toContain(`Pembayaran ${created.body.payment.order_id} tidak dapat digunakan (langganannya sudah berakhir) (tagihan ${invoice.number}): dikreditkan ke dompet`);
    expect(text).not.toContain('could not be used');
  });

  it('a renewal paid after its period had passed: "diterima setelah periode … berakhir", the days in Bahasa', async () => {
    const created = await subscribe(server, user, { plan_id: 'weekly', payment_type: 'bank_transfer' });
    expect(created.status, created.text).toBe(201);
    await simulate(server, created.body.payment.order_id, 'settle');
    // A week later the renewal is billed; nobody pays it; another week passes.
    clock.set(new Date(START.getTime() + 7 * DAY + 60_000));
    await billingRun();
    const renewal = (await dbOf(server).find(Payment, { subscription: created.body.subscription.id, status: 'pending' }, { populate: ['invoice'] }))[0];
    expect(renewal).toBeDefined();
    clock.set(new Date(START.getTime() + 14 * DAY + 120_000));
    await billingRun();
    // Paid in time at the bank, heard only now.
    const late = await webhook({ order_id: renewal.orderId, transaction_status: 'settlement', gross_amount: renewal.grossAmount });
    expect(late.status, late.text).toBe(200);
    const note = (await notes()).find((n) => n.reason === 'period_passed')!;
    expect(note).toBeDefined();
    const text = await pdfOf(note.id);
    // The weekly period 9 March to 16 March 2026 (Asia/Jakarta days).
    expect(text).toMatch(new RegExp(`Pembayaran ${renewal.orderId} diterima setelah periode 9 Maret 2026 s\\.d\\. 16 Maret 2026 berakhir \\(tagihan ${renewal.invoice!.number}\\): dikreditkan ke dompet`));
    expect(text).not.toContain('could not be used');
  });
});
