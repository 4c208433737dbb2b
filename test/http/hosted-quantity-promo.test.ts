import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromotionCode } from '../../src/db/entities/coupon.js';
import { CreditNote } from '../../src/db/entities/credit-note.js';
import { HostedSession } from '../../src/db/entities/hosted-session.js';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { ManualClock } from '../../src/domain/clock.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type HttpResult, type TestServer } from '../helpers/server.js';
import { dbOf, fundWallet, walletBalance, type TestUser } from '../helpers/subscriptions.js';

const SHOP = 'https://shop.example.com';
const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000', HOSTED_RETURN_ORIGINS: SHOP };
const DAY = 24 * 60 * 60 * 1000;
// April has 30 days: fifteen days in, half of the period is left.
const START = new Date('2026-04-01T00:00:00Z');

/*
 * Seats and promotion codes on the hosted pages, over HTTP as a browser sends its forms.
 * Seats at Rp 40.000 each (no PPN), and a PPN-exclusive seat plan at Rp 40.000 before PPN:
 * five of those with 25% off are 200.000 − 50.000 = 150.000, PPN 11% of it in effect 16.500,
 * 166.500 in all.
 */
const SEATS = { slug: 'seats', name: 'Team seats', description: 'Per seat', price: 40000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, per_unit: true, sort_order: 8 };
const SEATS_PPN = { ...SEATS, slug: 'seats-ppn', name: 'Team seats (PPN)', tax_behavior: 'exclusive' as const, sort_order: 9 };

const nbsp = (text: string) => text.replace(/\u00a0/g, ' ').replace(/\s+/g, ' ');

describe.each(DATABASES)('hosted checkout and portal: seats and promotion codes (%s)', (kind) => {
  let server: TestServer;
  const clock = new ManualClock(START);

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: SELLER });
    await server.seedPlans([...STANDARD_PLANS, SEATS, SEATS_PPN]);
  });
  afterAll(() => server?.stop());

  const em = () => dbOf(server);
  const api = (user: TestUser, body: Record<string, unknown>) =>
    server.api('POST', '/checkout-sessions/', { auth: user, body: { success_url: `${SHOP}/thanks`, cancel_url: `${SHOP}/shop`, ...body } });

  /** A checkout link opened as a browser opens it: its cookies and the form's CSRF token kept. */
  async function openCheckout(body: Record<string, unknown>, user?: TestUser) {
    const owner = user ?? (await server.createUser());
    const made = await api(owner, body);
    expect(made.status, made.text).toBe(201);
    const path = new URL(made.body.url).pathname;
    const first = await server.request('GET', path);
    expect(first.status).toBe(200);
    const cookie = first.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(first.text)![1]!;
    const post = (fields: Record<string, string>, lang?: 'en') =>
      server.request('POST', `${path}${lang ? '?lang=en' : ''}`, { headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, rawBody: new URLSearchParams({ csrf_token: csrf, ...fields }).toString() });
    const get = (lang?: 'en') => server.request('GET', `${path}${lang ? '?lang=en' : ''}`, { headers: { cookie } });
    const session = () => em().findOneOrFail(HostedSession, made.body.id);
    return { user: owner, path, post, get, session, first };
  }

  const promo = async (overrides: Partial<PromotionCode> = {}, percentOff = '25.00') =>
    makePromotionCode(em(), { coupon: await makeCoupon(em(), { percentOff, duration: 'forever' }), ...overrides });

  describe('POST /checkout-sessions/ with quantity and promotion_code', () => {
    it('keeps the units and the code (as the coupon wrote it) on the session; nothing is counted yet', async () => {
      const code = await promo({ code: 'Launch25' });
      const user = await server.createUser();
      const res = await api(user, { plan_id: 'seats', quantity: 5, promotion_code: 'launch25' });
      expect(res.status, res.text).toBe(201);
      const session = await em().findOneOrFail(HostedSession, res.body.id);
      expect(session).toMatchObject({ quantity: 5, promotionCode: 'Launch25' });
      expect((await em().findOneOrFail(PromotionCode, code.id)).timesRedeemed).toBe(0);
    });

    it('refuses units for a plan not priced per unit or out of range (400), and a code that cannot be redeemed (422 with its reason)', async () => {
      const user = await server.createUser();
      const notPerUnit = await api(user, { plan_id: 'basic-monthly', quantity: 3 });
      expect(notPerUnit.status).toBe(400);
      expect(notPerUnit.body.errors).toEqual([expect.objectContaining({ field: 'quantity' })]);
      expect((await api(user, { plan_id: 'seats', quantity: 0 })).status).toBe(400);
      expect((await api(user, { plan_id: 'seats', quantity: 10001 })).status).toBe(400);
      expect((await api(user, { topup_amount: 100000, quantity: 2 })).status).toBe(400);
      expect((await api(user, { topup_amount: 100000, promotion_code: 'X' })).status).toBe(400);
      const unknown = await api(user, { plan_id: 'seats', quantity: 2, promotion_code: 'NO-SUCH-CODE' });
      expect(unknown.status).toBe(422);
      expect(unknown.body).toMatchObject({ code: 'promotion_code_invalid', reason: 'unknown' });
      const spent = await promo({ maxRedemptions: 1, timesRedeemed: 1 });
      expect((await api(user, { plan_id: 'seats', promotion_code: spent.code })).body).toMatchObject({ code: 'promotion_code_invalid', reason: 'exhausted' });
      expect(await em().count(HostedSession, { user: user.id })).toBe(0);
    });
  });

  describe('the checkout page', () => {
    it('shows units × unit price; a code from the API shows the discount line, PPN on the discounted price and the discounted total', async () => {
      const code = await promo();
      const { first } = await openCheckout({ plan_id: 'seats-ppn', quantity: 5, promotion_code: code.code });
      const page = nbsp(first.text);
      expect(page).toContain('5 × Rp 40.000');
      expect(page).toContain('Rp 200.000');
      expect(page).toContain(`Diskon (${code.code})`);
      expect(page).toContain('−Rp 50.000');
      expect(page).toContain('Rp 16.500');
      expect(page).toContain('Bayar Rp 166.500');
      expect(page).toMatch(/name="quantity" id="quantity"[^>]*value="5"/);
      expect(page).toContain(`value="${code.code}"`);
    });

    it('an invalid code is refused next to its field in Bahasa Indonesia and in English, the values kept, nothing charged', async () => {
      const { user, post } = await openCheckout({ plan_id: 'seats', quantity: 4 });
      const charges = server.running.billing.simulator!.transactions().length;
      const id = await post({ payment_type: 'bank_transfer', bank: 'bca', quantity: '6', promotion_code: 'NOPE-123' });
      expect(id.status).toBe(422);
      const idText = nbsp(id.text);
      expect(idText).toMatch(/id="promotion-code-error">Kode promo ini tidak ada\. Periksa penulisannya\.</);
      expect(idText).toContain('value="NOPE-123"');
      expect(idText).toMatch(/name="quantity" id="quantity"[^>]*value="6"/);
      // Priced with the units typed, without the code.
      expect(idText).toContain('6 × Rp 40.000');
      expect(idText).toContain('Bayar Rp 240.000');

      const expired = await promo({ expiresAt: new Date(START.getTime() - DAY) });
      const gone = await post({ payment_type: 'qris', quantity: '6', promotion_code: expired.code });
      expect(nbsp(gone.text)).toContain('Kode promo ini sudah kedaluwarsa.');
      const badUnits = await post({ payment_type: 'qris', quantity: '0', promotion_code: '' });
      expect(badUnits.status).toBe(422);
      expect(nbsp(badUnits.text)).toMatch(/id="quantity-error">Isi bilangan bulat dari 1 sampai 10000\.</);

      // (The page keeps the language chosen: English from here on.)
      const en = await post({ payment_type: 'bank_transfer', bank: 'bca', quantity: '6', promotion_code: 'NOPE-123' }, 'en');
      expect(en.status).toBe(422);
      expect(nbsp(en.text)).toMatch(/id="promotion-code-error">There is no such promotion code\. Check the spelling\.</);
      expect(nbsp(en.text)).toContain('Pay Rp 240.000');

      expect(await em().count(Subscription, { user: user.id })).toBe(0);
      expect(server.running.billing.simulator!.transactions().length).toBe(charges);
    });

    it('Apply prices a valid code and new units without charging; paying then buys them and counts the code once', async () => {
      const code = await promo();
      const { user, post, get, session } = await openCheckout({ plan_id: 'seats-ppn', quantity: 2 });
      const applied = await post({ apply: '1', quantity: '5', promotion_code: code.code.toLowerCase() });
      expect(applied.status).toBe(200);
      const text = nbsp(applied.text);
      expect(text).toContain(`Kode ${code.code} dipakai.`);
      expect(text).toContain('−Rp 50.000');
      expect(text).toContain('Bayar Rp 166.500');
      expect(await session()).toMatchObject({ quantity: 5, promotionCode: code.code });
      expect(await em().count(Subscription, { user: user.id })).toBe(0);
      // A reload shows the same terms.
      expect(nbsp((await get()).text)).toContain('Bayar Rp 166.500');

      expect((await post({ payment_type: 'bank_transfer', bank: 'bca', quantity: '5', promotion_code: code.code })).status).toBe(303);
      const sub = await em().findOneOrFail(Subscription, { user: user.id });
      expect(sub.quantity).toBe(5);
      expect(sub.discount).toMatchObject({ promotion_code: code.code, percent_off: '25.00' });
      const invoice = await em().findOneOrFail(Invoice, { subscription: sub.id });
      expect(invoice).toMatchObject({ subtotal: '200000.00', discountAmount: '50000.00', taxAmount: '16500.00', totalAmount: '166500.00' });
      expect((await em().findOneOrFail(PromotionCode, code.id)).timesRedeemed).toBe(1);
    });

    it('5 submits at once with a code of one use make one subscription and count the code once', async () => {
      const code = await promo({ maxRedemptions: 1 });
      const { user, post } = await openCheckout({ plan_id: 'seats', quantity: 3 });
      // Applied first: a code typed and not applied is priced and shown, never charged (hosted-priced-terms.test.ts).
      expect((await post({ apply: '1', quantity: '3', promotion_code: code.code })).status).toBe(200);
      const answers = await Promise.all(Array.from({ length: 5 }, () => post({ payment_type: 'bank_transfer', bank: 'bca', quantity: '3', promotion_code: code.code })));
      expect(answers.map((a) => a.status)).toEqual(Array(5).fill(303));
      expect(await em().count(Subscription, { user: user.id })).toBe(1);
      expect(await em().count(Payment, { user: user.id })).toBe(1);
      const payment = await em().findOneOrFail(Payment, { user: user.id });
      expect(payment.grossAmount).toBe('90000.00');
      expect((await em().findOneOrFail(PromotionCode, code.id)).timesRedeemed).toBe(1);
    });
  });

  describe('the portal', () => {
    /** A browser on one portal link: the landing page, its claim, then its forms with its cookie and CSRF token. */
    async function openPortal(user: TestUser, lang: 'en' | null = null) {
      const made = await server.api('POST', '/portal-sessions/', { auth: user, body: { return_url: `${SHOP}/account` } });
      expect(made.status).toBe(201);
      const path = new URL(made.body.url).pathname;
      const query = lang ? `?lang=${lang}` : '';
      let cookie: string | null = null;
      let csrf: string | null = null;
      const keep = (res: HttpResult) => {
        const set = res.headers.get('set-cookie');
        if (set) cookie = set.split(';')[0]!;
        const token = /name="csrf_token" value="([^"]+)"/.exec(res.text)?.[1];
        if (token) csrf = token;
        return res;
      };
      const headers = (): Record<string, string> => (cookie ? { cookie } : {});
      const portal = {
        get: async (params = '') => keep(await server.request('GET', `${path}${query}${query && params ? '&' : params ? '?' : ''}${params}`, { headers: headers() })),
        post: async (action: string, fields: Record<string, string>, token?: string) =>
          keep(await server.request('POST', `${path}${action}${query}`, {
            headers: { ...headers(), 'content-type': 'application/x-www-form-urlencoded' },
            rawBody: new URLSearchParams({ csrf_token: token ?? csrf ?? '', ...fields }).toString(),
          })),
      };
      await portal.get();
      expect((await portal.post('', {})).status).toBe(303);
      return portal;
    }

    /** Five seats paid from the wallet at START, `extra` left in it. */
    async function fiveSeats(extra: string, body: Record<string, unknown> = {}) {
      clock.set(START);
      const user = await server.createUser();
      await fundWallet(server, user, (200000 + Number(extra)).toFixed(2));
      const res = await server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'seats', payment_type: 'wallet', quantity: 5, ...body } });
      expect(res.status, res.text).toBe(201);
      return { user, id: res.body.subscription.id as string };
    }

    it('shows the units and the discount; more units preview the prorated amount and are charged as the API charges them', async () => {
      const code = await promo({}, '50.00');
      const { user, id } = await fiveSeats('60000', { promotion_code: code.code });
      clock.set(new Date(START.getTime() + 15 * DAY));
      const portal = await openPortal(user);
      const page = nbsp((await portal.get()).text);
      expect(page).toMatch(/id="sub-quantity">5 × Rp 40\.000</);
      expect(page).toMatch(new RegExp(`id="sub-discount">${code.code}: potongan 50%<`));

      // Three more at mid-period: 3 × 20.000 = 60.000, half off: 30.000.
      const preview = nbsp((await portal.get('quantity=8')).text);
      expect(preview).toMatch(/id="quantity-due">8 unit mulai sekarang: Rp 30\.000 dibayar sekarang/);
      expect(preview).toContain('name="shown" value="30000.00"');

      // Without the CSRF token nothing changes.
      expect((await portal.post('change-quantity', { quantity: '8', shown: '30000.00' }, 'forged')).status).toBe(403);
      const done = await portal.post('change-quantity', { quantity: '8', shown: '30000.00' });
      expect(done.status).toBe(303);
      expect(done.headers.get('location')).toContain('done=quantity');
      expect((await em().findOneOrFail(Subscription, id)).quantity).toBe(8);
      // 260.000 funded, 100.000 for the five seats at half price, 30.000 for three more.
      expect(await walletBalance(server, user)).toBe('130000.00');
      expect(nbsp((await portal.get('done=quantity')).text)).toContain('Jumlah unit sudah berubah.');
    });

    it('a price moved since the preview charges nothing and shows the new one', async () => {
      const { user, id } = await fiveSeats('100000');
      clock.set(new Date(START.getTime() + 15 * DAY));
      const portal = await openPortal(user, 'en');
      const moved = await portal.post('change-quantity', { quantity: '8', shown: '59000.00' });
      expect(moved.status).toBe(409);
      expect(nbsp(moved.text)).toContain('The price of this change has moved since you saw it');
      expect(nbsp(moved.text)).toMatch(/id="quantity-due">8 units from now: Rp 60\.000 to pay now/);
      expect((await em().findOneOrFail(Subscription, id)).quantity).toBe(5);
      expect(await walletBalance(server, user)).toBe('100000.00');
    });

    it('fewer units: at the next bill, or now with the unused share credited to the wallet with a credit note', async () => {
      const { user, id } = await fiveSeats('0');
      clock.set(new Date(START.getTime() + 15 * DAY));
      const portal = await openPortal(user);
      const preview = nbsp((await portal.get('quantity=3')).text);
      // 2 of 5 seats of the 100.000 still unused: 40.000.
      expect(preview).toMatch(/id="quantity-credit">3 unit: mulai tagihan berikutnya \(1 Mei 2026\), atau sekarang dengan Rp 40\.000/);

      expect((await portal.post('change-quantity', { quantity: '3', when: 'period_end' })).headers.get('location')).toContain('done=quantity-scheduled');
      expect((await em().findOneOrFail(Subscription, id))).toMatchObject({ quantity: 5, pendingQuantity: 3 });
      expect(nbsp((await portal.get()).text)).toMatch(/id="pending-quantity">Mulai 1 Mei 2026: 3 unit\./);

      const now = await portal.post('change-quantity', { quantity: '3', when: 'now', shown: '40000.00' });
      expect(now.status).toBe(303);
      expect((await em().findOneOrFail(Subscription, id))).toMatchObject({ quantity: 3, pendingQuantity: null });
      expect(await walletBalance(server, user)).toBe('40000.00');
      expect(await em().count(CreditNote, { user: user.id })).toBe(1);

      const bad = await portal.post('change-quantity', { quantity: 'lots' });
      expect(bad.status).toBe(400);
      expect(nbsp(bad.text)).toMatch(/id="quantity-error" role="alert">Isi bilangan bulat dari 1 sampai 10000\.</);
    });

    it('a plan not priced per unit has no units form', async () => {
      clock.set(START);
      const user = await server.createUser();
      await fundWallet(server, user, '50000.00');
      expect((await server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'basic-monthly', payment_type: 'wallet' } })).status).toBe(201);
      const portal = await openPortal(user);
      const page = (await portal.get()).text;
      expect(page).not.toContain('id="units"');
      expect(page).not.toContain('id="sub-quantity"');
    });
  });
});
