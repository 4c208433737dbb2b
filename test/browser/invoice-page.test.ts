import { beforeAll, describe, expect, it } from 'vitest';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import { browse, canRunChromium, PHONE, screenshotForReadme, serverWithBrowser, seriousAxeViolations } from '../helpers/browser.js';
import { DATABASES } from '../helpers/database.js';
import type { TestServer } from '../helpers/server.js';
import { dbOf, simulate } from '../helpers/subscriptions.js';

/*
 * An open invoice paid from its own hosted page on a 360 px phone in Bahasa Indonesia: the
 * customer finds the QRIS code made first, chooses another method, a BNI virtual account,
 * and the page shows the number and moves on to "Lunas" by itself once the bank pays it.
 */
describe.runIf(canRunChromium).each(DATABASES)('an open invoice\'s page in Chromium (%s)', { timeout: 120_000 }, (kind) => {
  const suite = serverWithBrowser(kind);
  let server: TestServer;
  beforeAll(() => {
    server = suite.server();
  });

  const fitsPhone = async (page: import('playwright-core').Page) => expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);

  it('pays an open invoice by a BNI virtual account instead of its QRIS code, at 360 px in Bahasa', async () => {
    const user = await server.createUser();
    const created = await server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'pro-monthly', payment_type: 'qris' } });
    expect(created.status, created.text).toBe(201);
    const invoiceId = created.body.payment.invoice_id as string;
    const url = (await server.api('GET', `/invoices/${invoiceId}/`, { auth: user })).body.hosted_url as string;

    const { context, page } = await browse(suite.browser(), 'id', PHONE);
    try {
      await page.goto(url);
      expect(await page.textContent('h1')).toContain('Tagihan INV-');
      await page.waitForSelector('#payment[data-state="pending"] img.qr', { state: 'visible' });
      await fitsPhone(page);
      expect(await seriousAxeViolations(page)).toEqual([]);

      await page.click('#switch summary');
      expect((await page.textContent('#switch summary'))?.trim()).toBe('Pilih metode lain');
      await page.check('#pt-bank_transfer');
      await page.selectOption('#bank', 'bni');
      await page.click('#pay');
      await page.waitForSelector('#va-number', { state: 'visible', timeout: 15_000 });
      expect(await page.textContent('#payment')).toContain('BNI');
      await fitsPhone(page);
      expect(await seriousAxeViolations(page)).toEqual([]);
      await screenshotForReadme(page, 'invoice-page-phone');

      const payments = await dbOf(server).find(Payment, { invoice: invoiceId }, { orderBy: { createdAt: 'asc' } });
      expect(payments.map((p) => [p.paymentType, p.status])).toEqual([['qris', 'canceled'], ['bank_transfer', 'pending']]);
      await simulate(server, payments[1]!.orderId, 'settle');
      await page.waitForSelector('section.done[data-state="paid"]', { timeout: 20_000 });
      expect(await page.textContent('section.done')).toContain('Lunas');
      await fitsPhone(page);
      expect((await dbOf(server).findOneOrFail(Invoice, invoiceId)).status).toBe('paid');
      await screenshotForReadme(page, 'invoice-page-paid-phone');
    } finally {
      await context.close();
    }
  });
});
