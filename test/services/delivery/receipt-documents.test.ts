import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDeliveryChannels, createDeliveryChannels, type DeliveryChannels } from '../../../src/services/delivery/channels.js';
import { deliverDueNotifications } from '../../../src/services/delivery/deliver-due-notifications.js';
import { DATABASES } from '../../helpers/database.js';
import { pdfText } from '../../helpers/pdf.js';
import { STANDARD_PLANS, type TestServer } from '../../helpers/server.js';
import { activeSubscription, type TestUser } from '../../helpers/subscriptions.js';
import { serverDeliveringTo, type Receiver, type SmtpCapture } from '../../helpers/delivery.js';

describe.each(DATABASES)('receipts carry their documents on %s', (kind) => {
  const delivering = serverDeliveringTo(kind, {
    OUTBOUND_WEBHOOK_SECRET: 'whsec_test_secret',
    // Delivered by the test below, not by the server's own worker.
    DELIVERY_INTERVAL_SECONDS: '0',
    BILLING_COMPANY_NAME: 'PT Contoh Langganan Indonesia',
  });
  let server: TestServer;
  let smtp: SmtpCapture;
  let receiver: Receiver;
  let channels: DeliveryChannels;
  let user: TestUser;
  let invoice: { id: string; number: string };
  let note: { id: string; number: string };

  beforeAll(async () => {
    ({ server, smtp, receiver } = delivering);
    await server.seedPlans(STANDARD_PLANS);
    user = await server.createUser();
    const { payment } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
    const refund = await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: { amount: '10000.00', reason: 'goodwill' } });
    expect(refund.status).toBe(200);
    invoice = (await server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: user })).body;
    note = (await server.api('GET', `/credit-notes/?invoice_id=${invoice.id}`, { auth: user })).body.results[0];

    const billing = server.running.billing;
    channels = createDeliveryChannels(server.config);
    // Rendered in the app's worker pool, as the server's delivery worker does.
    const report = await deliverDueNotifications({ em: billing.orm.em.fork(), config: server.config, clock: billing.clock, channels, renderPdf: billing.documents.render });
    expect(report.retrying).toEqual([]);
    expect(report.failed).toEqual([]);
  });
  afterAll(() => {
    if (channels) closeDeliveryChannels(channels);
  });

  const event = (type: string) => receiver.posts.map((p) => JSON.parse(p.body)).find((e) => e.type === type);

  it('the payment receipt email attaches the invoice PDF; its webhook links to it', async () => {
    const mail = smtp.messages.find((m) => m.subject.startsWith('Bukti pembayaran:'))!;
    expect(mail.attachments.map((a) => [a.filename, a.contentType])).toEqual([[`${invoice.number}.pdf`, 'application/pdf']]);
    const text = await pdfText(mail.attachments[0].content);
    expect(text).toContain(invoice.number);
    expect(text).toContain('PT Contoh Langganan Indonesia');
    expect(mail.text).toContain('Email ini adalah bukti pembayaran Anda');
    expect(event('payment_succeeded').data).toMatchObject({ invoice_pdf: `/invoices/${invoice.id}/pdf/` });
  });

  it("the refund email attaches the refund's credit note; its webhook links to the credit note and the invoice", async () => {
    const mail = smtp.messages.find((m) => m.subject.startsWith('Pengembalian dana'))!;
    expect(mail.attachments.map((a) => a.filename)).toEqual([`${note.number}.pdf`]);
    const text = await pdfText(mail.attachments[0].content);
    expect(text).toContain(note.number);
    expect(text).toContain(invoice.number);
    expect(event('payment_refunded').data).toMatchObject({ invoice_pdf: `/invoices/${invoice.id}/pdf/`, credit_note_pdf: `/credit-notes/${note.id}/pdf/` });
  });

  it('other events attach nothing and link nothing', async () => {
    const activated = smtp.messages.find((m) => /sudah aktif/.test(m.subject))!;
    expect(activated.attachments).toEqual([]);
    expect(event('subscription_activated').data).not.toHaveProperty('invoice_pdf');
  });
});
