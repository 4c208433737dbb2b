import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromotionCode } from '../../src/db/entities/coupon.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { browse, canRunChromium, fillTestCard, launchChromium, seriousAxeViolations } from '../helpers/browser.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf } from '../helpers/subscriptions.js';

/*
 * The amount on the pay button is the amount charged, as a customer meets it in Chromium: units
 * or a promotion code typed and Bayar pressed without Terapkan. Seats at Rp 40.000 before PPN:
 * three are 133.200 with PPN, seven 310.800, three with 25 % off 99.900.
 */
const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000' };
const SEATS_PPN = { slug: 'seats-ppn', name: 'Team seats', description: 'Per seat', price: 40000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, per_unit: true, tax_behavior: 'exclusive' as const, sort_order: 9 };

type Method = 'bank_transfer' | 'credit_card';
type Typed = 'seats' | 'code';

describe.runIf(canRunChromium).each(DATABASES)('the hosted checkout charges what its pay button shows, in Chromium (%s)', (kind) => {
  let server: TestServer;
  let browser: Browser;
  beforeAll(async () => {
    server = await startTestServer(kind, { env: SELLER });
    await server.seedPlans([...STANDARD_PLANS, SEATS_PPN]);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  const em = () => dbOf(server);
  const charges = () => server.running.billing.simulator!.transactions();

  async function checkoutLink(userId: { username: string; password: string }): Promise<string> {
    const res = await server.api('POST', '/checkout-sessions/', {
      auth: userId,
      body: { plan_id: 'seats-ppn', quantity: 3, success_url: `${server.url}/shop/thanks`, cancel_url: `${server.url}/shop/plans` },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.url;
  }


  async function chooseMethod(page: Page, method: Method): Promise<void> {
    if (method === 'credit_card') return fillTestCard(page);
    await page.check('#pt-bank_transfer');
    await page.selectOption('#bank', 'bni');
  }

  const payLabel = (page: Page) => page.locator('#pay').textContent();

  it.each<[Method, Typed, string]>([
    ['bank_transfer', 'seats', 'Bayar Rp\u00a0310.800'],
    ['credit_card', 'seats', 'Bayar Rp\u00a0310.800'],
    ['bank_transfer', 'code', 'Bayar Rp\u00a099.900'],
    ['credit_card', 'code', 'Bayar Rp\u00a099.900'],
  ])('%s, %s typed without Terapkan: Bayar shows the new total and charges nothing; Bayar on it charges exactly that', async (method, typed, newLabel) => {
    const code = await makePromotionCode(em(), { coupon: await makeCoupon(em(), { percentOff: '25.00', duration: 'forever' }), maxRedemptions: 1 });
    const user = await server.createUser();
    const url = await checkoutLink(user);
    const { context, page } = await browse(browser, 'id');
    try {
      await page.goto(url);
      expect(await payLabel(page)).toBe('Bayar Rp\u00a0133.200');
      if (typed === 'seats') await page.fill('#quantity', '7');
      else await page.fill('#promotion-code', code.code);
      await chooseMethod(page, method);
      const before = charges().length;

      const [answer] = await Promise.all([page.waitForResponse((res) => res.request().method() === 'POST' && res.url().startsWith(`${server.url}/pay/`)), page.click('#pay')]);
      expect(answer.status()).toBe(409);
      await page.waitForSelector('#page-notice');
      expect(await page.locator('#page-notice').textContent()).toContain(newLabel.replace('Bayar ', 'totalnya '));
      expect(await payLabel(page)).toBe(newLabel);
      expect(await page.locator('.amounts .total dd').textContent()).toBe(newLabel.replace('Bayar ', ''));
      expect(await page.locator(`#pt-${method}`).isChecked()).toBe(true);
      expect(await seriousAxeViolations(page)).toEqual([]);
      // Nothing at the gateway, nothing subscribed, the code not counted.
      expect(charges().length).toBe(before);
      expect(await em().count(Subscription, { user: user.id })).toBe(0);
      expect((await em().findOneOrFail(PromotionCode, code.id, { refresh: true })).timesRedeemed).toBe(0);

      // The customer has seen the new total and presses Bayar on it.
      if (method === 'credit_card') {
        await fillTestCard(page);
        await page.click('#pay');
        await page.waitForSelector('iframe.three-ds');
        await page.frameLocator('iframe.three-ds').locator('button[value="authenticate"]').click();
        await page.waitForURL(`${server.url}/shop/thanks`, { timeout: 20_000 });
      } else {
        await page.click('#pay');
        await page.waitForSelector('#va-number');
        expect(await page.locator('.due').textContent()).toBe(newLabel.replace('Bayar ', ''));
      }
      const shown = Number(newLabel.replace(/\D/g, ''));
      const payment = await em().findOneOrFail(Payment, { user: user.id });
      expect(Number(payment.grossAmount)).toBe(shown);
      expect(charges().filter((c) => c.order_id === payment.orderId).map((c) => c.gross_amount)).toEqual([shown]);
      const sub = await em().findOneOrFail(Subscription, { user: user.id });
      expect(sub.quantity).toBe(typed === 'seats' ? 7 : 3);
      expect((await em().findOneOrFail(PromotionCode, code.id, { refresh: true })).timesRedeemed).toBe(typed === 'code' ? 1 : 0);
    } finally {
      await context.close();
    }
  });
});
