import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { HostedSession } from '../../src/db/entities/hosted-session.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { browse as browseAs, canRunChromium, PHONE, screenshotForReadme, serverWithBrowser, seriousAxeViolations, type PageLanguage } from '../helpers/browser.js';
import { DATABASES } from '../helpers/database.js';
import type { Credentials, TestServer } from '../helpers/server.js';
import { dbOf } from '../helpers/subscriptions.js';

type Lang = PageLanguage;
const DESKTOP = { width: 1024, height: 900 };

/**
 * The life of hosted links as a customer meets it: a link preview (a chat app's or a mail
 * scanner's GET and HEAD) before the customer opens it, the portal's landing page whose button
 * claims the link, and the way back to the shop from a link that no longer opens.
 */
describe.runIf(canRunChromium).each(DATABASES)('hosted links in Chromium (%s)', (kind) => {
  const suite = serverWithBrowser(kind);
  let server: TestServer;
  beforeAll(() => {
    server = suite.server();
  });

  const browse = (lang: Lang, viewport?: { width: number; height: number }) => browseAs(suite.browser(), lang, viewport);
  const expectAccessible = async (page: Page) => expect(await seriousAxeViolations(page)).toEqual([]);
  const fitsWidth = async (page: Page, width: number) => expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);

  async function checkoutLink(user: Credentials, body: Record<string, unknown> = { plan_id: 'pro-monthly' }): Promise<string> {
    const res = await server.api('POST', '/checkout-sessions/', { auth: user, body: { success_url: `${server.url}/shop/thanks`, cancel_url: `${server.url}/shop/plans`, ...body } });
    expect(res.status).toBe(201);
    return res.body.url;
  }

  async function portalLink(user: Credentials): Promise<string> {
    const res = await server.api('POST', '/portal-sessions/', { auth: user, body: { return_url: `${server.url}/shop/account` } });
    expect(res.status).toBe(201);
    return res.body.url;
  }

  /** What a chat app's link preview or a mail scanner does with a link: GET it and HEAD it, without cookies. */
  async function preview(url: string): Promise<void> {
    const path = new URL(url).pathname;
    expect((await server.request('GET', path, { headers: { 'user-agent': 'WhatsApp/2.23 link preview' } })).status).toBe(200);
    expect((await server.request('HEAD', path, { headers: { 'user-agent': 'Slackbot-LinkExpanding 1.0' } })).status).toBe(200);
  }

  it('a checkout link previewed first still opens for the customer, who pays from it; a reload and another device open it too; a form without its token is refused', async () => {
    const user = await server.createUser();
    const url = await checkoutLink(user);
    await preview(url);
    const phone = await browse('id', PHONE);
    const desktop = await browse('en');
    try {
      expect((await phone.page.goto(url))?.status()).toBe(200);
      expect(await phone.page.locator('h1').textContent()).toBe('Pembayaran');
      expect((await phone.page.reload())?.status()).toBe(200);
      expect((await desktop.page.goto(url))?.status()).toBe(200);
      expect(await desktop.page.locator('h1').textContent()).toBe('Checkout');

      // A form posted without the page's token (from another site, or forged) changes nothing.
      const forged = await phone.page.evaluate(async (action) => {
        const res = await fetch(action, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'payment_type=bank_transfer&bank=bca' });
        return res.status;
      }, new URL(url).pathname);
      expect(forged).toBe(403);
      expect(await dbOf(server).count(Subscription, { user: user.id })).toBe(0);

      await phone.page.check('#pt-bank_transfer');
      await phone.page.selectOption('#bank', 'bni');
      await phone.page.click('#pay');
      await phone.page.waitForSelector('#va-number');
      await fitsWidth(phone.page, PHONE.width);
      // The desktop, reloaded, shows the same VA: the link is the customer's on any device.
      await desktop.page.reload();
      expect((await desktop.page.locator('#va-number').textContent())!.trim()).toBe((await phone.page.locator('#va-number').textContent())!.trim());
    } finally {
      await phone.context.close();
      await desktop.context.close();
    }
  });

  it('a portal link previewed first: the landing page (360 px and desktop, both languages, nothing serious for axe-core), and its button opens the portal', async () => {
    const cases: [Lang, { width: number; height: number }, string, string][] = [
      ['id', PHONE, 'Portal pelanggan', 'Buka portal pelanggan'],
      ['en', PHONE, 'Customer portal', 'Open the customer portal'],
      ['id', DESKTOP, 'Portal pelanggan', 'Buka portal pelanggan'],
      ['en', DESKTOP, 'Customer portal', 'Open the customer portal'],
    ];
    for (const [lang, viewport, heading, button] of cases) {
      const user = await server.createUser();
      const url = await portalLink(user);
      await preview(url);
      const { context, page } = await browse(lang, viewport);
      try {
        expect((await page.goto(url))?.status()).toBe(200);
        expect(await page.locator('h1').textContent()).toBe(heading);
        expect((await page.locator('#open-portal').textContent())?.trim()).toBe(button);
        await fitsWidth(page, viewport.width);
        await expectAccessible(page);
        if (kind === 'sqlite' && lang === 'id' && viewport === PHONE) await screenshotForReadme(page, 'portal-landing-phone');
        await Promise.all([page.waitForURL(url), page.click('#open-portal')]);
        await page.waitForSelector('#sub-title');
        expect((await page.reload())?.status()).toBe(200);
        expect(await page.locator('#sub-title').count()).toBe(1);
        expect((await dbOf(server).findOneOrFail(HostedSession, { user: user.id, kind: 'portal' })).openedAt).not.toBeNull();
      } finally {
        await context.close();
      }
    }
  });

  it.each<Lang>(['id', 'en'])('a long plan name wraps on a 360 px phone and "Rp" stays with its number (%s)', async (lang) => {
    const slug = `long-name-${lang}`;
    const name = 'Paket Perusahaan Superlengkap Langganantanpabatasuntukseluruhtimdancabangperusahaan Nusantara';
    await server.seedPlans([{ slug, name, description: 'A plan with a long name', price: 1250000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 9 }]);
    const user = await server.createUser();
    const { context, page } = await browse(lang, PHONE);
    try {
      expect((await page.goto(await checkoutLink(user, { plan_id: slug })))?.status()).toBe(200);
      await fitsWidth(page, PHONE.width);
      expect(await page.locator('.item-name').first().textContent()).toContain('Langganantanpabatas');
      const total = page.locator('.amounts .total dd');
      expect(await total.textContent()).toBe('Rp\u00a01.250.000');
      // One line: "Rp" and the number never wrap apart.
      expect(await total.evaluate((dd) => dd.getBoundingClientRect().height < 2 * parseFloat(getComputedStyle(dd).lineHeight))).toBe(true);
      await expectAccessible(page);
    } finally {
      await context.close();
    }
  });

  it.each<[Lang, string, string]>([
    ['id', 'Tautan tidak berlaku', 'Kembali ke toko'],
    ['en', 'This link no longer works', 'Back to the shop'],
  ])('a link that no longer opens leads back to the shop (%s): a portal claimed in another browser to return_url, an expired checkout to cancel_url', async (lang, heading, back) => {
    const user = await server.createUser();
    const portal = await portalLink(user);
    const owner = await browse('id');
    const other = await browse(lang, PHONE);
    try {
      await owner.page.goto(portal);
      await Promise.all([owner.page.waitForURL(portal), owner.page.click('#open-portal')]);
      expect((await other.page.goto(portal))?.status()).toBe(410);
      expect(await other.page.locator('h1').textContent()).toBe(heading);
      expect((await other.page.locator('#back').textContent())?.trim()).toBe(back);
      await fitsWidth(other.page, PHONE.width);
      await expectAccessible(other.page);
      if (kind === 'sqlite' && lang === 'id') await screenshotForReadme(other.page, 'link-used');
      await Promise.all([other.page.waitForURL(`${server.url}/shop/account`), other.page.click('#back')]);

      const checkout = await checkoutLink(user);
      await dbOf(server).nativeUpdate(HostedSession, { user: user.id, kind: 'checkout' }, { expiresAt: new Date(Date.now() - 1000) });
      expect((await other.page.goto(checkout))?.status()).toBe(410);
      expect(await other.page.locator('h1').textContent()).toBe(heading);
      await expectAccessible(other.page);
      await Promise.all([other.page.waitForURL(`${server.url}/shop/plans`), other.page.click('#back')]);
    } finally {
      await owner.context.close();
      await other.context.close();
    }
  });
});
