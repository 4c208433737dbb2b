import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromotionCode } from '../../src/db/entities/coupon.js';
import { HostedSession } from '../../src/db/entities/hosted-session.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type HttpResult, type TestServer } from '../helpers/server.js';
import { dbOf } from '../helpers/subscriptions.js';

const SHOP = 'https://shop.example.com';
const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000', HOSTED_RETURN_ORIGINS: SHOP };

/*
 * The amount on the pay button is the amount charged, over HTTP as a browser sends the form.
 * Seats at Rp 40.000 before PPN: three are 120.000 + PPN 13.200 = 133.200, seven are
 * 280.000 + 30.800 = 310.800, and three with 25 % off are 90.000 + 9.900 = 99.900.
 */
const SEATS_PPN = { slug: 'seats-ppn', name: 'Team seats', description: 'Per seat', price: 40000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, per_unit: true, tax_behavior: 'exclusive' as const, sort_order: 9 };

const nbsp = (text: string) => text.replace(/\u00a0/g, ' ').replace(/\s+/g, ' ');

/** The form's fields as a browser submits them: every hidden field, and the units and code fields as shown. */
function formOf(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  const form = html.slice(html.indexOf('id="checkout-form"'));
  for (const m of form.matchAll(/<input type="hidden" name="([^"]+)"(?: id="[^"]*")? value="([^"]*)"/g)) fields[m[1]!] = m[2]!;
  const quantity = /name="quantity" id="quantity"[^>]*value="([^"]*)"/.exec(form);
  if (quantity) fields.quantity = quantity[1]!;
  const code = /name="promotion_code" id="promotion-code"[^>]*value="([^"]*)"/.exec(form);
  if (code) fields.promotion_code = code[1]!;
  return fields;
}

describe.each(DATABASES)('the hosted checkout charges what its pay button shows (%s)', (kind) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(kind, { env: SELLER });
    await server.seedPlans([...STANDARD_PLANS, SEATS_PPN]);
  });
  afterAll(() => server?.stop());

  const em = () => dbOf(server);
  const charges = () => server.running.billing.simulator!.transactions();

  async function openCheckout(body: Record<string, unknown>) {
    const user = await server.createUser();
    const made = await server.api('POST', '/checkout-sessions/', { auth: user, body: { success_url: `${SHOP}/thanks`, cancel_url: `${SHOP}/shop`, ...body } });
    expect(made.status, made.text).toBe(201);
    const path = new URL(made.body.url).pathname;
    const first = await server.request('GET', path);
    expect(first.status).toBe(200);
    const cookie = first.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const post = (fields: Record<string, string>): Promise<HttpResult> =>
      server.request('POST', path, { headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, rawBody: new URLSearchParams(fields).toString() });
    return { user, first, post, session: () => em().findOneOrFail(HostedSession, made.body.id) };
  }

  const paymentOf = (userId: string) => em().findOneOrFail(Payment, { user: userId }, { orderBy: { createdAt: 'desc' } });
  const promo = async (overrides: Partial<PromotionCode> = {}) => makePromotionCode(em(), { coupon: await makeCoupon(em(), { percentOff: '25.00', duration: 'forever' }), ...overrides });

  it.each(['bank_transfer', 'qris'])('seats typed without Apply (%s): Bayar shows the new total and charges nothing; Bayar again charges exactly it', async (method) => {
    const { user, first, post, session } = await openCheckout({ plan_id: 'seats-ppn', quantity: 3 });
    expect(nbsp(first.text)).toContain('Bayar Rp 133.200');
    const form = formOf(first.text);
    expect(form).toMatchObject({ priced_quantity: '3', priced_promotion_code: '', priced_due: '133200.00', quantity: '3' });
    const before = charges().length;

    const typed = await post({ ...form, payment_type: method, bank: 'bni', quantity: '7' });
    expect(typed.status).toBe(409);
    const shown = nbsp(typed.text);
    expect(shown).toContain('Bayar Rp 310.800');
    expect(shown).toMatch(/id="page-notice">Untuk jumlah unit dan kode promo di formulir, totalnya Rp 310\.800, bukan jumlah yang tertera di tombol\. Belum ada yang ditagih/);
    expect(shown).toMatch(/name="quantity" id="quantity"[^>]*value="7"/);
    // The method chosen stays chosen (and the bank), so Bayar again pays the same way.
    expect(shown).toMatch(new RegExp(`id="pt-${method}" value="${method}" checked`));
    if (method === 'bank_transfer') expect(shown).toContain('<option value="bni" selected>');
    expect(charges().length).toBe(before);
    expect(await em().count(Subscription, { user: user.id })).toBe(0);
    expect(await session()).toMatchObject({ quantity: 7 });

    const confirmed = await post({ ...formOf(typed.text), payment_type: method, bank: 'bni' });
    expect(confirmed.status).toBe(303);
    const payment = await paymentOf(user.id);
    expect(payment.grossAmount).toBe('310800.00');
    expect(charges().at(-1)).toMatchObject({ order_id: payment.orderId, gross_amount: 310800 });
    expect((await em().findOneOrFail(Subscription, { user: user.id })).quantity).toBe(7);
  });

  it('a promotion code typed without Apply is priced and shown, not counted; Bayar again charges the discounted total and counts it once', async () => {
    const code = await promo({ maxRedemptions: 5 });
    const { user, first, post } = await openCheckout({ plan_id: 'seats-ppn', quantity: 3 });
    const before = charges().length;
    const typed = await post({ ...formOf(first.text), payment_type: 'bank_transfer', bank: 'bca', promotion_code: code.code.toLowerCase() });
    expect(typed.status).toBe(409);
    const shown = nbsp(typed.text);
    expect(shown).toContain(`Diskon (${code.code})`);
    expect(shown).toContain('Bayar Rp 99.900');
    expect(charges().length).toBe(before);
    expect((await em().findOneOrFail(PromotionCode, code.id, { refresh: true })).timesRedeemed).toBe(0);

    const confirmed = await post({ ...formOf(typed.text), payment_type: 'bank_transfer', bank: 'bca' });
    expect(confirmed.status).toBe(303);
    expect((await paymentOf(user.id)).grossAmount).toBe('99900.00');
    expect((await em().findOneOrFail(PromotionCode, code.id, { refresh: true })).timesRedeemed).toBe(1);
  });

  it('a code applied, then erased without Apply: priced again at the full total, the code not counted', async () => {
    const code = await promo();
    const { user, first, post } = await openCheckout({ plan_id: 'seats-ppn', quantity: 3 });
    const applied = await post({ ...formOf(first.text), apply: '1', promotion_code: code.code });
    expect(nbsp(applied.text)).toContain('Bayar Rp 99.900');
    const erased = await post({ ...formOf(applied.text), payment_type: 'qris', promotion_code: '' });
    expect(erased.status).toBe(409);
    expect(nbsp(erased.text)).toContain('Bayar Rp 133.200');
    expect(await em().count(Subscription, { user: user.id })).toBe(0);
    expect((await post({ ...formOf(erased.text), payment_type: 'qris' })).status).toBe(303);
    expect((await paymentOf(user.id)).grossAmount).toBe('133200.00');
    expect((await em().findOneOrFail(PromotionCode, code.id, { refresh: true })).timesRedeemed).toBe(0);
  });

  it('a form whose shown amount is not what its terms cost now charges nothing and shows the total', async () => {
    const { user, first, post } = await openCheckout({ plan_id: 'seats-ppn', quantity: 3 });
    const stale = await post({ ...formOf(first.text), priced_due: '120000.00', payment_type: 'qris' });
    expect(stale.status).toBe(409);
    expect(nbsp(stale.text)).toContain('Bayar Rp 133.200');
    const nonsense = await post({ ...formOf(first.text), priced_due: 'lots', payment_type: 'qris' });
    expect(nonsense.status).toBe(409);
    expect(await em().count(Subscription, { user: user.id })).toBe(0);
  });

  it('a form without the priced fields is held to the checkout\'s own terms', async () => {
    const { user, post } = await openCheckout({ plan_id: 'seats-ppn', quantity: 3 });
    const csrf = (await post({})).text.match(/name="csrf_token" value="([^"]+)"/)![1]!;
    const typed = await post({ csrf_token: csrf, payment_type: 'qris', quantity: '7', promotion_code: '' });
    expect(typed.status).toBe(409);
    expect(await em().count(Subscription, { user: user.id })).toBe(0);
    // Seven are the checkout's terms now: the same bare form buys them.
    expect((await post({ csrf_token: csrf, payment_type: 'qris', quantity: '7', promotion_code: '' })).status).toBe(303);
    expect((await paymentOf(user.id)).grossAmount).toBe('310800.00');
  });

  it('a page left open in another tab pays what it shows, not what the other tab applied', async () => {
    const { user, first, post } = await openCheckout({ plan_id: 'seats-ppn', quantity: 3 });
    const other = await post({ ...formOf(first.text), apply: '1', quantity: '5' });
    expect(nbsp(other.text)).toContain('Bayar Rp 222.000');
    expect((await post({ ...formOf(first.text), payment_type: 'qris' })).status).toBe(303);
    expect((await paymentOf(user.id)).grossAmount).toBe('133200.00');
  });
});
