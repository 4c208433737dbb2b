import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { browse as browseAs, canRunChromium, PHONE, screenshotForReadme, serverWithBrowser, seriousAxeViolations, type PageLanguage } from '../helpers/browser.js';
import { DATABASES } from '../helpers/database.js';
import { pdfText } from '../helpers/pdf.js';
import type { Credentials, TestServer } from '../helpers/server.js';
import { activeSubscription, dbOf, openInvoice, simulate } from '../helpers/subscriptions.js';

type Lang = PageLanguage;

describe.runIf(canRunChromium).each(DATABASES)('the hosted customer portal in Chromium (%s)', (kind) => {
  const suite = serverWithBrowser(kind);
  let server: TestServer;
  beforeAll(() => {
    server = suite.server();
  });

  async function portalLink(user: Credentials): Promise<string> {
    const res = await server.api('POST', '/portal-sessions/', { auth: user, body: { return_url: `${server.url}/shop/account` } });
    expect(res.status).toBe(201);
    expect(res.body.url).toMatch(new RegExp(`^${server.url}/portal/[A-Za-z0-9_-]{43}/$`));
    return res.body.url;
  }

  const browse = (lang: Lang, viewport?: { width: number; height: number }) => browseAs(suite.browser(), lang, viewport);

  /** Opens the customer's portal as they would: the link's landing page, then its button. */
  async function openPortal(page: Page, user: Credentials): Promise<void> {
    expect((await page.goto(await portalLink(user)))?.status()).toBe(200);
    await page.click('#open-portal');
    await page.waitForSelector('#sub-title');
  }

  async function subscriber(plan = 'basic-monthly') {
    const user = await server.createUser();
    const { subscription } = await activeSubscription(server, user, plan);
    return { user, subscriptionId: subscription.id as string };
  }

  const expectAccessible = async (page: Page) => expect(await seriousAxeViolations(page)).toEqual([]);
  const latestPayment = (subscriptionId: string) => dbOf(server).findOneOrFail(Payment, { subscription: subscriptionId }, { orderBy: { createdAt: 'desc' } });

  it.each<[Lang, string, string]>([
    ['id', 'Akun langganan', 'aktif'],
    ['en', 'Your subscription', 'active'],
  ])('changes plan after seeing the preview (%s): the preview shows what is due, and the plan changes once it is paid', async (lang, heading, active) => {
    const { user, subscriptionId } = await subscriber();
    const { context, page } = await browse(lang);
    try {
      await openPortal(page, user);
      expect(await page.locator('h1').textContent()).toBe(heading);
      expect(await page.locator('#sub-status').textContent()).toBe(active);
      expect(await page.locator('#next-billing').textContent()).not.toBe('');
      await expectAccessible(page);
      if (lang === 'en' && kind === 'sqlite') await screenshotForReadme(page, 'portal');
      await page.selectOption('#change', 'pro-monthly');
      await page.click('#preview-change');
      await page.waitForSelector('#preview');
      // Same period, 50,000 to 150,000 a month, changed on the first day: close to 100,000 due now.
      const net = (await page.locator('#preview-net').textContent())!;
      expect(net).toMatch(/^Rp\u00a0\d{2,3}\.\d{3}$/);
      await expectAccessible(page);
      if (lang === 'en' && kind === 'sqlite') await screenshotForReadme(page, 'portal-plan-change-preview');
      expect((await dbOf(server).findOneOrFail(Subscription, subscriptionId)).plan.id).toBeDefined();
      await page.click('#confirm-change');
      await page.waitForSelector('#payment #va-number');
      await expectAccessible(page);
      expect(await page.locator('#payment .due').textContent()).toBe(net);
      await simulate(server, (await latestPayment(subscriptionId)).orderId, 'settle');
      await page.reload();
      expect(await page.locator('.item-name').textContent()).toMatch(/^Pro /);
    } finally {
      await context.close();
    }
  });

  const stored = (id: string) => dbOf(server).findOneOrFail(Subscription, id, { refresh: true });

  it.each<[Lang, RegExp, string, string]>([
    ['en', /^You keep access until .+; then the subscription ends with no new bill\.$/, 'Your subscription will end.', 'Your subscription continues and renews as before.'],
    ['id', /^Akses tetap berjalan sampai .+, lalu langganan berhenti tanpa tagihan baru\.$/, 'Langganan akan berhenti.', 'Langganan Anda berlanjut dan diperpanjang seperti biasa.'],
  ])('cancels at the period end on a 360 px phone (%s) after confirming, with the consequence spelled out first, then takes it back', async (lang, means, done, kept) => {
    const { user, subscriptionId } = await subscriber();
    const { context, page } = await browse(lang, PHONE);
    try {
      await openPortal(page, user);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
      expect(await page.locator('#cancel-end-means').textContent()).toMatch(means);
      // The button only asks; "no" leads back with nothing changed.
      await page.click('#cancel-end');
      await page.waitForSelector('#confirm-cancel');
      expect((await stored(subscriptionId)).cancelAtPeriodEnd).toBe(false);
      await expectAccessible(page);
      await page.click('#keep-subscription');
      await page.waitForSelector('#sub-title');
      expect(await page.locator('#confirm-cancel').count()).toBe(0);
      await page.click('#cancel-end');
      await page.click('#confirm-cancel-end');
      await page.waitForSelector('#ends-at');
      expect(await page.locator('.done-note').textContent()).toBe(done);
      expect(await stored(subscriptionId)).toMatchObject({ status: 'active', cancelAtPeriodEnd: true });
      await expectAccessible(page);
      // Changing one's mind before the period ends: the subscription renews as before.
      await page.click('#undo-cancel');
      await page.waitForSelector('#next-billing');
      expect(await page.locator('.done-note').textContent()).toBe(kept);
      expect(await page.locator('#ends-at').count()).toBe(0);
      expect(await page.locator('#undo-cancel').count()).toBe(0);
      expect(await stored(subscriptionId)).toMatchObject({ status: 'active', cancelAtPeriodEnd: false });
    } finally {
      await context.close();
    }
  });

  it.each<Lang>(['id', 'en'])('downloads an invoice PDF (%s); another user\'s invoice or subscription id is refused and changes nothing', async (lang) => {
    const { user, subscriptionId } = await subscriber();
    const other = await subscriber();
    const { context, page } = await browse(lang);
    try {
      await openPortal(page, user);
      const href = await page.locator('a.invoice-pdf').first().getAttribute('href');
      // The link asks the browser to save the file (download), as a customer keeps an invoice.
      const [download] = await Promise.all([page.waitForEvent('download'), page.locator('a.invoice-pdf').first().click()]);
      const pdf = await readFile((await download.path())!);
      expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
      const number = (await page.locator('.doc-number').first().textContent())!.trim();
      expect(download.suggestedFilename()).toBe(`${number}.pdf`);
      expect(await pdfText(pdf)).toContain(number);

      const otherInvoice = (await server.api('GET', '/invoices/', { auth: other.user })).body.results[0].id;
      const foreign = await context.request.get(new URL(href!.replace(/invoices\/[^/]+\/pdf$/, `invoices/${otherInvoice}/pdf`), server.url).toString());
      expect(foreign.status()).toBe(404);

      // A genuine form of this page, confirmed, with the other customer's subscription put in.
      const refused = await page.evaluate(async ({ otherSub }) => {
        const form = document.querySelector<HTMLFormElement>('form input[name="when"][value="now"]')!.form!;
        const body = new URLSearchParams(new FormData(form) as unknown as Record<string, string>);
        body.set('subscription_id', otherSub);
        body.set('confirm', 'yes');
        const res = await fetch(form.action, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
        return res.status;
      }, { otherSub: other.subscriptionId });
      expect(refused).toBe(400);
      expect((await dbOf(server).findOneOrFail(Subscription, other.subscriptionId, { refresh: true })).status).toBe('active');
      expect((await dbOf(server).findOneOrFail(Subscription, subscriptionId, { refresh: true })).status).toBe('active');

      // Without the page's CSRF token, nothing happens either.
      const forged = await page.evaluate(async (action) => (await fetch(action, { method: 'POST', body: 'when=now', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status,
        await page.locator('form input[name="when"][value="now"]').evaluate((el: HTMLInputElement) => el.form!.action));
      expect(forged).toBe(403);
      expect((await dbOf(server).findOneOrFail(Subscription, subscriptionId, { refresh: true })).status).toBe('active');
    } finally {
      await context.close();
    }
  });

  it.each<Lang>(['id', 'en'])('tops up the wallet from the portal (%s): on to the checkout, paid, and back with the balance shown', async (lang) => {
    const { user } = await subscriber();
    const { context, page } = await browse(lang);
    try {
      await openPortal(page, user);
      const portalUrl = page.url();
      expect(await page.locator('#wallet-balance').textContent()).toBe('Rp\u00a00');
      await page.fill('#topup-amount', '50000');
      await page.click('#topup');
      await page.waitForURL(/\/pay\//);
      await page.check('#pt-bank_transfer');
      await page.click('#pay');
      await page.waitForSelector('#va-number');
      const { Topup } = await import('../../src/db/entities/topup.js');
      const topup = await dbOf(server).findOneOrFail(Topup, { user: user.id });
      await simulate(server, topup.orderId, 'settle');
      await page.waitForURL(portalUrl, { timeout: 20_000 });
      expect(await page.locator('#wallet-balance').textContent()).toBe('Rp\u00a050.000');
      await expectAccessible(page);
    } finally {
      await context.close();
    }
  });

  /** Each flow once in Bahasa on a 360 px phone and once in English on a desktop. */
  const DESKTOP = { width: 1024, height: 900 };
  const SCREENS: [Lang, { width: number; height: number }][] = [['id', PHONE], ['en', DESKTOP]];
  const fitsWidth = async (page: Page, width: number) => expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
  const words = { id: { paused: 'dijeda', active: 'aktif', canceled: 'berhenti' }, en: { paused: 'paused', active: 'active', canceled: 'canceled' } };

  it.each(SCREENS)('pays an open bill (%s): the bill shows how to pay it', async (lang, viewport) => {
    const { user, subscriptionId } = await subscriber();
    await openInvoice(server, subscriptionId, '50000.00');
    const { context, page } = await browse(lang, viewport);
    try {
      await openPortal(page, user);
      await page.click('#pay-open');
      await page.waitForSelector('#payment #va-number');
      expect(await page.locator('.done-note').textContent()).toBe(lang === 'id' ? 'Tagihan siap dibayar; lihat caranya di bawah.' : 'The bill is ready to pay; see how below.');
      expect(await page.locator('#payment .due').textContent()).toMatch(/^Rp\s50\.000$/);
      await fitsWidth(page, viewport.width);
      await expectAccessible(page);
      await simulate(server, (await latestPayment(subscriptionId)).orderId, 'settle');
      await page.reload();
      expect(await page.locator('#payment').count()).toBe(0);
    } finally {
      await context.close();
    }
  });

  it.each(SCREENS)('pauses and resumes (%s)', async (lang, viewport) => {
    const { user, subscriptionId } = await subscriber();
    const { context, page } = await browse(lang, viewport);
    try {
      await openPortal(page, user);
      await page.click('#pause');
      await page.waitForSelector('#resume');
      expect(await page.locator('#sub-status').textContent()).toBe(words[lang].paused);
      expect((await dbOf(server).findOneOrFail(Subscription, subscriptionId, { refresh: true })).status).toBe('paused');
      await fitsWidth(page, viewport.width);
      await expectAccessible(page);
      await page.click('#resume');
      await page.waitForSelector('#pause');
      expect(await page.locator('#sub-status').textContent()).toBe(words[lang].active);
      expect((await dbOf(server).findOneOrFail(Subscription, subscriptionId, { refresh: true })).status).toBe('active');
      await expectAccessible(page);
    } finally {
      await context.close();
    }
  });

  it.each<Lang>(['id', 'en'])('without JavaScript (%s): the cancel asks, the confirmation cancels at the period end, "continue" takes it back', async (lang) => {
    const { user, subscriptionId } = await subscriber();
    const context = await suite.browser().newContext({ javaScriptEnabled: false, locale: lang === 'en' ? 'en-US' : 'id-ID', extraHTTPHeaders: { 'Accept-Language': lang } });
    try {
      const page = await context.newPage();
      await openPortal(page, user);
      await page.click('#cancel-end');
      await page.waitForSelector('#confirm-cancel-end');
      expect((await stored(subscriptionId)).cancelAtPeriodEnd).toBe(false);
      await page.click('#confirm-cancel-end');
      await page.waitForSelector('#undo-cancel');
      expect((await stored(subscriptionId)).cancelAtPeriodEnd).toBe(true);
      await page.click('#undo-cancel');
      await page.waitForSelector('#next-billing');
      expect((await stored(subscriptionId)).cancelAtPeriodEnd).toBe(false);
    } finally {
      await context.close();
    }
  });

  it.each(SCREENS)('cancels now (%s)', async (lang, viewport) => {
    const { user, subscriptionId } = await subscriber();
    const { context, page } = await browse(lang, viewport);
    try {
      await openPortal(page, user);
      // A double tap only asks, twice.
      await page.dblclick('#cancel-now');
      await page.waitForSelector('#confirm-cancel-now');
      expect((await stored(subscriptionId)).status).toBe('active');
      await fitsWidth(page, viewport.width);
      await page.click('#confirm-cancel-now');
      await page.waitForSelector('.done-note');
      expect(await page.locator('.done-note').textContent()).toBe(lang === 'id' ? 'Langganan sudah berhenti.' : 'Your subscription has ended.');
      expect(await page.locator('#sub-status').textContent()).toBe(words[lang].canceled);
      expect(await page.locator('#cancel-now').count()).toBe(0);
      expect((await dbOf(server).findOneOrFail(Subscription, subscriptionId, { refresh: true })).status).toBe('canceled');
      await fitsWidth(page, viewport.width);
      await expectAccessible(page);
    } finally {
      await context.close();
    }
  });

  it.each(SCREENS)('confirms a plan change at its quoted price, says what it waits for, and withdraws it (%s)', async (lang, viewport) => {
    const { user, subscriptionId } = await subscriber();
    const { context, page } = await browse(lang, viewport);
    try {
      await openPortal(page, user);
      await page.selectOption('#change', 'pro-monthly');
      await page.click('#preview-change');
      await page.waitForSelector('#preview');
      expect(await page.locator('#preview input[name="quote"]').getAttribute('value')).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
      const net = (await page.locator('#preview-net').textContent())!;
      await page.click('#confirm-change');
      await page.waitForSelector('#pending-change');
      const waiting = lang === 'id' ? `Perubahan ke Pro menunggu pembayaran ${net}.` : `The move to Pro is waiting for a payment of ${net}.`;
      expect(await page.locator('#pending-change strong').textContent()).toBe(waiting);
      expect(await page.locator('.done-note').textContent()).not.toMatch(/Paket sudah diganti|Your plan has changed/);
      expect(await page.locator('#pay-title').textContent()).toBe(lang === 'id' ? 'Bayar perubahan ke Pro' : 'Pay for the move to Pro');
      expect(await page.locator('#payment .due').textContent()).toBe(net);
      expect(await page.locator('.item-name').textContent()).toMatch(/^Basic /);
      await fitsWidth(page, viewport.width);
      await expectAccessible(page);

      const changeId = (await dbOf(server).findOneOrFail(Subscription, subscriptionId)).pendingChange!.payment_id;
      const orderId = (await dbOf(server).findOneOrFail(Payment, changeId)).orderId;
      await page.click('#withdraw-change');
      await page.waitForSelector('.done-note');
      expect(await page.locator('.done-note').textContent()).toBe(lang === 'id' ? 'Perubahan paket dibatalkan; paket Anda tetap Basic.' : 'The plan change is withdrawn; you stay on Basic.');
      expect(await page.locator('#pending-change').count()).toBe(0);
      expect(await page.locator('#payment').count()).toBe(0);
      expect((await dbOf(server).findOneOrFail(Payment, changeId)).status).toBe('canceled');
      expect(server.running.billing.simulator!.transactions().find((t) => t.order_id === orderId)?.transaction_status).toBe('cancel');
      await expectAccessible(page);
    } finally {
      await context.close();
    }
  });

  it.each(SCREENS)('refuses a top-up typed "100000.00" next to the field, with the value kept (%s)', async (lang, viewport) => {
    const { user } = await subscriber();
    const { context, page } = await browse(lang, viewport);
    try {
      await openPortal(page, user);
      await page.fill('#topup-amount', '100000.00');
      await page.click('#topup');
      await page.waitForSelector('#topup-amount-error');
      expect(await page.locator('#topup-amount-error').textContent()).toBe(lang === 'id'
        ? 'Tulis jumlah dalam rupiah penuh tanpa desimal: 100.000 atau 100000, bukan 100000,00 atau 100000.00.'
        : 'Write the amount in whole rupiah without decimals: 100,000 or 100000, not 100000.00.');
      const input = page.locator('#topup-amount');
      expect(await input.inputValue()).toBe('100000.00');
      expect(await input.getAttribute('aria-invalid')).toBe('true');
      expect((await input.getAttribute('aria-describedby'))!.split(' ')).toContain('topup-amount-error');
      expect(page.url()).toMatch(/\/portal\/[A-Za-z0-9_-]{43}\/topup/);
      const { Topup } = await import('../../src/db/entities/topup.js');
      expect(await dbOf(server).count(Topup, { user: user.id })).toBe(0);
      await fitsWidth(page, viewport.width);
      await expectAccessible(page);
      if (lang === 'en' && kind === 'sqlite') await screenshotForReadme(page, 'portal-topup-refused');
    } finally {
      await context.close();
    }
  });
});
