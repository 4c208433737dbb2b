import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { HostedSession } from '../../src/db/entities/hosted-session.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { Topup } from '../../src/db/entities/topup.js';
import { browse as browseAs, canRunChromium, fillTestCard, PHONE, screenshotForReadme, serverWithBrowser, seriousAxeViolations, type PageLanguage } from '../helpers/browser.js';
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
      expect(await page.locator('.amounts .total dd').textContent()).toBe('Rp\u00a0150.000');
      await expectAccessible(page);
      if (lang === 'id' && kind === 'sqlite') await screenshotForReadme(page, 'checkout');
      await page.check('#pt-bank_transfer');
      await page.selectOption('#bank', 'bni');
      await page.click('#pay');
      await page.waitForSelector('#va-number');
      const va = (await page.locator('#va-number').textContent())!.trim();
      expect(va).toMatch(/^\d{10,}$/);
      expect(await page.locator('.due').textContent()).toBe('Rp\u00a0150.000');
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


  /** What the page says a trial's first charge is: the trial's end date, as the page writes it. */
  const trialEndText = (lang: Lang, days: number): string => pageFormat(lang, server.config.documents.timeZone).date(new Date(Date.now() + days * 86_400_000));

  it.each<[Lang, RegExp, RegExp]>([
    ['id', /^Rp\s0 hari ini/, /Tagihan pertama sebesar Rp\s150\.000 jatuh pada (.+), saat masa uji coba berakhir/],
    ['en', /^Rp\s0 today/, /The first charge, Rp\s150\.000, is on (.+), when the free trial ends/],
  ])('starts a trial with a card through 3-D Secure (%s): Rp 0 today and the first charge said up front, the bank\'s check in the frame, then on to the shop', async (lang, today, firstCharge) => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-trial' });
    const { context, page } = await browse(lang);
    try {
      await page.goto(url);
      expect(await page.locator('.amounts .total dd').textContent()).toBe('Rp\u00a00');
      const terms = await page.locator('.trial-terms').allTextContents();
      expect(terms[0]).toMatch(today);
      const date = firstCharge.exec(terms[1] ?? '')?.[1];
      expect(date).toBe(trialEndText(lang, 14));
      await fillTestCard(page);
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
      await fillTestCard(page);
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
      await fillTestCard(page);
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
      await fillTestCard(page);
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
      await fillTestCard(page);
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
      expect(await page.locator('.amounts .total dd').textContent()).toBe('Rp\u00a0100.000');
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


  /** The page's script is the subject here: how it shows each way to pay, holds its button, and follows its charge. */
  const chargesAtGateway = () => server.running.billing.simulator!.transactions().length;

  /** Opens `url` in a new customer's browser of `lang` and `viewport`. */
  async function opened(url: string, lang: Lang, viewport?: { width: number; height: number }) {
    const b = await browse(lang, viewport);
    expect((await b.page.goto(url))?.status()).toBe(200);
    return b;
  }

  const fitsPhone = async (page: Page) => expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);

  it.each<Lang>(['id', 'en'])('pays by Mandiri bill key (%s): the biller code and bill key, copyable, at 360 px and on a desktop', async (lang) => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-monthly' });
    const desktop = await opened(url, lang);
    const phone = await opened(url, lang, PHONE);
    await desktop.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    try {
      await desktop.page.check('#pt-echannel');
      await desktop.page.click('#pay');
      await desktop.page.waitForSelector('#bill-key');
      expect(await desktop.page.locator('#biller-code').textContent()).toMatch(/^\d+$/);
      expect((await desktop.page.locator('#bill-key').textContent())!.trim()).toMatch(/^\d{6,}$/);
      await desktop.page.click('button[data-copy="bill-key"]');
      await expect.poll(() => desktop.page.locator('button[data-copy="bill-key"]').textContent()).toBe(lang === 'id' ? 'Tersalin' : 'Copied');
      expect(await desktop.page.evaluate(() => navigator.clipboard.readText())).toBe((await desktop.page.locator('#bill-key').textContent())!.trim());
      await expectAccessible(desktop.page);
      if (lang === 'id' && kind === 'sqlite') await screenshotForReadme(desktop.page, 'checkout-mandiri-bill-key');
      // The same link on the phone shows the same bill key.
      await phone.page.reload();
      expect(await phone.page.locator('#bill-key').textContent()).toBe(await desktop.page.locator('#bill-key').textContent());
      await fitsPhone(phone.page);
      await expectAccessible(phone.page);
      await settleAndExpectShop(phone.page, user.id);
      await desktop.page.waitForURL(`${server.url}/shop/thanks`, { timeout: 20_000 });
    } finally {
      await desktop.context.close();
      await phone.context.close();
    }
  });

  it.each<Lang>(['en', 'id'])('pays by GoPay (%s): a desktop shows the QR code and no app button; the same link on a 360 px phone opens the app', async (lang) => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'basic-monthly' });
    const desktop = await opened(url, lang);
    const phone = await opened(url, lang, PHONE);
    try {
      await desktop.page.check('#pt-gopay');
      await desktop.page.click('#pay');
      await desktop.page.waitForSelector('img.qr');
      expect(await desktop.page.locator('img.qr').evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
      expect(await desktop.page.locator('.phone-only a.button').isVisible()).toBe(false);
      await expectAccessible(desktop.page);
      await phone.page.reload();
      const app = phone.page.locator('.phone-only a.button');
      expect(await app.isVisible()).toBe(true);
      expect(await app.textContent()).toBe(lang === 'id' ? 'Buka aplikasi GoPay' : 'Open the GoPay app');
      await fitsPhone(phone.page);
      await expectAccessible(phone.page);
      await settleAndExpectShop(phone.page, user.id);
    } finally {
      await desktop.context.close();
      await phone.context.close();
    }
  });

  it.each<Lang>(['id', 'en'])('ShopeePay on a desktop (%s): the page says to pay from the phone and gives its address, the phone gets the app button, and the desktop may choose QRIS instead (the ShopeePay order canceled first)', async (lang) => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-monthly' });
    const desktop = await opened(url, lang);
    const phone = await opened(url, lang, PHONE);
    try {
      await desktop.page.check('#pt-shopeepay');
      await desktop.page.click('#pay');
      await desktop.page.waitForSelector('#shopeepay-desktop');
      expect(await desktop.page.locator('#shopeepay-desktop').isVisible()).toBe(true);
      expect(await desktop.page.locator('#page-link').inputValue()).toBe(url);
      expect(await desktop.page.locator('.phone-only a.button').isVisible()).toBe(false);
      await expectAccessible(desktop.page);
      if (lang === 'id' && kind === 'sqlite') await screenshotForReadme(desktop.page, 'checkout-shopeepay-desktop');
      await phone.page.reload();
      expect(await phone.page.locator('.phone-only a.button').isVisible()).toBe(true);
      expect(await phone.page.locator('#shopeepay-desktop').isVisible()).toBe(false);
      await fitsPhone(phone.page);
      await expectAccessible(phone.page);

      const shopeepay = await pendingOrderOf(user.id);
      await desktop.page.click('#switch summary');
      expect(await desktop.page.locator('#switch summary').textContent()).toBe(lang === 'id' ? 'Pilih metode lain' : 'Choose another method');
      await expectAccessible(desktop.page);
      await desktop.page.check('#pt-qris');
      await desktop.page.click('#pay');
      await desktop.page.waitForSelector('img.qr');
      expect(server.running.billing.simulator!.transaction(shopeepay)?.transaction_status).toBe('cancel');
      expect(await pendingOrderOf(user.id)).not.toBe(shopeepay);
      if (lang === 'id' && kind === 'sqlite') await screenshotForReadme(desktop.page, 'checkout-switched-to-qris');
      // The phone, still on the ShopeePay page, follows to the new charge by itself.
      await phone.page.waitForSelector('img.qr', { timeout: 20_000 });
      await settleAndExpectShop(desktop.page, user.id);
      expect(await dbOf(server).count(Subscription, { user: user.id })).toBe(1);
    } finally {
      await desktop.context.close();
      await phone.context.close();
    }
  });

  it('the pay button holds once pressed (id): "Memproses…", a second press or submit sends nothing, one charge', async () => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-monthly' });
    const { context, page } = await opened(url, 'id');
    try {
      const before = chargesAtGateway();
      // What each submit of the form would send, seen after the page's own script (which holds the
      // button and stops a second submit); the test stops them all, to look at the page between presses.
      await page.evaluate(() => {
        const seen: { sent: boolean; disabled: boolean; text: string | null }[] = [];
        (window as unknown as { seen: typeof seen }).seen = seen;
        document.getElementById('checkout-form')!.addEventListener('submit', (event) => {
          const pay = document.getElementById('pay') as HTMLButtonElement;
          seen.push({ sent: !event.defaultPrevented, disabled: pay.disabled, text: pay.textContent });
          event.preventDefault();
        });
      });
      await page.check('#pt-bank_transfer');
      await page.click('#pay');
      await page.click('#pay', { force: true });
      await page.evaluate(() => (document.getElementById('checkout-form') as HTMLFormElement).requestSubmit());
      const seen = await page.evaluate(() => (window as unknown as { seen: unknown[] }).seen);
      expect(seen).toEqual([{ sent: true, disabled: true, text: 'Memproses…' }, { sent: false, disabled: true, text: 'Memproses…' }]);
      expect(await page.locator('#pay').getAttribute('aria-busy')).toBe('true');
      // The one submit goes through.
      await page.evaluate(() => (document.getElementById('checkout-form') as HTMLFormElement).submit());
      await page.waitForSelector('#va-number');
      expect(chargesAtGateway() - before).toBe(1);
    } finally {
      await context.close();
    }
  });

  it('a double click on the card\'s pay button (en) tokenises once and posts once: one charge, one 3-D Secure page', async () => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-monthly' });
    const { context, page } = await opened(url, 'en');
    const posts: string[] = [];
    page.on('request', (req) => {
      if (req.method() === 'POST' && req.url().startsWith(`${server.url}/pay/`)) posts.push(req.postData() ?? '');
    });
    try {
      const before = chargesAtGateway();
      await fillTestCard(page);
      await page.dblclick('#pay');
      await page.waitForSelector('iframe.three-ds');
      expect(posts).toHaveLength(1);
      expect(chargesAtGateway() - before).toBe(1);
    } finally {
      await context.close();
    }
  });

  it('a lost notification (en): the payment settles at the gateway unheard, and the waiting page still moves on to the shop', async () => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'basic-monthly' });
    const { context, page } = await opened(url, 'en');
    try {
      await page.check('#pt-qris');
      await page.click('#pay');
      await page.waitForSelector('img.qr');
      await simulate(server, await pendingOrderOf(user.id), 'settle?notify=false');
      await page.waitForURL(`${server.url}/shop/thanks`, { timeout: 20_000 });
      expect((await subscriptionOf(user.id))?.status).toBe('active');
    } finally {
      await context.close();
    }
  });

  it('the waiting page\'s poll (id): network errors back off and say so; a link gone (410) says it expired and leads back to the shop', async () => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-monthly' });
    const { context, page } = await opened(url, 'id');
    try {
      await page.check('#pt-bank_transfer');
      await page.click('#pay');
      await page.waitForSelector('#va-number');
      const polls: number[] = [];
      await page.route(/\/status(\?|$)/, (route) => {
        polls.push(Date.now());
        return route.abort('internetdisconnected');
      });
      await page.waitForSelector('#poll-trouble:not([hidden])', { timeout: 20_000 });
      expect(await page.locator('#poll-trouble').textContent()).toBe('Koneksi terputus; mencoba lagi…');
      // Backing off: the second wait is longer than the first.
      expect(polls.length).toBeGreaterThanOrEqual(2);
      await page.unroute(/\/status(\?|$)/);
      await page.route(/\/status(\?|$)/, (route) => route.fulfill({ status: 410, contentType: 'text/html', body: 'gone' }));
      await page.waitForSelector('#link-gone:not([hidden])', { timeout: 30_000 });
      expect(await page.locator('#link-gone').textContent()).toContain('Tautan pembayaran ini sudah tidak berlaku');
      expect(await page.locator('#link-gone a').getAttribute('href')).toBe(`${server.url}/shop/plans`);
      expect(await page.locator('#payment').isVisible()).toBe(false);
      await expectAccessible(page);
      if (kind === 'sqlite') await screenshotForReadme(page, 'checkout-link-gone-while-waiting');
    } finally {
      await context.close();
    }
  });

  it('a card declined after 3-D Secure (en): the page comes back to the form by itself and says so next to the card', async () => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-monthly' });
    const { context, page } = await opened(url, 'en');
    try {
      await fillTestCard(page);
      await page.click('#pay');
      await page.waitForSelector('iframe.three-ds');
      await page.frameLocator('iframe.three-ds').locator('button[value="fail"]').click();
      await page.waitForSelector('#card-error:not([hidden])', { timeout: 20_000 });
      expect(await page.locator('#card-error').textContent()).toContain('3-D Secure check did not succeed');
      expect(await page.locator('#pt-credit_card').isChecked()).toBe(true);
      await expectAccessible(page);
    } finally {
      await context.close();
    }
  });

  it('a 5xx after the gateway took the charge (id): the page says it is checking, offers no second charge, and shows the VA by itself', async () => {
    const user = await server.createUser();
    const url = await checkoutLink(user, { plan_id: 'pro-monthly' });
    const { context, page } = await opened(url, 'id');
    try {
      const before = chargesAtGateway();
      await server.request('POST', '/_simulator/faults', { body: { mode: 'http_500', when: 'after', operations: ['charge'], count: 1 } });
      await page.check('#pt-bank_transfer');
      await page.click('#pay');
      await page.waitForSelector('#payment[data-state="confirming"]');
      expect(await page.locator('#payment').textContent()).toContain('jangan membayar dua kali');
      await expectAccessible(page);
      if (kind === 'sqlite') await screenshotForReadme(page, 'checkout-confirming');
      await page.waitForSelector('#va-number', { timeout: 20_000 });
      expect(chargesAtGateway() - before).toBe(1);
      await settleAndExpectShop(page, user.id);
    } finally {
      await server.request('POST', '/_simulator/faults', { body: { mode: 'none' } });
      await context.close();
    }
  });
});
