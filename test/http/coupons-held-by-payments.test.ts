import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Coupon, CouponRedemption, PromotionCode } from '../../src/db/entities/coupon.js';
import { Payment } from '../../src/db/entities/payment.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { DATABASES } from '../helpers/database.js';
import { signedNotification } from '../helpers/factories.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { holdNotifications, releaseNotifications } from '../helpers/simulator.js';
import { dbOf, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';
import { waitForNotification } from '../helpers/topups.js';

const SHOP = 'https://shop.example.com';

/*
 * A promotion code is spent only by money: a redemption held by a first payment that expires at
 * the gateway, or is canceled unpaid, is given back, once; a paid one never is. Pro is Rp 150.000,
 * 25 % off 112.500.
 */
describe.each(DATABASES)('promotion codes held by payments (%s)', (kind) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(kind, { env: { HOSTED_RETURN_ORIGINS: SHOP } });
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  const em = () => dbOf(server);
  const oneUse = async (max = 1) => {
    const coupon = await makeCoupon(em(), { percentOff: '25.00', duration: 'once', maxRedemptions: max });
    return makePromotionCode(em(), { coupon, maxRedemptions: max });
  };
  /** The code's and its coupon's counts, and its redemption records. */
  const counts = async (code: PromotionCode) => {
    const fresh = em();
    const promo = await fresh.findOneOrFail(PromotionCode, code.id, { refresh: true });
    const coupon = await fresh.findOneOrFail(Coupon, promo.coupon.id, { refresh: true });
    return { code: promo.timesRedeemed, coupon: coupon.timesRedeemed, records: await fresh.count(CouponRedemption, { promotionCode: code.id }) };
  };
  const held = (n: number) => ({ code: n, coupon: n, records: n });

  /** The code taken by a new subscription whose first order the gateway then ends unpaid: the code is free again. */
  async function lapsedWith(code: PromotionCode, move: 'expire' | 'cancel', user?: TestUser) {
    const lapsed = await subscribeWith(user ?? (await server.createUser()), code);
    await simulate(server, lapsed.orderId, move);
    expect(await counts(code)).toEqual(held(0));
    return lapsed;
  }

  async function subscribeWith(user: TestUser, code: PromotionCode, paymentType = 'bank_transfer') {
    const res = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: paymentType, promotion_code: code.code });
    expect(res.status, res.text).toBe(201);
    expect(res.body.payment.gross_amount).toBe('112500.00');
    return { subscriptionId: res.body.subscription.id as string, orderId: res.body.payment.order_id as string };
  }

  async function refusedExhausted(user: TestUser, code: PromotionCode) {
    const res = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'qris', promotion_code: code.code });
    expect(res.status, res.text).toBe(422);
    expect(res.body).toMatchObject({ code: 'promotion_code_invalid', reason: 'exhausted' });
  }

  /** A hosted checkout with the code applied, as customer A opens it and picks a virtual account. */
  async function checkoutByVirtualAccount(user: TestUser, code: PromotionCode): Promise<string> {
    return (await openCheckoutByVirtualAccount(user, code)).orderId;
  }

  async function openCheckoutByVirtualAccount(user: TestUser, code: PromotionCode) {
    const made = await server.api('POST', '/checkout-sessions/', { auth: user, body: { plan_id: 'pro-monthly', promotion_code: code.code, success_url: `${SHOP}/thanks`, cancel_url: `${SHOP}/shop` } });
    expect(made.status, made.text).toBe(201);
    const path = new URL(made.body.url).pathname;
    const page = await server.request('GET', path);
    const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const fields: Record<string, string> = { payment_type: 'bank_transfer', bank: 'bca' };
    for (const m of page.text.matchAll(/<input type="hidden" name="([^"]+)"(?: id="[^"]*")? value="([^"]*)"/g)) fields[m[1]!] = m[2]!;
    const promo = /name="promotion_code" id="promotion-code"[^>]*value="([^"]*)"/.exec(page.text);
    if (promo) fields.promotion_code = promo[1]!;
    const post = (form: Record<string, string>) => server.request('POST', path, { headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, rawBody: new URLSearchParams(form).toString() });
    const chosen = await post(fields);
    expect(chosen.status, chosen.text.slice(0, 500)).toBe(303);
    const payment = await em().findOneOrFail(Payment, { user: user.id }, { orderBy: { createdAt: 'desc' } });
    expect(payment.grossAmount).toBe('112500.00');
    return { orderId: payment.orderId, csrf: fields.csrf_token!, post };
  }

  it('a hosted checkout\'s virtual account expires at the gateway unpaid: the one-use code is given back and customer B uses it', async () => {
    const code = await oneUse();
    const a = await server.createUser();
    const orderA = await checkoutByVirtualAccount(a, code);
    expect(await counts(code)).toEqual(held(1));
    const b = await server.createUser();
    await refusedExhausted(b, code);

    await simulate(server, orderA, 'expire');
    expect(await counts(code)).toEqual(held(0));
    const orderB = await checkoutByVirtualAccount(b, code);
    expect(await counts(code)).toEqual(held(1));
    // B pays: the code is spent by money and stays counted.
    await simulate(server, orderB, 'settle');
    expect(await counts(code)).toEqual(held(1));
  });

  it('another method chosen on the waiting page: the old order is canceled, the new one holds the one-use code, still counted once', async () => {
    const code = await oneUse();
    const a = await server.createUser();
    const waiting = await openCheckoutByVirtualAccount(a, code);
    const switched = await waiting.post({ csrf_token: waiting.csrf, payment_type: 'qris', replaces: waiting.orderId });
    expect(switched.status, switched.text.slice(0, 500)).toBe(303);
    const payments = await em().find(Payment, { user: a.id }, { orderBy: { createdAt: 'asc' } });
    expect(payments.map((p) => [p.status, p.paymentType, p.grossAmount])).toEqual([['canceled', 'bank_transfer', '112500.00'], ['pending', 'qris', '112500.00']]);
    expect(await counts(code)).toEqual(held(1));
    await refusedExhausted(await server.createUser(), code);
    await simulate(server, payments[1]!.orderId, 'settle');
    expect(await counts(code)).toEqual(held(1));
  });

  it('an expiry delivered twice at once gives the code back once', async () => {
    const code = await oneUse(2);
    const a = await subscribeWith(await server.createUser(), code);
    await subscribeWith(await server.createUser(), code);
    expect(await counts(code)).toEqual(held(2));

    await holdNotifications(server, a.orderId);
    await simulate(server, a.orderId, 'expire');
    const expiry = signedNotification(server.config.gateway.serverKey, { order_id: a.orderId, transaction_status: 'expire', gross_amount: '112500.00' });
    const answers = await Promise.all([1, 2].map(() => server.api('POST', '/webhook/notification/', { body: expiry })));
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    // The gateway's own notification, a third time.
    await releaseNotifications(server, { order_id: a.orderId });
    expect(await counts(code)).toEqual(held(1));
  });

  it('forty concurrent attempts on a one-use code count it once; once its holder\'s order expires, forty more count it once again', async () => {
    const code = await oneUse();
    const attempt = async () => {
      const users = await Promise.all(Array.from({ length: 40 }, () => server.createUser()));
      const answers = await Promise.all(users.map((u) => subscribe(server, u, { plan_id: 'pro-monthly', payment_type: 'bank_transfer', promotion_code: code.code })));
      expect(answers.filter((r) => r.status === 201)).toHaveLength(1);
      expect(answers.filter((r) => r.status === 422 && r.body.reason === 'exhausted')).toHaveLength(39);
      return answers.find((r) => r.status === 201)!.body.payment.order_id as string;
    };
    const first = await attempt();
    expect(await counts(code)).toEqual(held(1));
    await simulate(server, first, 'expire');
    expect(await counts(code)).toEqual(held(0));
    await attempt();
    expect(await counts(code)).toEqual(held(1));
  });

  it('a pending payment canceled unpaid gives the code back: canceled at the gateway, or by the customer canceling the subscription', async () => {
    const code = await oneUse();
    await lapsedWith(code, 'cancel');

    const user = await server.createUser();
    const c = await subscribeWith(user, code);
    expect(await counts(code)).toEqual(held(1));
    const canceled = await server.api('POST', `/subscriptions/${c.subscriptionId}/cancel/`, { auth: user, body: { immediate: true } });
    expect(canceled.status, canceled.text).toBe(200);
    expect(await counts(code)).toEqual(held(0));
    // The gateway's notification of that cancel gives back nothing more.
    expect(await waitForNotification(server, c.orderId, 'cancel')).toBe(200);
    expect(await counts(code)).toEqual(held(0));
  });

  it('a first charge the gateway never took (connection refused) gives the code back at once', async () => {
    const code = await oneUse();
    expect((await server.request('POST', '/_simulator/faults', { body: { mode: 'refuse', when: 'before', operations: ['charge'], count: 1 } })).status).toBe(200);
    const user = await server.createUser();
    const res = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer', promotion_code: code.code });
    expect(res.status, res.text).toBeGreaterThanOrEqual(500);
    expect((await em().findOneOrFail(Payment, { user: user.id })).status).toBe('failed');
    expect(await counts(code)).toEqual(held(0));
    await subscribeWith(await server.createUser(), code);
    expect(await counts(code)).toEqual(held(1));
  });

  it('a paid one never gives it back: not by a late expiry, nor by canceling the subscription', async () => {
    const code = await oneUse();
    const user = await server.createUser();
    const a = await subscribeWith(user, code);
    await simulate(server, a.orderId, 'settle');
    const lateExpiry = signedNotification(server.config.gateway.serverKey, { order_id: a.orderId, transaction_status: 'expire', gross_amount: '112500.00' });
    expect((await server.api('POST', '/webhook/notification/', { body: lateExpiry })).status).toBe(200);
    expect(await counts(code)).toEqual(held(1));
    const canceled = await server.api('POST', `/subscriptions/${a.subscriptionId}/cancel/`, { auth: user, body: { immediate: true } });
    expect(canceled.status, canceled.text).toBe(200);
    expect(await counts(code)).toEqual(held(1));
  });

  it('paying again after the expiry counts the code again; used up since, paying again answers 422 and charges nothing', async () => {
    const code = await oneUse();
    const user = await server.createUser();
    const a = await lapsedWith(code, 'expire', user);

    const again = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: a.subscriptionId, payment_type: 'qris' } });
    expect(again.status, again.text).toBe(201);
    expect(await counts(code)).toEqual(held(1));
    expect(again.body.payment.gross_amount).toBe('112500.00');
    await simulate(server, again.body.payment.order_id, 'expire');
    expect(await counts(code)).toEqual(held(0));

    await subscribeWith(await server.createUser(), code);
    const charges = server.running.billing.simulator!.transactions().length;
    const refused = await server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: a.subscriptionId, payment_type: 'qris' } });
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body).toMatchObject({ code: 'promotion_code_invalid', reason: 'exhausted' });
    expect(server.running.billing.simulator!.transactions().length).toBe(charges);
    expect(await counts(code)).toEqual(held(1));
  });

  it('money that arrives for the invoice after its order expired counts the code again', async () => {
    const code = await oneUse();
    const a = await lapsedWith(code, 'expire');
    const late = signedNotification(server.config.gateway.serverKey, { order_id: a.orderId, transaction_status: 'settlement', gross_amount: '112500.00', settlement_time: '2026-01-15 10:20:00' });
    expect((await server.api('POST', '/webhook/notification/', { body: late })).status).toBe(200);
    expect(await counts(code)).toEqual(held(1));
  });
});
