import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { browse as browseAs, canRunChromium, PHONE, screenshotForReadme, serverWithBrowser, seriousAxeViolations, type PageLanguage } from '../helpers/browser.js';
import { DATABASES } from '../helpers/database.js';
import { pdfText } from '../helpers/pdf.js';
import type { Credentials, TestServer } from '../helpers/server.js';
import { activeSubscription, dbOf, simulate } from '../helpers/subscriptions.js';

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
      expect((await page.goto(await portalLink(user)))?.status()).toBe(200);
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
      expect(net).toMatch(/^Rp \d{2,3}\.\d{3}$/);
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

  it.each<[Lang, RegExp, string]>([
    ['en', /^You keep access until .+; then the subscription ends with no new bill\.$/, 'Your subscription will end.'],
    ['id', /^Akses tetap berjalan sampai .+, lalu langganan berhenti tanpa tagihan baru\.$/, 'Langganan akan berhenti.'],
  ])('cancels at the period end on a 360 px phone (%s), with the consequence spelled out first', async (lang, means, done) => {
    const { user, subscriptionId } = await subscriber();
    const { context, page } = await browse(lang, PHONE);
    try {
      await page.goto(await portalLink(user));
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
      expect(await page.locator('#cancel-end-means').textContent()).toMatch(means);
      await page.click('#cancel-end');
      await page.waitForSelector('#ends-at');
      expect(await page.locator('.done-note').textContent()).toBe(done);
      const sub = await dbOf(server).findOneOrFail(Subscription, subscriptionId, { refresh: true });
      expect(sub.cancelAtPeriodEnd).toBe(true);
      expect(sub.status).toBe('active');
      await expectAccessible(page);
    } finally {
      await context.close();
    }
  });

  it.each<Lang>(['id', 'en'])('downloads an invoice PDF (%s); another user\'s invoice or subscription id is refused and changes nothing', async (lang) => {
    const { user, subscriptionId } = await subscriber();
    const other = await subscriber();
    const { context, page } = await browse(lang);
    try {
      await page.goto(await portalLink(user));
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

      // A genuine form of this page, with the other customer's subscription put in.
      const refused = await page.evaluate(async ({ otherSub }) => {
        const form = document.querySelector<HTMLFormElement>('form input[name="when"][value="now"]')!.form!;
        const body = new URLSearchParams(new FormData(form) as unknown as Record<string, string>);
        body.set('subscription_id', otherSub);
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
      await page.goto(await portalLink(user));
      const portalUrl = page.url();
      expect(await page.locator('#wallet-balance').textContent()).toBe('Rp 0');
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
      expect(await page.locator('#wallet-balance').textContent()).toBe('Rp 50.000');
      await expectAccessible(page);
    } finally {
      await context.close();
    }
  });
});
