import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HostedSession } from '../../src/db/entities/hosted-session.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { Topup } from '../../src/db/entities/topup.js';
import { ManualClock } from '../../src/domain/clock.js';
import { taxInvoice } from '../../src/domain/tax.js';
import { pageFormat } from '../../src/http/hosted/language.js';
import { createApiKey, revokeApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { deleteExpiredHostedSessions } from '../../src/services/hosted/hosted-sessions.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type Credentials, type HttpResult, type TestServer } from '../helpers/server.js';
import { dbOf, simulate } from '../helpers/subscriptions.js';
import { completeThreeDs } from '../helpers/three-ds.js';

const SHOP = 'https://shop.example.com';
const cliActor = { type: 'cli' as const, id: 'tester', name: 'tester', requestId: null };

describe.each(DATABASES)('hosted-page links over the API (%s)', (kind) => {
  let server: TestServer;
  let alice: Credentials & { id: string };
  let writeKey: string;
  let readKey: string;
  // The service's clock, moved by the tests (the simulator keeps real time: a VA lives 24 real hours).
  const clock = new ManualClock(new Date());
  const logged: string[] = [];
  const capture = (level: string) => (message: string, fields?: Record<string, unknown>) => logged.push(JSON.stringify({ level, message, ...fields }));

  beforeAll(async () => {
    server = await startTestServer(kind, {
      clock,
      env: { HOSTED_RETURN_ORIGINS: `${SHOP},http://localhost:5173`, HOSTED_CHECKOUT_TTL_MINUTES: '60', PUBLIC_URL: PUBLIC, LOG_REQUESTS: 'true' },
      logger: { info: capture('info'), warn: capture('warn'), error: capture('error') },
    });
    await server.seedPlans(STANDARD_PLANS);
    alice = await server.createUser();
    const ctx = { em: dbOf(server), config: server.config, clock: server.running.billing.clock };
    writeKey = (await createApiKey(ctx, cliActor, { name: 'shop-backend', scope: 'write' })).key;
    readKey = (await createApiKey(ctx, cliActor, { name: 'reporting', scope: 'read' })).key;
  });
  beforeEach(() => clock.set(new Date()));
  afterAll(() => server?.stop());

  const checkout = (body: Record<string, unknown>, auth: { user?: Credentials; key?: string }) =>
    server.api('POST', '/checkout-sessions/', {
      auth: auth.user,
      headers: auth.key ? { authorization: `Bearer ${auth.key}` } : {},
      body: { success_url: `${SHOP}/thanks`, cancel_url: `${SHOP}/plans`, ...body },
    });
  const portalLink = async (user: Credentials = alice): Promise<string> => {
    const res = await server.api('POST', '/portal-sessions/', { auth: user, body: { return_url: `${SHOP}/account` } });
    expect(res.status).toBe(201);
    return new URL(res.body.url).pathname;
  };
  const checkoutPath = async (body: Record<string, unknown> = { plan_id: 'pro-monthly' }, user: Credentials = alice): Promise<string> => {
    const res = await checkout(body, { user });
    expect(res.status).toBe(201);
    return new URL(res.body.url).pathname;
  };
  const minutes = (n: number) => clock.advance(n * 60_000);

  /** A browser: its own cookie jar for one page (the page's cookie), and the page's CSRF token once it has seen a form. */
  function browser(path: string, headers: Record<string, string> = {}) {
    let cookie: string | null = null;
    let csrf: string | null = null;
    const keep = (res: HttpResult) => {
      const set = res.headers.get('set-cookie');
      if (set) cookie = set.split(';')[0]!;
      const token = /name="csrf_token" value="([^"]+)"/.exec(res.text)?.[1];
      if (token) csrf = token;
      return res;
    };
    const withCookie = () => ({ ...headers, ...(cookie ? { cookie } : {}) });
    return {
      get: async (suffix = '') => keep(await server.request('GET', `${path}${suffix}`, { headers: withCookie() })),
      head: async () => server.request('HEAD', path, { headers: withCookie() }),
      post: async (fields: Record<string, string>, suffix = '') =>
        keep(await server.request('POST', `${path}${suffix}`, {
          headers: { ...withCookie(), 'content-type': 'application/x-www-form-urlencoded' },
          rawBody: new URLSearchParams({ ...(csrf ? { csrf_token: csrf } : {}), ...fields }).toString(),
        })),
      cookie: () => cookie,
      csrf: () => csrf,
    };
  }

  it('a checkout link is made on PUBLIC_URL for HOSTED_CHECKOUT_TTL_MINUTES, whatever Host the caller sends; only its hash is stored', async () => {
    const before = clock.now().getTime();
    const res = await checkout({ plan_id: 'pro-monthly' }, { user: alice });
    expect(res.status).toBe(201);
    expect(res.body.url).toMatch(new RegExp(`^${PUBLIC}/pay/[A-Za-z0-9_-]{43}/$`));
    expect(Date.parse(res.body.expires_at) - before).toBe(60 * 60_000);
    const row = await dbOf(server).findOneOrFail(HostedSession, res.body.id);
    const token = res.body.url.split('/').at(-2);
    expect(row.tokenHash).not.toContain(token);
    expect(row.tokenHash).toMatch(/^[0-9a-f]{64}$/);

    // A forged Host (and X-Forwarded-Host) header: the link is still on PUBLIC_URL, and so is the default return origin.
    const forged = await rawPost(`${server.url}/api/subscriptions/portal-sessions/`, { host: 'evil.example.net', 'x-forwarded-host': 'evil.example.net', authorization: basic(alice) }, { return_url: `${SHOP}/account` });
    expect(forged.status).toBe(201);
    expect(new URL(forged.body.url).origin).toBe(PUBLIC);
    const portal = await server.api('POST', '/portal-sessions/', { auth: alice, body: { return_url: 'https://evil.example.net/account' } });
    expect(portal.status).toBe(400);
  });

  it('a write API key asks for the customer it names; a read key, a missing user, or a user with the customer\'s own credentials are refused', async () => {
    const made = await checkout({ plan_id: 'pro-monthly', user: alice.username }, { key: writeKey });
    expect(made.status).toBe(201);
    expect((await dbOf(server).findOneOrFail(HostedSession, made.body.id, { populate: ['user'] })).user.id).toBe(alice.id);
    const byId = await server.api('POST', '/portal-sessions/', { headers: { authorization: `Bearer ${writeKey}` }, body: { return_url: `${SHOP}/account`, user: alice.id } });
    expect(byId.status).toBe(201);
    expect(byId.body.url).toMatch(/\/portal\/[A-Za-z0-9_-]{43}\/$/);
    // A portal link must be claimed within 15 minutes.
    expect(Date.parse(byId.body.expires_at) - clock.now().getTime()).toBe(15 * 60_000);

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

  it('a revoked key fails at once', async () => {
    const ctx = { em: dbOf(server), config: server.config, clock: server.running.billing.clock };
    const temp = await createApiKey(ctx, cliActor, { name: 'temp', scope: 'write' });
    expect((await checkout({ plan_id: 'pro-monthly', user: alice.username }, { key: temp.key })).status).toBe(201);
    await revokeApiKey(ctx, cliActor, temp.apiKey.id);
    expect((await checkout({ plan_id: 'pro-monthly', user: alice.username }, { key: temp.key })).status).toBe(401);
  });

  it('a checkout link opens for five clients without cookies and for HEAD (a preview), and still works for the customer after; its forms need this browser\'s cookie and token', async () => {
    const user = await server.createUser();
    const path = await checkoutPath({ plan_id: 'pro-monthly' }, user);
    for (let i = 0; i < 5; i += 1) {
      const res = await server.request('GET', path);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(res.headers.get('set-cookie')).toMatch(new RegExp(`^billing\\.page=[A-Za-z0-9_-]{43}; path=${path.replace(/[/]/g, '\\/')}; .*samesite=lax; httponly`, 'i'));
    }
    expect((await server.request('HEAD', path)).status).toBe(200);

    const customer = browser(path);
    const page = await customer.get();
    expect(page.status).toBe(200);
    const other = browser(path);
    await other.get();
    // Another browser's token with this browser's cookie, a token without its cookie, no token: 403, nothing made.
    const mixed = await server.request('POST', path, { headers: { cookie: customer.cookie()!, 'content-type': 'application/x-www-form-urlencoded' }, rawBody: `csrf_token=${other.csrf()}&payment_type=bank_transfer&bank=bni` });
    expect(mixed.status).toBe(403);
    const noCookie = await server.request('POST', path, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, rawBody: `csrf_token=${customer.csrf()}&payment_type=bank_transfer&bank=bni` });
    expect(noCookie.status).toBe(403);
    expect((await customer.post({ csrf_token: '', payment_type: 'bank_transfer', bank: 'bni' })).status).toBe(403);
    expect(await dbOf(server).count(Subscription, { user: user.id })).toBe(0);

    const chosen = await customer.post({ payment_type: 'bank_transfer', bank: 'bni' });
    expect(chosen.status).toBe(303);
    const waiting = await customer.get();
    expect(waiting.text).toContain('id="va-number"');
    // And on another device: the same page, the same VA.
    const phone = await browser(path).get();
    expect(phone.status).toBe(200);
    expect(phone.text).toContain('id="va-number"');
  });

  it('after its TTL a checkout link answers 410 in the language chosen on it, with a way back to cancel_url; a made-up link 404', async () => {
    const path = await checkoutPath();
    const english = await server.request('GET', `${path}?lang=en`);
    expect(english.text).toContain('<html lang="en">');
    minutes(61);
    const gone = await server.request('GET', path, { headers: { 'accept-language': 'id-ID,id;q=0.9' } });
    expect(gone.status).toBe(410);
    expect(gone.headers.get('referrer-policy')).toBe('no-referrer');
    expect(gone.text).toContain('This link no longer works');
    expect(gone.text).toMatch(new RegExp(`<a class="button" id="back" href="${SHOP}/plans">Back to the shop</a>`));
    expect((await server.request('HEAD', path)).status).toBe(410);
    const madeUp = await server.request('GET', `/pay/${'A'.repeat(43)}/`);
    expect(madeUp.status).toBe(404);
    expect(madeUp.text).toContain('Halaman tidak ditemukan');
    expect((await server.request('GET', '/pay/%E0%A4%A/')).status).toBeLessThan(500);
  });

  it('a VA checkout whose payment expires after the TTL opens until the VA expires, then 410', async () => {
    const user = await server.createUser();
    const path = await checkoutPath({ plan_id: 'basic-monthly' }, user);
    const customer = browser(path);
    await customer.get();
    expect((await customer.post({ payment_type: 'bank_transfer', bank: 'bca' })).status).toBe(303);
    const payment = await dbOf(server).findOneOrFail(Payment, { user: user.id });
    expect(payment.expiresAt!.getTime()).toBeGreaterThan(clock.now().getTime() + 60 * 60_000);
    minutes(61); // the customer is at the ATM
    const later = await customer.get();
    expect(later.status).toBe(200);
    expect(later.text).toContain('id="va-number"');
    expect((await browser(path).get()).status).toBe(200);
    expect((await customer.get('status')).body).toMatchObject({ state: 'pending' });
    clock.set(new Date(payment.expiresAt!.getTime() - 60_000));
    expect((await customer.get()).status).toBe(200);
    clock.set(new Date(payment.expiresAt!.getTime() + 60_000));
    const gone = await customer.get();
    expect(gone.status).toBe(410);
    expect(gone.text).toContain(`href="${SHOP}/plans"`);
  });

  it('a paid checkout\'s link still opens after its TTL and says it is paid, leading to success_url, for a day', async () => {
    const user = await server.createUser();
    const path = await checkoutPath({ topup_amount: 50000 }, user);
    const customer = browser(path);
    await customer.get();
    expect((await customer.post({ payment_type: 'bank_transfer', bank: 'bni' })).status).toBe(303);
    const topup = await dbOf(server).findOneOrFail(Topup, { user: user.id });
    await simulate(server, topup.orderId, 'settle');
    await expect.poll(async () => (await customer.get('status')).body.state, { timeout: 10_000 }).toBe('paid');
    minutes(24 * 60 + 1); // past the link's TTL and past the VA's expiry
    for (const reader of [customer, browser(path)]) {
      const page = await reader.get();
      expect(page.status).toBe(200);
      expect(page.text).toContain('data-state="paid"');
      expect(page.text).toContain(`href="${SHOP}/thanks"`);
    }
    const session = await dbOf(server).findOneOrFail(HostedSession, { user: user.id });
    clock.set(new Date(session.expiresAt.getTime() + 24 * 3_600_000 + 60_000));
    expect((await customer.get()).status).toBe(410);
  });

  it('a portal link: ten GETs and HEADs (a preview, a mail scanner) leave it unclaimed; the customer\'s button claims it; another browser then gets 410 with return_url', async () => {
    const path = await portalLink();
    for (let i = 0; i < 10; i += 1) {
      const res = await server.request(i % 2 ? 'HEAD' : 'GET', path);
      expect(res.status).toBe(200);
      if (i % 2 === 0) expect(res.text).toContain('id="open-portal"');
    }
    const row = () => dbOf(server).findOneOrFail(HostedSession, { tokenHash: createHash('sha256').update(path.split('/')[2]!).digest('hex') });
    expect((await row()).openedAt).toBeNull();

    const customer = browser(path);
    const landing = await customer.get();
    expect(landing.status).toBe(200);
    expect(landing.text).toContain('Buka portal pelanggan');
    expect(landing.text).toContain(`href="${SHOP}/account"`);
    const late = browser(path);
    await late.get();
    // The portal's own forms are not reachable before the claim: they lead to the landing page.
    expect((await customer.post({}, 'pause')).status).toBe(303);
    expect((await customer.post({ csrf_token: 'forged' })).status).toBe(403);
    expect((await row()).openedAt).toBeNull();

    const claimed = await customer.post({});
    expect(claimed.status).toBe(303);
    expect(claimed.headers.get('location')).toBe(path);
    expect((await customer.get()).text).toContain('id="sub-title"');
    // The claim's answer was lost, and the browser sends it again: still this browser's portal.
    expect((await customer.post({})).status).toBe(303);

    const second = await late.post({});
    expect(second.status).toBe(410);
    expect(second.text).toContain(`href="${SHOP}/account"`);
    const preview = await server.request('GET', path);
    expect(preview.status).toBe(410);
    expect((await customer.get()).status).toBe(200);
  });

  it('a claimed portal lives 60 minutes from its last use; an unclaimed one 15 minutes', async () => {
    const path = await portalLink();
    const customer = browser(path);
    await customer.get();
    expect((await customer.post({})).status).toBe(303);
    for (let i = 0; i < 5; i += 1) {
      minutes(10);
      expect((await customer.get()).status).toBe(200);
    }
    minutes(59);
    expect((await customer.get()).status).toBe(200);
    minutes(61);
    const gone = await customer.get();
    expect(gone.status).toBe(410);
    expect(gone.text).toContain(`href="${SHOP}/account"`);

    const unclaimed = await portalLink();
    const slow = browser(unclaimed);
    expect((await slow.get()).status).toBe(200);
    minutes(16);
    expect((await slow.post({})).status).toBe(410);
    expect((await slow.get()).status).toBe(410);
  });

  it('forty browsers claim one portal link at once: exactly one gets it, the others 410', async () => {
    const path = await portalLink();
    const browsers = Array.from({ length: 40 }, () => browser(path));
    for (const b of browsers) await b.get();
    const answers = await Promise.all(browsers.map((b) => b.post({})));
    expect(answers.filter((a) => a.status === 303)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 410)).toHaveLength(39);
    const winner = browsers[answers.findIndex((a) => a.status === 303)]!;
    expect((await winner.get()).status).toBe(200);
  });

  it('?lang= is kept on the link: reloads, redirects and other devices keep it until another is chosen', async () => {
    const path = await checkoutPath();
    const id = { 'accept-language': 'id-ID,id;q=0.9' };
    const customer = browser(path, id);
    expect((await customer.get('?lang=en')).text).toContain('<html lang="en">');
    expect((await customer.get()).text).toContain('<html lang="en">');
    expect((await browser(path, id).get()).text).toContain('<html lang="en">');
    expect((await customer.get('?lang=id')).text).toContain('<html lang="id">');
    expect((await browser(path, { 'accept-language': 'en' }).get()).text).toContain('<html lang="id">');

    const portal = await portalLink();
    const reader = browser(portal, id);
    expect((await reader.get('?lang=en')).text).toContain('Open the customer portal');
    const claim = await reader.post({}, '?lang=en');
    expect(claim.headers.get('location')).toBe(`${portal}?lang=en`);
    expect((await reader.get()).text).toContain('<html lang="en">');
  });

  it('amounts keep "Rp" and the number together with a no-break space', async () => {
    const page = await server.request('GET', await checkoutPath({ plan_id: 'pro-monthly' }));
    expect(page.text).toContain('Rp\u00a0150.000');
    expect(page.text).not.toContain('Rp 150.000');
  });

  it('request logs never carry a link\'s secret', async () => {
    const path = await checkoutPath();
    const token = path.split('/')[2]!;
    await server.request('GET', path);
    await server.request('GET', `${path}status`);
    const portal = await portalLink();
    await server.request('GET', portal);
    const lines = logged.filter((l) => l.includes('"request"'));
    expect(lines.some((l) => l.includes('/pay/[link]/status'))).toBe(true);
    expect(lines.some((l) => l.includes('/portal/[link]/'))).toBe(true);
    expect(logged.join('\n')).not.toContain(token);
    expect(logged.join('\n')).not.toContain(portal.split('/')[2]!);
  });

  it('the hourly sweep forgets dead links a day after their end, keeping live ones (410 until then, 404 after)', async () => {
    const start = clock.now();
    const user = await server.createUser();
    const dead = await checkoutPath({ plan_id: 'pro-monthly' }, user);
    const withVa = await checkoutPath({ plan_id: 'basic-monthly' }, user);
    const va = browser(withVa);
    await va.get();
    expect((await va.post({ payment_type: 'bank_transfer', bank: 'bca' })).status).toBe(303);
    await va.get(); // the redirect after the charge shows the VA
    const unclaimed = await portalLink(user);
    const idle = await portalLink(user);
    const idleBrowser = browser(idle);
    await idleBrowser.get();
    expect((await idleBrowser.post({})).status).toBe(303);
    const ids = async () => (await dbOf(server).find(HostedSession, { user: user.id })).map((s) => s.kind);
    expect(await ids()).toHaveLength(4);

    minutes(61);
    expect((await server.request('GET', dead)).status).toBe(410);
    const sweep = (at: Date) => deleteExpiredHostedSessions({ em: dbOf(server) }, at);
    await sweep(new Date(start.getTime() + 24 * 3_600_000 + 30 * 60_000));
    expect(await ids()).toHaveLength(4 - 1); // the unclaimed portal (15 minutes) is a day past its end
    clock.set(new Date(start.getTime() + 25 * 3_600_000 + 2 * 60_000));
    await sweep(clock.now());
    // The VA's checkout lives as long as its VA (24 hours): kept.
    expect(await ids()).toEqual(['checkout']);
    expect((await server.request('GET', dead)).status).toBe(404);
    expect((await server.request('GET', unclaimed)).status).toBe(404);
    expect((await server.request('GET', withVa)).status).toBe(410);
  });
});

const PUBLIC = 'https://pay.example.id';
const basic = (c: Credentials) => `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;

/** A POST whose Host header says what the test wants (fetch would not send a forged one). */
function rawPost(url: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; body: any }> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) } }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (data += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(data) }));
    });
    req.on('error', reject);
    req.end(text);
  });
}

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
    expect(text(first.text)).toMatch(new RegExp(`Tagihan pertama sebesar ${text(id.money(total, 'IDR')).replace('.', '\\.')} \\(sudah termasuk PPN [\\d.,]+%\\) jatuh pada ${id.date(end)}`));
    // The pay button says what is paid today, never the period's price.
    const button = (html: string) => text(/<button type="submit" class="button" id="pay">([^<]+)<\/button>/.exec(html)![1]!);
    expect(button(first.text)).toBe('Mulai masa uji coba · Rp 0 hari ini');
    // PPN explained: 12 % of 11/12 of the price, 11 % in effect (Rp 16.500 on Rp 150.000).
    expect(text(first.text)).toContain('PPN 12% dihitung dari DPP nilai lain, yaitu 11/12 dari harga sebelum pajak; besarnya sama dengan 11% dari harga sebelum pajak.');
    expect(text(first.text)).toMatch(/PPN 12%<\/dt><dd>Rp.16\.500<\/dd>/);
    const english = await get('', 'en');
    expect(text(english.text)).toContain('Rp 0 today');
    expect(text(english.text)).toMatch(new RegExp(`The first charge, ${text(en.money(total, 'IDR')).replace('.', '\\.')} \\(PPN [\\d.,]+% included\\), is on ${en.date(end)}`));
    expect(button(english.text)).toBe('Start the free trial · Rp 0 today');
    expect(text(english.text)).toContain('PPN (VAT) 12% is charged on the DPP nilai lain, which is 11/12 of the price before tax; it comes to 11% of the price before tax.');
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
    expect((await get('status')).body).toMatchObject({ state: 'card_check', next: null });
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
    expect(status).toMatchObject({ state: 'trialing', next: `${server.url}/shop/thanks` });
    const done = await get();
    expect(done.text).toMatch(/Kartu Anda disimpan; tagihan pertama sebesar Rp\s150\.000 jatuh pada/);
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
    expect(page.text).toMatch(/The first bill, Rp\s150\.000, comes on [^<]+, when the free trial ends\./);
  });

  it('a double click on a trial card\'s pay button (two submits at once) pre-authorises the card once and makes one waiting subscription', async () => {
    const { user, post, get } = await openTrialCheckout('pro-trial');
    const cardChecks = () => server.running.billing.simulator!.transactions().filter((t) => t.order_id.startsWith('CARD-')).length;
    const before = cardChecks();
    const answers = await Promise.all([1, 2].map(() => post({ payment_type: 'credit_card', token: 'tok-3ds-481111-1114-double' })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 303]);
    expect(answers.find((a) => a.status === 200)!.text).toContain('class="three-ds"');
    expect(cardChecks() - before).toBe(1);
    expect(await dbOf(server).count(Subscription, { user: user.id })).toBe(1);
    expect((await get('status')).body).toMatchObject({ state: 'card_check', next: null });
  });
});
