import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { HostedSession } from '../../src/db/entities/hosted-session.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { Topup } from '../../src/db/entities/topup.js';
import { browse as browseAs, canRunChromium, PHONE, screenshotForReadme, serverWithBrowser, seriousAxeViolations, type PageLanguage } from '../helpers/browser.js';
import { DATABASES } from '../helpers/database.js';
import type { Credentials, TestServer } from '../helpers/server.js';
import { dbOf, simulate } from '../helpers/subscriptions.js';

type Lang = PageLanguage;

describe.runIf(canRunChromium).each(DATABASES)('the hosted checkout in Chromium (%s)', (kind) => {
  const suite = serverWithBrowser(kind);
  let server: TestServer;
  beforeAll(() => {
    server = suite.server();
  });

  async function checkoutLink(user: Credentials, body: Record<string, unknown>): Promise<string> {
    const res = await server.api('POST', '/checkout-sessions/', {
      auth: user,
      body: { success_url: `${server.url}/shop/thanks`, cancel_url: `${server.url}/shop/plans`, ...body },
    });
    expect(res.status).toBe(201);
    expect(res.body.url).toMatch(new RegExp(`^${server.url}/pay/[A-Za-z0-9_-]{43}/$`));
    return res.body.url;
  }

  const browse = (lang: Lang, viewport?: { width: number; height: number }) => browseAs(suite.browser(), lang, viewport);

  async function expectAccessible(page: Page): Promise<void> {
    expect(await seriousAxeViolations(page)).toEqual([]);
  }

  async function pendingOrderOf(userId: string): Promise<string> {
    const em = dbOf(server);
    const session = await em.findOneOrFail(HostedSession, { user: userId }, { orderBy: { createdAt: 'desc' }, populate: ['subscription', 'topup'] });
    if (session.topup) return session.topup.orderId;
    const payment = await em.findOneOrFail(Payment, { subscription: session.subscription!.id }, { orderBy: { createdAt: 'desc' } });
    return payment.orderId;
  }

  /** The customer pays at the simulator; the page, which waits on its own, goes on to the shop. */
  async function settleAndExpectShop(page: Page, userId: string): Promise<void> {
    await simulate(server, await pendingOrderOf(userId), 'settle');
    await page.waitForURL(`${server.url}/shop/thanks`, { timeout: 20_000 });
  }

  async function subscriptionOf(userId: string): Promise<Subscription | null> {
    return dbOf(server).findOne(Subscription, { user: userId }, { orderBy: { createdAt: 'desc' } });
  }

  it.each<[Lang, string]>([
    ['id', 'Pembayaran'],
    ['en', 'Checkout'],
  ])('buys a plan by virtual account (%s): the page shows the number, and moves on by itself once the simulator settles it', async (lang, heading) => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-monthly' });
    const { context, page } = await browse(lang);
    try {
      const opened = await page.goto(url);
      expect(opened?.status()).toBe(200);
      expect(await page.locator('h1').textContent()).toBe(heading);
      expect(await page.locator('.amounts .total dd').textContent()).toBe('Rp 150.000');
      await expectAccessible(page);
      if (lang === 'id' && kind === 'sqlite') await screenshotForReadme(page, 'checkout');
      await page.check('#pt-bank_transfer');
      await page.selectOption('#bank', 'bni');
      await page.click('#pay');
      await page.waitForSelector('#va-number');
      const va = (await page.locator('#va-number').textContent())!.trim();
      expect(va).toMatch(/^\d{10,}$/);
      expect(await page.locator('.due').textContent()).toBe('Rp 150.000');
      expect(await page.locator('#countdown').textContent()).toMatch(/^\d/);
      await expectAccessible(page);
      if (lang === 'id' && kind === 'sqlite') await screenshotForReadme(page, 'checkout-virtual-account');
      await settleAndExpectShop(page, user.id);
      expect((await subscriptionOf(user.id))?.status).toBe('active');
    } finally {
      await context.close();
    }
  });

  it.each<Lang>(['id', 'en'])('buys a plan by QRIS on a 360 px phone (%s): the QR code is shown and the page moves on after payment', async (lang) => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'basic-monthly' });
    const { context, page } = await browse(lang, PHONE);
    try {
      await page.goto(url);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
      await page.check('#pt-qris');
      await page.click('#pay');
      await page.waitForSelector('img.qr');
      expect(await page.locator('img.qr').evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
      await expectAccessible(page);
      if (lang === 'id' && kind === 'sqlite') await screenshotForReadme(page, 'checkout-qris-phone');
      await settleAndExpectShop(page, user.id);
      expect((await subscriptionOf(user.id))?.status).toBe('active');
    } finally {
      await context.close();
    }
  });

  it.each<Lang>(['en', 'id'])('buys a plan by card through the 3-D Secure step (%s): the card goes to the gateway\'s script, never to this server', async (lang) => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-monthly' });
    const { context, page } = await browse(lang);
    const postedToUs: string[] = [];
    page.on('request', (req) => {
      if (req.method() === 'POST' && req.url().startsWith(`${server.url}/pay/`)) postedToUs.push(req.postData() ?? '');
    });
    try {
      await page.goto(url);
      await page.check('#pt-credit_card');
      await page.fill('#card-number', '4811 1111 1111 1114');
      await page.fill('#card-month', '12');
      await page.fill('#card-year', String(new Date().getUTCFullYear() + 3));
      await page.fill('#card-cvv', '123');
      await expectAccessible(page);
      await page.click('#pay');
      await page.waitForSelector('iframe.three-ds');
      await expectAccessible(page);
      const frame = page.frameLocator('iframe.three-ds');
      await frame.locator('button[value="authenticate"]').click();
      await page.waitForURL(`${server.url}/shop/thanks`, { timeout: 20_000 });
      expect((await subscriptionOf(user.id))?.status).toBe('active');
      expect(postedToUs).toHaveLength(1);
      expect(postedToUs[0]).toMatch(/token=481111-1114-/);
      expect(postedToUs[0]).not.toMatch(/4811111111111114|4811\+1111/);
    } finally {
      await context.close();
    }
  });

  it.each<Lang>(['en', 'id'])('tops up the wallet by virtual account on a phone (%s)', async (lang) => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { topup_amount: 100000 });
    const { context, page } = await browse(lang, PHONE);
    try {
      await page.goto(url);
      expect(await page.locator('.amounts .total dd').textContent()).toBe('Rp 100.000');
      await page.check('#pt-bank_transfer');
      await page.click('#pay');
      await page.waitForSelector('#va-number');
      await settleAndExpectShop(page, user.id);
      const topup = await dbOf(server).findOneOrFail(Topup, { user: user.id });
      expect(topup.status).toBe('success');
    } finally {
      await context.close();
    }
  });

  it('refuses a link opened a second time, an expired link, and a form without its CSRF token', async () => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-monthly' });
    const first = await browse('id');
    const second = await browse('en');
    try {
      expect((await first.page.goto(url))?.status()).toBe(200);
      // The same browser keeps its page (a reload); any other gets 410.
      expect((await first.page.reload())?.status()).toBe(200);
      const again = await second.page.goto(url);
      expect(again?.status()).toBe(410);
      expect(await second.page.locator('h1').textContent()).toBe('This link no longer works');
      await expectAccessible(second.page);
      if (kind === 'sqlite') await screenshotForReadme(second.page, 'link-used');

      // A form posted without the page's token (from another site, or forged) changes nothing.
      const forged = await first.page.evaluate(async (action) => {
        const res = await fetch(action, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'payment_type=bank_transfer&bank=bca' });
        return res.status;
      }, new URL(url).pathname);
      expect(forged).toBe(403);
      expect(await subscriptionOf(user.id)).toBeNull();

      const late = await checkoutLink(user, { plan_id: 'pro-monthly' });
      await dbOf(server).nativeUpdate(HostedSession, { user: user.id, openedAt: null }, { expiresAt: new Date(Date.now() - 1000) });
      expect((await second.page.goto(late))?.status()).toBe(410);
    } finally {
      await first.context.close();
      await second.context.close();
    }
  });
});
