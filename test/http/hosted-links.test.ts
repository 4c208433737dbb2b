import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostedSession } from '../../src/db/entities/hosted-session.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { taxInvoice } from '../../src/domain/tax.js';
import { pageFormat } from '../../src/http/hosted/language.js';
import { createApiKey, revokeApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type Credentials, type TestServer } from '../helpers/server.js';
import { dbOf } from '../helpers/subscriptions.js';
import { completeThreeDs } from '../helpers/three-ds.js';

const SHOP = 'https://shop.example.com';
const cliActor = { type: 'cli' as const, id: 'tester', name: 'tester', requestId: null };

describe.each(DATABASES)('hosted-page links over the API (%s)', (kind) => {
  let server: TestServer;
  let alice: Credentials & { id: string };
  let writeKey: string;
  let readKey: string;

  beforeAll(async () => {
    server = await startTestServer(kind, { env: { HOSTED_RETURN_ORIGINS: `${SHOP},http://localhost:5173` } });
    await server.seedPlans(STANDARD_PLANS);
    alice = await server.createUser();
    const ctx = { em: dbOf(server), config: server.config, clock: server.running.billing.clock };
    writeKey = (await createApiKey(ctx, cliActor, { name: 'shop-backend', scope: 'write' })).key;
    readKey = (await createApiKey(ctx, cliActor, { name: 'reporting', scope: 'read' })).key;
  });
  afterAll(() => server?.stop());

  const checkout = (body: Record<string, unknown>, auth: { user?: Credentials; key?: string }) =>
    server.api('POST', '/checkout-sessions/', {
      auth: auth.user,
      headers: auth.key ? { authorization: `Bearer ${auth.key}` } : {},
      body: { success_url: `${SHOP}/thanks`, cancel_url: `${SHOP}/plans`, ...body },
    });

  it('the customer gets a 15-minute link under /pay/; only its hash is stored', async () => {
    const before = Date.now();
    const res = await checkout({ plan_id: 'pro-monthly' }, { user: alice });
    expect(res.status).toBe(201);
    expect(res.body.url).toMatch(new RegExp(`^${server.url}/pay/[A-Za-z0-9_-]{43}/$`));
    const expires = Date.parse(res.body.expires_at);
    expect(expires - before).toBeGreaterThan(14 * 60_000);
    expect(expires - before).toBeLessThanOrEqual(15 * 60_000 + 5_000);
    const row = await dbOf(server).findOneOrFail(HostedSession, res.body.id);
    const token = res.body.url.split('/').at(-2);
    expect(row.tokenHash).not.toContain(token);
    expect(row.tokenHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a write API key asks for the customer it names; a read key, a missing user, or a user with the customer\'s own credentials are refused', async () => {
    const made = await checkout({ plan_id: 'pro-monthly', user: alice.username }, { key: writeKey });
    expect(made.status).toBe(201);
    expect((await dbOf(server).findOneOrFail(HostedSession, made.body.id, { populate: ['user'] })).user.id).toBe(alice.id);
    const byId = await server.api('POST', '/portal-sessions/', { headers: { authorization: `Bearer ${writeKey}` }, body: { return_url: `${SHOP}/account`, user: alice.id } });
    expect(byId.status).toBe(201);
    expect(byId.body.url).toMatch(/\/portal\/[A-Za-z0-9_-]{43}\/$/);

    const read = await checkout({ plan_id: 'pro-monthly', user: alice.username }, { key: readKey });
    expect([read.status, read.body.code]).toEqual([403, 'insufficient_scope']);
    const nobody = await checkout({ plan_id: 'pro-monthly' }, { key: writeKey });
    expect([nobody.status, nobody.body.errors?.[0]?.field]).toEqual([400, 'user']);
    const unknown = await checkout({ plan_id: 'pro-monthly', user: 'no-such-user' }, { key: writeKey });
    expect(unknown.status).toBe(404);
    const own = await checkout({ plan_id: 'pro-monthly', user: 'someone-else' }, { user: alice });
    expect([own.status, own.body.errors?.[0]?.field]).toEqual([400, 'user']);
    const wrong = await checkout({ plan_id: 'pro-monthly', user: alice.username }, { key: 'bsk_not-a-key' });
    expect([wrong.status, wrong.body.code]).toEqual([401, 'invalid_api_key']);
  });

  it('refuses what it cannot honour, and stores nothing: foreign return origins, both or neither item, an unknown plan, an amount out of bounds', async () => {
    const count = () => dbOf(server).count(HostedSession, { user: alice.id });
    const before = await count();
    const foreign = await checkout({ plan_id: 'pro-monthly', success_url: 'https://evil.example.net/thanks' }, { user: alice });
    expect([foreign.status, foreign.body.errors.map((e: { field: string }) => e.field)]).toEqual([400, ['success_url']]);
    const both = await checkout({ plan_id: 'pro-monthly', topup_amount: 50000 }, { user: alice });
    expect(both.status).toBe(400);
    const neither = await checkout({}, { user: alice });
    expect(neither.status).toBe(400);
    const retired = await checkout({ plan_id: 'legacy' }, { user: alice });
    expect(retired.status).toBe(404);
    const tiny = await checkout({ topup_amount: 5 }, { user: alice });
    expect([tiny.status, tiny.body.errors[0].field]).toEqual([400, 'topup_amount']);
    const portal = await server.api('POST', '/portal-sessions/', { auth: alice, body: { return_url: 'javascript:alert(1)' } });
    expect(portal.status).toBe(400);
    expect(await count()).toBe(before);
  });

  it('a link opens once: the first client gets a cookie for that page alone; others get 410, a made-up link 404', async () => {
    const made = await checkout({ topup_amount: 50000 }, { user: alice });
    const path = new URL(made.body.url).pathname;
    const first = await server.request('GET', path);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(first.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const cookie = first.headers.get('set-cookie')!;
    expect(cookie).toMatch(new RegExp(`^billing\\.page=[A-Za-z0-9_-]{43}; path=${path.replace(/[/]/g, '\\/')}; .*httponly`, 'i'));
    const again = await server.request('GET', path);
    expect(again.status).toBe(410);
    expect(again.text).toContain('Tautan tidak berlaku');
    const mine = await server.request('GET', path, { headers: { cookie: cookie.split(';')[0]! } });
    expect(mine.status).toBe(200);
    const status = await server.request('GET', `${path}status`, { headers: { cookie: cookie.split(';')[0]! } });
    expect(status.body).toEqual({ state: 'choose', next: null });
    const english = await server.request('GET', path, { headers: { 'accept-language': 'en-GB,en;q=0.9,id;q=0.5' } });
    expect(english.text).toContain('This link no longer works');
    const madeUp = await server.request('GET', `/pay/${'A'.repeat(43)}/`);
    expect(madeUp.status).toBe(404);
    const odd = await server.request('GET', '/pay/%E0%A4%A/');
    expect(odd.status).toBeLessThan(500);
  });

  it('a revoked key fails at once', async () => {
    const ctx = { em: dbOf(server), config: server.config, clock: server.running.billing.clock };
    const temp = await createApiKey(ctx, cliActor, { name: 'temp', scope: 'write' });
    expect((await checkout({ plan_id: 'pro-monthly', user: alice.username }, { key: temp.key })).status).toBe(201);
    await revokeApiKey(ctx, cliActor, temp.apiKey.id);
    expect((await checkout({ plan_id: 'pro-monthly', user: alice.username }, { key: temp.key })).status).toBe(401);
  });
});

/**
 * A trial plan bought on the checkout page with a card, over plain HTTP (the browser tests drive
 * the same pages in Chromium): the terms said up front with PPN where the plan adds it, a
 * declined card said on the page (422), and a card that needs 3-D Secure followed until the
 * trial starts by the page's own status polling.
 */
describe.each(DATABASES)('hosted checkout of a trial plan with a card (%s)', (kind) => {
  let server: TestServer;
  const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000' };
  const TAXED_TRIAL = { slug: 'taxed-trial', name: 'Taxed trial', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month' as const, trial_period_days: 7, tax_behavior: 'exclusive' as const };

  beforeAll(async () => {
    server = await startTestServer(kind, { env: SELLER });
    await server.seedPlans([...STANDARD_PLANS, TAXED_TRIAL]);
  });
  afterAll(() => server?.stop());

  /** Opens a new checkout link for a new user: the page's path, its cookie and its CSRF token. */
  async function openTrialCheckout(planId: string) {
    const user = await server.createUser();
    const made = await server.api('POST', '/checkout-sessions/', { auth: user, body: { plan_id: planId, success_url: `${server.url}/shop/thanks`, cancel_url: `${server.url}/shop` } });
    expect(made.status).toBe(201);
    const path = new URL(made.body.url).pathname;
    const first = await server.request('GET', path);
    expect(first.status).toBe(200);
    const cookie = first.headers.get('set-cookie')!.split(';')[0]!;
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(first.text)![1]!;
    const post = (fields: Record<string, string>) =>
      server.request('POST', path, { headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, rawBody: new URLSearchParams({ csrf_token: csrf, ...fields }).toString() });
    const get = (suffix = '', lang?: 'en') => server.request('GET', `${path}${suffix}${lang ? '?lang=en' : ''}`, { headers: { cookie } });
    return { user, path, first, post, get };
  }

  it('says Rp 0 today and the first charge with its PPN and date, in Bahasa Indonesia and English', async () => {
    const { first, get } = await openTrialCheckout('taxed-trial');
    const total = taxInvoice('150000.00', 'exclusive', 'IDR', true).total;
    expect(Number(total)).toBeGreaterThan(150000);
    const end = new Date(Date.now() + 7 * 86_400_000);
    const id = pageFormat('id', server.config.documents.timeZone);
    const en = pageFormat('en', server.config.documents.timeZone);
    const text = (html: string) => html.replace(/\s+/g, ' ');
    expect(text(first.text)).toContain('Rp 0 hari ini');
    expect(text(first.text)).toMatch(new RegExp(`Tagihan pertama sebesar ${id.money(total, 'IDR').replace('.', '\\.')} \\(sudah termasuk PPN [\\d.,]+%\\) jatuh pada ${id.date(end)}`));
    const english = await get('', 'en');
    expect(text(english.text)).toContain('Rp 0 today');
    expect(text(english.text)).toMatch(new RegExp(`The first charge, ${en.money(total, 'IDR').replace('.', '\\.')} \\(PPN [\\d.,]+% included\\), is on ${en.date(end)}`));
  });

  it('a declined card answers the page with the bank\'s reason next to the card form (422), nothing made; the trial is still there', async () => {
    const { user, post } = await openTrialCheckout('pro-trial');
    const res = await post({ payment_type: 'credit_card', token: 'sim-card-deny-hosted' });
    expect(res.status).toBe(422);
    expect(res.text).toMatch(/<p class="error" role="alert" id="card-error"\s+data-refused="[^"]*">Kartu ditolak: Deny by Bank \[BNI\] with code \[05\] and message \[Do not honor\][^<]*\. Coba kartu lain\.<\/p>/);
    expect(res.text).toContain('Rp 0 hari ini');
    expect(await dbOf(server).count(Subscription, { user: user.id })).toBe(0);
  });

  it('a card that needs 3-D Secure: the bank\'s page in the frame, the status says card_check, then trialing once the bank says yes', async () => {
    const { user, post, get } = await openTrialCheckout('pro-trial');
    const res = await post({ payment_type: 'credit_card', token: 'tok-3ds-481111-1114-hosted' });
    expect(res.status).toBe(200);
    const frame = /<iframe class="three-ds" src="([^"]+)"/.exec(res.text)?.[1];
    expect(frame).toMatch(/\/3ds\//);
    expect(res.text).toContain('data-state="card_check"');
    expect((await get('status')).body).toEqual({ state: 'card_check', next: null });
    // A reload while waiting: the bank's page cannot be shown again, so the card form is.
    const reload = await get();
    expect(reload.text).toContain('id="checkout-form"');
    expect(await dbOf(server).count(Payment, { user: user.id })).toBe(0);
    // authorize, or already cancel: the gateway's notification may start the trial (and release the hold) first.
    expect(['authorize', 'cancel']).toContain(await completeThreeDs(frame!.replace(/&amp;/g, '&')));
    let status = (await get('status')).body;
    for (let i = 0; i < 40 && status.state === 'card_check'; i += 1) {
      await new Promise((r) => setTimeout(r, 250));
      status = (await get('status')).body;
    }
    expect(status).toEqual({ state: 'trialing', next: `${server.url}/shop/thanks` });
    const done = await get();
    expect(done.text).toMatch(/Kartu Anda disimpan; tagihan pertama sebesar Rp 150\.000 jatuh pada/);
  });

  it('while a trial card waits for 3-D Secure another card may be given (the waiting one is replaced); a trial without a card says its first bill', async () => {
    const { user, post } = await openTrialCheckout('pro-trial');
    expect((await post({ payment_type: 'credit_card', token: 'tok-3ds-481111-1114-first' })).text).toContain('class="three-ds"');
    const second = await post({ payment_type: 'credit_card', token: 'tok-3ds-481111-1114-second' });
    expect(second.status).toBe(200);
    expect(second.text).toContain('class="three-ds"');
    const subs = await dbOf(server).find(Subscription, { user: user.id }, { orderBy: { createdAt: 'asc' } });
    expect(subs.map((s) => [s.status, s.cancelReason])).toEqual([['canceled', 'replaced'], ['pending', null]]);

    const byTransfer = await openTrialCheckout('pro-trial');
    const chosen = await byTransfer.post({ payment_type: 'bank_transfer', bank: 'bca' });
    expect(chosen.status).toBe(303);
    const page = await byTransfer.get('', 'en');
    expect(page.text).toMatch(/The first bill, Rp 150\.000, comes on [^<]+, when the free trial ends\./);
  });
});
