import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { HostedSession } from '../../src/db/entities/hosted-session.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { Topup } from '../../src/db/entities/topup.js';
import { browse as browseAs, canRunChromium, PHONE, screenshotForReadme, serverWithBrowser, seriousAxeViolations, type PageLanguage } from '../helpers/browser.js';
import { pageFormat } from '../../src/http/hosted/language.js';
import { DATABASES } from '../helpers/database.js';
import type { Credentials, TestServer } from '../helpers/server.js';
import { dbOf, simulate } from '../helpers/subscriptions.js';
import { completeThreeDs } from '../helpers/three-ds.js';

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

  /** The card form filled with a good test card (4811 1111 1111 1114: 3-D Secure asked, then approved). */
  async function fillCard(page: Page): Promise<void> {
    await page.check('#pt-credit_card');
    await page.fill('#card-number', '4811 1111 1111 1114');
    await page.fill('#card-month', '12');
    await page.fill('#card-year', String(new Date().getUTCFullYear() + 3));
    await page.fill('#card-cvv', '123');
  }

  /** What the page says a trial's first charge is: the trial's end date, as the page writes it. */
  const trialEndText = (lang: Lang, days: number): string => pageFormat(lang, server.config.documents.timeZone).date(new Date(Date.now() + days * 86_400_000));

  it.each<[Lang, RegExp, RegExp]>([
    ['id', /^Rp 0 hari ini/, /Tagihan pertama sebesar Rp 150\.000 jatuh pada (.+), saat masa uji coba berakhir/],
    ['en', /^Rp 0 today/, /The first charge, Rp 150\.000, is on (.+), when the free trial ends/],
  ])('starts a trial with a card through 3-D Secure (%s): Rp 0 today and the first charge said up front, the bank\'s check in the frame, then on to the shop', async (lang, today, firstCharge) => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-trial' });
    const { context, page } = await browse(lang);
    try {
      await page.goto(url);
      expect(await page.locator('.amounts .total dd').textContent()).toBe('Rp 0');
      const terms = await page.locator('.trial-terms').allTextContents();
      expect(terms[0]).toMatch(today);
      const date = firstCharge.exec(terms[1] ?? '')?.[1];
      expect(date).toBe(trialEndText(lang, 14));
      await fillCard(page);
      await expectAccessible(page);
      await page.click('#pay');
      await page.waitForSelector('iframe.three-ds');
      // The card is pre-authorised, not charged: the subscription waits, with no payment at all.
      expect((await subscriptionOf(user.id))?.status).toBe('pending');
      expect(await dbOf(server).count(Payment, { user: user.id })).toBe(0);
      await expectAccessible(page);
      if (lang === 'id' && kind === 'sqlite') await screenshotForReadme(page, 'checkout-trial-card-3ds');
      await page.frameLocator('iframe.three-ds').locator('button[value="authenticate"]').click();
      await page.waitForURL(`${server.url}/shop/thanks`, { timeout: 20_000 });
      const sub = await subscriptionOf(user.id);
      expect(sub?.status).toBe('trialing');
      expect(sub?.cardToken).toEqual(expect.any(String));
      expect(await dbOf(server).count(Payment, { user: user.id })).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('a trial card\'s page reloaded while the bank\'s check waits: the waiting note and the card form, and the page still moves on once the bank says yes', async () => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-trial' });
    const { context, page } = await browse('en');
    try {
      await page.goto(url);
      await fillCard(page);
      await page.click('#pay');
      const frameUrl = await page.locator('iframe.three-ds').getAttribute('src');
      await page.goto(url);
      expect(await page.locator('#payment[data-state="card_check"]').textContent()).toContain('Waiting for your bank to check the card');
      expect(await page.locator('#checkout-form').isVisible()).toBe(true);
      await expectAccessible(page);
      // The customer finishes the bank's check elsewhere (its page was left open in another tab).
      await completeThreeDs(frameUrl!);
      await page.waitForURL(`${server.url}/shop/thanks`, { timeout: 20_000 });
      expect((await subscriptionOf(user.id))?.status).toBe('trialing');
    } finally {
      await context.close();
    }
  });

  it.each<Lang>(['en', 'id'])('a trial card that fails 3-D Secure, then one the bank declines, says why next to the form; another card then starts the trial (%s)', async (lang) => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-trial' });
    const { context, page } = await browse(lang);
    const declined = lang === 'en' ? 'The card was declined' : 'Kartu ditolak';
    try {
      await page.goto(url);
      // 1. 3-D Secure failed at the bank: the page, which polls, comes back to the form and says so.
      await fillCard(page);
      await page.click('#pay');
      await page.waitForSelector('iframe.three-ds');
      await page.frameLocator('iframe.three-ds').locator('button[value="fail"]').click();
      await page.waitForSelector('#card-error:not([hidden])', { timeout: 20_000 });
      expect(await page.locator('#card-error').textContent()).toContain(lang === 'en' ? '3-D Secure check did not succeed' : 'verifikasi 3-D Secure dari bank tidak berhasil');
      expect(await page.locator('#pt-credit_card').isChecked()).toBe(true);
      expect(await page.locator('#failed').count()).toBe(0);
      expect((await subscriptionOf(user.id))?.cancelReason).toBe('card_declined');
      await expectAccessible(page);

      // 2. The bank declines the card at once (the gateway's 422 card_declined): the page says the
      // bank's words next to the card form, with the same form to try again, never a 500.
      await page.route(/\/_simulator\/v2\/token\?/, (route) =>
        route.fulfill({ json: { status_code: '200', status_message: 'Credit card token is created as Token ID.', token_id: `sim-card-deny-${Date.now()}`, redirect_url: null } }));
      await fillCard(page);
      const [answer] = await Promise.all([page.waitForResponse((res) => res.request().method() === 'POST' && res.url().startsWith(`${server.url}/pay/`)), page.click('#pay')]);
      expect(answer.status()).toBe(422);
      await page.waitForSelector('#card-error:not([hidden])');
      const message = await page.locator('#card-error').textContent();
      expect(message).toContain(declined);
      expect(message).toContain('Do not honor');
      await expectAccessible(page);
      if (lang === 'id' && kind === 'sqlite') await screenshotForReadme(page, 'checkout-trial-card-declined');
      await page.unroute(/\/_simulator\/v2\/token\?/);

      // 3. Another card: the trial starts (it was never spent by the refused cards).
      await fillCard(page);
      await page.click('#pay');
      await page.waitForSelector('iframe.three-ds');
      await page.frameLocator('iframe.three-ds').locator('button[value="authenticate"]').click();
      await page.waitForURL(`${server.url}/shop/thanks`, { timeout: 20_000 });
      expect((await subscriptionOf(user.id))?.status).toBe('trialing');
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
});
