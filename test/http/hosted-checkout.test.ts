import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HostedSession } from '../../src/db/entities/hosted-session.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { Topup } from '../../src/db/entities/topup.js';
import { ManualClock } from '../../src/domain/clock.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { holdNotifications, releaseNotifications } from '../helpers/simulator.js';
import { dbOf, simulate } from '../helpers/subscriptions.js';
import { completeThreeDs } from '../helpers/three-ds.js';

/**
 * The checkout's money rules over plain HTTP, as a browser would send its forms (the browser
 * tests drive the same pages in Chromium): one charge per checkout whatever the number of
 * submits, another method for a waiting payment only once the gateway canceled the first, and
 * the page following its charge through lost notifications, lost answers and late payments.
 */
describe.each(DATABASES)('hosted checkout: one charge, another method, faults (%s)', (kind) => {
  let server: TestServer;
  const clock = new ManualClock(new Date());

  beforeAll(async () => {
    server = await startTestServer(kind, { clock });
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());
  beforeEach(async () => {
    // The wall clock's time (the simulator keeps it): each test starts with no faults.
    clock.set(new Date());
    await fault({ mode: 'none' });
  });

  const sim = () => server.running.billing.simulator!;
  const charges = () => sim().transactions().length;
  const fault = async (body: Record<string, unknown>) => expect((await server.request('POST', '/_simulator/faults', { body })).status).toBe(200);
  const text = (html: string) => html.replace(/\s+/g, ' ');

  /** A new user's checkout link, opened as a browser opens it: its cookies and the form's CSRF token kept. */
  async function openCheckout(body: Record<string, unknown>) {
    const user = await server.createUser();
    const made = await server.api('POST', '/checkout-sessions/', { auth: user, body: { success_url: `${server.url}/shop/thanks`, cancel_url: `${server.url}/shop`, ...body } });
    expect(made.status).toBe(201);
    const path = new URL(made.body.url).pathname;
    const first = await server.request('GET', path);
    expect(first.status).toBe(200);
    const cookie = first.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(first.text)![1]!;
    const post = (fields: Record<string, string>) =>
      server.request('POST', path, { headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, rawBody: new URLSearchParams({ csrf_token: csrf, ...fields }).toString() });
    const get = (suffix = '', lang?: 'en') => server.request('GET', `${path}${suffix}${lang ? '?lang=en' : ''}`, { headers: { cookie } });
    const session = () => dbOf(server).findOneOrFail(HostedSession, made.body.id);
    return { user, path, post, get, session };
  }

  /** The pending payments (or top-ups) of a user, oldest first. */
  const paymentsOf = (userId: string) => dbOf(server).find(Payment, { user: userId }, { orderBy: { createdAt: 'asc' } });
  const topupsOf = (userId: string) => dbOf(server).find(Topup, { user: userId }, { orderBy: { createdAt: 'asc' } });

  /** Polls the page's status as its script does, until it leaves `state` (at most ~8 s: the page asks the gateway every few seconds). */
  async function statusAfter(get: (suffix?: string) => Promise<{ body: any }>, state: string): Promise<{ state: string; next: string | null }> {
    let status = (await get('status')).body;
    for (let i = 0; i < 40 && status.state === state; i += 1) {
      await new Promise((r) => setTimeout(r, 250));
      status = (await get('status')).body;
    }
    return status;
  }

  it.each([5, 40])('%i submits of a plan checkout at once make one subscription and one gateway charge; each is sent back to the page', async (n) => {
    const { user, post, get } = await openCheckout({ plan_id: 'pro-monthly' });
    const before = charges();
    const answers = await Promise.all(Array.from({ length: n }, () => post({ payment_type: 'bank_transfer', bank: 'bca' })));
    expect(answers.map((a) => a.status)).toEqual(Array(n).fill(303));
    expect(charges() - before).toBe(1);
    expect(await dbOf(server).count(Subscription, { user: user.id })).toBe(1);
    expect(await dbOf(server).count(Payment, { user: user.id })).toBe(1);
    const page = await get();
    expect(page.text).toContain('data-state="pending"');
    expect(page.text).toMatch(/<span id="va-number">\d{10,}<\/span>/);
    // A later submit, the charge made (a back button, a reload of the POST): still one charge.
    expect((await post({ payment_type: 'qris' })).status).toBe(303);
    expect(charges() - before).toBe(1);
  });

  it.each([5, 40])('%i submits of a top-up checkout at once make one top-up and one gateway charge', async (n) => {
    const { user, post, get } = await openCheckout({ topup_amount: 100000 });
    const before = charges();
    const answers = await Promise.all(Array.from({ length: n }, () => post({ payment_type: 'qris' })));
    expect(answers.map((a) => a.status)).toEqual(Array(n).fill(303));
    expect(charges() - before).toBe(1);
    expect(await dbOf(server).count(Topup, { user: user.id })).toBe(1);
    expect((await get()).text).toContain('class="qr"');
  });

  it('while a submit charges, the page says so and polls; another submit charges nothing; a claim left by a dead process is taken over after a few minutes', async () => {
    const { user, post, get, session } = await openCheckout({ plan_id: 'basic-monthly' });
    const id = (await session()).id;
    await dbOf(server).nativeUpdate(HostedSession, { id }, { choosingAt: clock.now() });
    const page = await get();
    expect(page.text).toContain('data-state="processing"');
    expect(page.text).toContain('Pilihan Anda sedang diproses');
    expect(page.text).not.toContain('id="checkout-form"');
    expect((await get('status')).body).toMatchObject({ state: 'processing', next: null });
    const before = charges();
    expect((await post({ payment_type: 'qris' })).status).toBe(303);
    expect(charges()).toBe(before);
    expect(await dbOf(server).count(Subscription, { user: user.id })).toBe(0);

    clock.advance(6 * 60_000);
    expect((await get('status')).body.state).toBe('choose');
    expect((await post({ payment_type: 'qris' })).status).toBe(303);
    expect(charges() - before).toBe(1);
    expect((await session()).choosingAt).toBeNull();
  });

  it('a waiting VA can be swapped for QRIS: the VA is canceled at the gateway before the QRIS charge is sent; a second press of the swap charges nothing more', async () => {
    const { user, post, get } = await openCheckout({ plan_id: 'pro-monthly' });
    expect((await post({ payment_type: 'bank_transfer', bank: 'bni' })).status).toBe(303);
    const [va] = await paymentsOf(user.id);
    const waiting = await get();
    expect(waiting.text).toContain('Pilih metode lain');
    expect(waiting.text).toContain(`name="replaces" value="${va!.orderId}"`);
    const english = await get('', 'en');
    expect(english.text).toContain('Choose another method');

    const requestsBefore = sim().requests().length;
    const before = charges();
    const swapped = await post({ payment_type: 'qris', replaces: va!.orderId });
    expect(swapped.status).toBe(303);
    const calls = sim().requests().slice(requestsBefore).map((r) => r.operation);
    expect(calls.indexOf('cancel')).toBeGreaterThanOrEqual(0);
    expect(calls.indexOf('cancel')).toBeLessThan(calls.indexOf('charge'));
    expect(sim().transaction(va!.orderId)?.transaction_status).toBe('cancel');
    expect(charges() - before).toBe(1);
    const payments = await paymentsOf(user.id);
    expect(payments.map((p) => [p.paymentType, p.status])).toEqual([['bank_transfer', 'canceled'], ['qris', 'pending']]);
    // The same subscription and invoice, paid another way.
    expect(new Set(payments.map((p) => p.invoice?.id)).size).toBe(1);
    expect(await dbOf(server).count(Subscription, { user: user.id })).toBe(1);
    const page = await get();
    expect(page.text).toContain('class="qr"');
    expect(page.text).toContain(`name="replaces" value="${payments[1]!.orderId}"`);

    // The swap form sent again (a double click): it names the canceled order, so nothing happens.
    expect((await post({ payment_type: 'qris', replaces: va!.orderId })).status).toBe(303);
    expect(charges() - before).toBe(1);

    await simulate(server, payments[1]!.orderId, 'settle');
    expect((await get('status')).body).toMatchObject({ state: 'paid', next: `${server.url}/shop/thanks` });
  });

  it('a swap the gateway cannot cancel first (5xx on cancel and status) charges nothing and says so; the waiting VA stays payable', async () => {
    const { user, post, get } = await openCheckout({ plan_id: 'pro-monthly' });
    expect((await post({ payment_type: 'bank_transfer', bank: 'bca' })).status).toBe(303);
    const [va] = await paymentsOf(user.id);
    const before = charges();
    await fault({ mode: 'http_500', operations: ['cancel', 'status'] });
    const refused = await post({ payment_type: 'qris', replaces: va!.orderId });
    expect(refused.status).toBe(409);
    expect(text(refused.text)).toContain('Payment gateway belum dapat membatalkan tagihan sebelumnya, jadi tidak ada tagihan baru.');
    expect(refused.text).toContain('id="va-number"');
    expect(charges()).toBe(before);
    expect((await paymentsOf(user.id)).map((p) => p.status)).toEqual(['pending']);
    await fault({ mode: 'none' });
    // The customer pays the VA after all: the page reaches paid.
    await simulate(server, va!.orderId, 'settle');
    expect((await get('status')).body.state).toBe('paid');
  });

  it('a swap after the waiting VA was paid (its notification lost): the gateway refuses the cancel, its status pays the invoice, nothing new is charged, the page says so', async () => {
    const { user, post } = await openCheckout({ plan_id: 'pro-monthly' });
    expect((await post({ payment_type: 'bank_transfer', bank: 'bca' })).status).toBe(303);
    const [va] = await paymentsOf(user.id);
    await simulate(server, va!.orderId, 'settle?notify=false');
    const before = charges();
    const answer = await post({ payment_type: 'qris', replaces: va!.orderId });
    expect(answer.status).toBe(200);
    expect(text(answer.text)).toContain('Pembayaran sebelumnya sudah diterima sebelum sempat dibatalkan, jadi tidak ada tagihan baru.');
    expect(answer.text).toContain('data-state="paid"');
    expect(charges()).toBe(before);
    expect((await dbOf(server).findOneOrFail(Subscription, { user: user.id })).status).toBe('active');
  });

  it('a waiting top-up can be swapped: the old top-up is canceled at the gateway (failed here) before the new one is charged', async () => {
    const { user, post, get } = await openCheckout({ topup_amount: 75000 });
    expect((await post({ payment_type: 'bank_transfer', bank: 'bri' })).status).toBe(303);
    const [first] = await topupsOf(user.id);
    expect((await get()).text).toContain(`name="replaces" value="${first!.orderId}"`);
    expect((await post({ payment_type: 'gopay', replaces: first!.orderId })).status).toBe(303);
    const topups = await topupsOf(user.id);
    expect(topups.map((t) => [t.paymentType, t.status])).toEqual([['bank_transfer', 'failed'], ['gopay', 'pending']]);
    expect(sim().transaction(first!.orderId)?.transaction_status).toBe('cancel');
    const page = await get();
    expect(page.text).toContain('class="qr"');
    await simulate(server, topups[1]!.orderId, 'settle');
    expect((await get('status')).body.state).toBe('paid');
  });

  it('a lost notification: the payment settles at the gateway unheard, and the page\'s status poll asks the gateway and reaches paid', async () => {
    const { user, post, get } = await openCheckout({ plan_id: 'basic-monthly' });
    expect((await post({ payment_type: 'qris' })).status).toBe(303);
    const [payment] = await paymentsOf(user.id);
    await simulate(server, payment!.orderId, 'settle?notify=false');
    expect((await dbOf(server).findOneOrFail(Payment, payment!.id)).status).toBe('pending');
    expect(await statusAfter(get, 'pending')).toMatchObject({ state: 'paid', next: `${server.url}/shop/thanks` });
    expect((await dbOf(server).findOneOrFail(Subscription, { user: user.id })).status).toBe('active');
    // A top-up's too.
    const topup = await openCheckout({ topup_amount: 50000 });
    expect((await topup.post({ payment_type: 'bank_transfer' })).status).toBe(303);
    const [t] = await topupsOf(topup.user.id);
    await simulate(server, t!.orderId, 'settle?notify=false');
    expect((await statusAfter(topup.get, 'pending')).state).toBe('paid');
    expect((await dbOf(server).findOneOrFail(Topup, t!.id)).status).toBe('success');
  });

  it('a BCA VA paid after 61 minutes: the page counts down to the VA\'s own expiry, still opens and follows it, and shows paid after', async () => {
    const { user, post, get, session } = await openCheckout({ plan_id: 'pro-monthly' });
    expect((await post({ payment_type: 'bank_transfer', bank: 'bca' })).status).toBe(303);
    const [va] = await paymentsOf(user.id);
    expect(va!.expiresAt!.getTime() - Date.now()).toBeGreaterThan(23 * 3600_000);
    const waiting = await get();
    expect(waiting.text).toContain(`data-expires-at="${va!.expiresAt!.toISOString()}"`);
    // The link lives as long as the VA.
    expect((await session()).expiresAt.getTime()).toBeGreaterThanOrEqual(va!.expiresAt!.getTime());

    clock.advance(61 * 60_000);
    const later = await get();
    expect(later.status).toBe(200);
    expect(later.text).toContain('data-state="pending"');
    expect((await get('status')).body).toMatchObject({ state: 'pending', next: null, order_id: va!.orderId });
    await simulate(server, va!.orderId, 'settle');
    expect((await get('status')).body).toMatchObject({ state: 'paid', next: `${server.url}/shop/thanks` });
    const paid = await get();
    expect(paid.text).toContain('data-state="paid"');
    expect(paid.text).toContain(`id="continue" href="${server.url}/shop/thanks"`);
  });

  it('a 5xx after the gateway took the charge: the page waits to confirm it, offers no second charge, and shows the VA once the gateway says it exists', async () => {
    const { user, post, get } = await openCheckout({ plan_id: 'pro-monthly' });
    const before = charges();
    // The gateway's own notification of the order it made would tell us at once (faster on some
    // machines than this test reads): held, so the page must find out by asking, as when it is late.
    await holdNotifications(server);
    await fault({ mode: 'http_500', when: 'after', operations: ['charge'], count: 1 });
    const lost = await post({ payment_type: 'bank_transfer', bank: 'bca' });
    expect(lost.status).toBe(303);
    expect(charges() - before).toBe(1);
    const [payment] = await paymentsOf(user.id);
    expect(payment!.outcomeUnknown).toBe(true);
    const page = await get();
    expect(page.text).toContain('data-state="confirming"');
    expect(text(page.text)).toContain('jangan membayar dua kali');
    // Only the form that swaps methods (canceling this order at the gateway first) is offered.
    expect(page.text).toContain(`name="replaces" value="${payment!.orderId}"`);
    // The customer presses pay again (a reload of the POST): nothing more is charged.
    expect((await post({ payment_type: 'bank_transfer', bank: 'bca' })).status).toBe(303);
    expect(charges() - before).toBe(1);
    expect(await dbOf(server).count(Payment, { user: user.id })).toBe(1);
    // The page's poll asks the gateway: the order exists and waits, so its VA is shown.
    expect((await statusAfter(get, 'confirming')).state).toBe('pending');
    expect((await get()).text).toMatch(/<span id="va-number">\d{10,}<\/span>/);

    // The same for a top-up.
    const topup = await openCheckout({ topup_amount: 60000 });
    await fault({ mode: 'http_500', when: 'after', operations: ['charge'], count: 1 });
    expect((await topup.post({ payment_type: 'qris' })).status).toBe(303);
    expect((await topup.get()).text).toContain('data-state="confirming"');
    expect((await topup.post({ payment_type: 'qris' })).status).toBe(303);
    expect(await dbOf(server).count(Topup, { user: topup.user.id })).toBe(1);
    const [t] = await topupsOf(topup.user.id);
    await simulate(server, t!.orderId, 'settle?notify=false');
    expect((await statusAfter(topup.get, 'confirming')).state).toBe('paid');
    // What was held told nothing the polls had not found out; the next tests get theirs again.
    await releaseNotifications(server, { drop: true });
  });

  it('a card the bank declines after 3-D Secure: the page comes back to the form and says so next to the card; another method then pays', async () => {
    const { user, post, get } = await openCheckout({ plan_id: 'pro-monthly' });
    expect((await post({ payment_type: 'credit_card', token: 'tok-3ds-481111-1114-declined' })).status).toBe(303);
    const waiting = await get();
    const frame = /<iframe class="three-ds" src="([^"]+)"/.exec(waiting.text)?.[1];
    expect(frame).toMatch(/\/3ds\//);
    expect(await completeThreeDs(frame!.replace(/&amp;/g, '&'), 'fail')).toBe('deny');
    expect((await statusAfter(get, 'pending')).state).toBe('failed');
    const page = await get('', 'en');
    expect(page.text).toMatch(/<p class="error" role="alert" id="card-error"\s+data-refused="[^"]*">The card was declined or your bank(?:'|&#39;)s 3-D Secure check did not succeed\. Try another card\.<\/p>/);
    expect(page.text).toContain('id="checkout-form"');
    expect((await post({ payment_type: 'bank_transfer', bank: 'bca' })).status).toBe(303);
    const payments = await paymentsOf(user.id);
    expect(payments.map((p) => [p.paymentType, p.status])).toEqual([['credit_card', 'failed'], ['bank_transfer', 'pending']]);
    await simulate(server, payments[1]!.orderId, 'settle');
    expect((await get('status')).body.state).toBe('paid');
  });

  it('refuses a bank the gateway does not offer and a method the link does not offer (400), charging nothing', async () => {
    const { user, post } = await openCheckout({ plan_id: 'pro-monthly', payment_type: 'qris' });
    const before = charges();
    expect((await post({ payment_type: 'bank_transfer', bank: 'bca' })).status).toBe(400);
    const other = await openCheckout({ plan_id: 'pro-monthly' });
    const badBank = await other.post({ payment_type: 'bank_transfer', bank: 'nope' });
    expect(badBank.status).toBe(400);
    expect(charges()).toBe(before);
    expect(await dbOf(server).count(Subscription, { user: { $in: [user.id, other.user.id] } })).toBe(0);
  });
});
