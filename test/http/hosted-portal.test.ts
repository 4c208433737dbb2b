import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HostedSession } from '../../src/db/entities/hosted-session.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Plan } from '../../src/db/entities/plan.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { Topup } from '../../src/db/entities/topup.js';
import { User } from '../../src/db/entities/user.js';
import { ManualClock } from '../../src/domain/clock.js';
import { previewPlanChange } from '../../src/services/subscriptions/change-subscription-plan.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type HttpResult, type TestServer } from '../helpers/server.js';
import { activeSubscription, dbOf, openInvoice, type TestUser } from '../helpers/subscriptions.js';

const SHOP = 'https://shop.example.com';

/*
 * The customer portal's money rules over HTTP, as a browser sends its forms: typed top-up
 * amounts read strictly in the page's language, plan changes confirmed at the price they
 * previewed (a signed quote), and pending changes that say what they wait for and can be withdrawn.
 */
describe.each(DATABASES)('the customer portal\'s money rules (%s)', (kind) => {
  let server: TestServer;
  // The service's clock, moved by the tests; the simulator keeps real time.
  const clock = new ManualClock(new Date('2026-03-03T03:00:00Z'));

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: { HOSTED_RETURN_ORIGINS: SHOP } });
    await server.seedPlans([
      ...STANDARD_PLANS,
      { slug: 'team-monthly', name: 'Team', description: 'A plan whose price the shop moves', price: 300000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 7 },
    ]);
  });
  beforeEach(() => clock.set(new Date('2026-03-03T03:00:00Z')));
  afterAll(() => server?.stop());

  /** A browser on one portal link: the landing page, its claim, then the portal's forms with its cookie and CSRF token. */
  async function openPortal(user: TestUser, lang: 'id' | 'en' | null = null) {
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
      path,
      get: async (params = '') => keep(await server.request('GET', `${path}${query}${query && params ? '&' : params ? '?' : ''}${params}`, { headers: headers() })),
      at: async (suffix: string) => keep(await server.request('GET', `${path}${suffix}${query}`, { headers: headers() })),
      post: async (action: string, fields: Record<string, string>) =>
        keep(await server.request('POST', `${path}${action}${query}`, {
          headers: { ...headers(), 'content-type': 'application/x-www-form-urlencoded' },
          rawBody: new URLSearchParams({ csrf_token: csrf ?? '', ...fields }).toString(),
        })),
    };
    await portal.get();
    const claimed = await portal.post('', {});
    expect(claimed.status).toBe(303);
    const page = await portal.get();
    expect(page.text).toContain('id="sub-title"');
    return portal;
  }

  async function subscriber(plan = 'basic-monthly') {
    const user = await server.createUser();
    const { subscription } = await activeSubscription(server, user, plan);
    return { user, subscriptionId: subscription.id as string };
  }

  const rupiahOf = (text: string) => `${text.replace(/[^\d]/g, '')}.00`;
  const field = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1];
  const previewNet = (html: string) => rupiahOf(/id="preview-net">([^<]+)</.exec(html)![1]!);
  const payments = (subscriptionId: string) => dbOf(server).count(Payment, { subscription: subscriptionId });
  const minutes = (n: number) => clock.advance(n * 60_000);

  describe('a typed top-up amount', () => {
    const topupLinks = (user: TestUser) => dbOf(server).find(HostedSession, { user: user.id, kind: 'checkout' });

    it('"100000.00" on a Bahasa page is refused next to the field, in Bahasa, with the value kept; no top-up is made', async () => {
      const { user } = await subscriber();
      const portal = await openPortal(user);
      const res = await portal.post('topup', { amount: '100000.00' });
      expect(res.status).toBe(400);
      expect(res.text).toContain('id="topup-amount-error"');
      expect(res.text).toContain('Tulis jumlah dalam rupiah penuh tanpa desimal');
      expect(res.text).toMatch(/<input id="topup-amount"[^>]* value="100000.00"[^>]* aria-describedby="topup-hint topup-amount-error" aria-invalid="true">/);
      expect(await topupLinks(user)).toHaveLength(0);
      expect(await dbOf(server).count(Topup, { user: user.id })).toBe(0);
    });

    it('a rule\'s bound is said in words with the bound as rupiah, never as the API\'s field name', async () => {
      const { user } = await subscriber();
      const portal = await openPortal(user);
      const res = await portal.post('topup', { amount: '5.000' });
      expect(res.status).toBe(400);
      expect(res.text).toContain('Jumlah paling sedikit Rp\u00a010.000.');
      expect(res.text).not.toContain('topup_amount');
      expect(res.text).toContain('aria-invalid="true"');
      const english = await openPortal(user, 'en');
      const tooMuch = await english.post('topup', { amount: '60,000,000' });
      expect(tooMuch.text).toContain('The amount can be at most Rp\u00a050.000.000.');
      expect(await topupLinks(user)).toHaveLength(0);
    });

    it('"100.000" in Bahasa and "100,000" in English are Rp 100.000; "100.000" in English is refused', async () => {
      const { user } = await subscriber();
      const bahasa = await openPortal(user);
      const id = await bahasa.post('topup', { amount: 'Rp 100.000' });
      expect(id.status).toBe(303);
      expect(id.headers.get('location')).toMatch(/\/pay\/[A-Za-z0-9_-]{43}\/$/);
      const english = await openPortal(user, 'en');
      const en = await english.post('topup', { amount: '100,000' });
      expect(en.status).toBe(303);
      expect((await topupLinks(user)).map((s) => s.topupAmount)).toEqual(['100000.00', '100000.00']);
      const dotted = await english.post('topup', { amount: '100.000' });
      expect(dotted.status).toBe(400);
      expect(dotted.text).toContain('Write the amount in whole rupiah without decimals');
      expect(await topupLinks(user)).toHaveLength(2);
    });
  });

  describe('a plan change confirms its quote', () => {
    it('confirmed a minute after its preview, it charges exactly the amount previewed, and the page says what the change waits for', async () => {
      const { user, subscriptionId } = await subscriber();
      minutes(3 * 24 * 60 + 17);
      const portal = await openPortal(user);
      const preview = await portal.get('change=pro-monthly');
      const net = previewNet(preview.text);
      minutes(1);
      // Priced at the confirm instead, the same change costs another amount: the quote is what holds it.
      const ctx = { em: dbOf(server), config: server.config, clock: server.running.billing.clock };
      const atConfirm = await previewPlanChange(ctx, await ctx.em.findOneOrFail(User, user.id), subscriptionId, 'pro-monthly');
      expect(atConfirm.terms!.net).not.toBe(net);
      const confirmed = await portal.post('change-plan', { plan_id: 'pro-monthly', quote: field(preview.text, 'quote')! });
      expect(confirmed.status).toBe(303);
      expect(confirmed.headers.get('location')).toMatch(/\?done=change-pending$/);
      const payment = await dbOf(server).findOneOrFail(Payment, { subscription: subscriptionId }, { orderBy: { createdAt: 'desc' }, populate: ['invoice'] });
      expect(payment.grossAmount).toBe(net);
      expect(payment.invoice!.totalAmount).toBe(net);

      const after = await portal.get('done=change-pending');
      const words = `Perubahan ke Pro menunggu pembayaran Rp\u00a0${Number(net.replace('.00', '')).toLocaleString('id-ID')}`;
      expect(after.text).toContain(words);
      expect(after.text).not.toContain('Paket sudah diganti');
      expect(after.text).toContain('id="withdraw-change"');
      expect(after.text).toContain('Bayar perubahan ke Pro');
      expect((await dbOf(server).findOneOrFail(Subscription, subscriptionId, { populate: ['plan'] })).plan.slug).toBe('basic-monthly');
    });

    it('a price changed between preview and confirm: the new preview is shown and nothing is charged', async () => {
      const { user, subscriptionId } = await subscriber();
      minutes(60);
      const portal = await openPortal(user);
      const preview = await portal.get('change=team-monthly');
      const before = await payments(subscriptionId);
      await dbOf(server).nativeUpdate(Plan, { slug: 'team-monthly' }, { price: '360000.00' });
      try {
        minutes(1);
        const res = await portal.post('change-plan', { plan_id: 'team-monthly', quote: field(preview.text, 'quote')! });
        expect(res.status).toBe(409);
        expect(res.text).toContain('Harga perubahan ini sudah berubah sejak Anda melihatnya');
        expect(res.text).toContain('id="preview"');
        expect(Number(previewNet(res.text))).toBeGreaterThan(Number(previewNet(preview.text)));
        expect(await payments(subscriptionId)).toBe(before);
        const sub = await dbOf(server).findOneOrFail(Subscription, subscriptionId, { populate: ['plan'] });
        expect([sub.plan.slug, sub.pendingChange]).toEqual(['basic-monthly', null]);
        // The new preview's own quote goes through at the new price.
        const again = await portal.post('change-plan', { plan_id: 'team-monthly', quote: field(res.text, 'quote')! });
        expect(again.status).toBe(303);
        const payment = await dbOf(server).findOneOrFail(Payment, { subscription: subscriptionId }, { orderBy: { createdAt: 'desc' } });
        expect(payment.grossAmount).toBe(previewNet(res.text));
      } finally {
        await dbOf(server).nativeUpdate(Plan, { slug: 'team-monthly' }, { price: '300000.00' });
      }
    });

    it('a forged quote, one of another page, and an 11-minute-old quote each show the new preview and charge nothing', async () => {
      const { user, subscriptionId } = await subscriber();
      const portal = await openPortal(user);
      const preview = await portal.get('change=pro-monthly');
      const quote = field(preview.text, 'quote')!;
      const [body, mac] = quote.split('.') as [string, string];
      const fields = JSON.parse(Buffer.from(body, 'base64url').toString());
      fields[4] = '1.00';
      const forged = `${Buffer.from(JSON.stringify(fields)).toString('base64url')}.${mac}`;
      const before = await payments(subscriptionId);

      const refused = await portal.post('change-plan', { plan_id: 'pro-monthly', quote: forged });
      expect(refused.status).toBe(409);
      expect(refused.text).toContain('Harga ini tidak bisa dikonfirmasi lagi');
      expect(refused.text).toContain('id="preview"');
      const missing = await portal.post('change-plan', { plan_id: 'pro-monthly' });
      expect(missing.status).toBe(409);
      // A genuine quote of another portal page of the same customer.
      const other = await openPortal(user);
      const elsewhere = await other.post('change-plan', { plan_id: 'pro-monthly', quote });
      expect(elsewhere.status).toBe(409);

      minutes(11);
      const stale = await portal.post('change-plan', { plan_id: 'pro-monthly', quote });
      expect(stale.status).toBe(409);
      expect(stale.text).toContain('sudah lebih dari 10 menit');
      expect(stale.text).toContain('id="preview-net"');
      expect(await payments(subscriptionId)).toBe(before);
      expect((await dbOf(server).findOneOrFail(Subscription, subscriptionId)).pendingChange).toBeNull();
    });
  });

  describe('a pending change', () => {
    it('is withdrawn from the portal: its payment is canceled here and at the gateway, the plan stays', async () => {
      const { user, subscriptionId } = await subscriber();
      const portal = await openPortal(user, 'en');
      const preview = await portal.get('change=pro-monthly');
      expect((await portal.post('change-plan', { plan_id: 'pro-monthly', quote: field(preview.text, 'quote')! })).status).toBe(303);
      const changeId = (await dbOf(server).findOneOrFail(Subscription, subscriptionId)).pendingChange!.payment_id;
      const payment = await dbOf(server).findOneOrFail(Payment, changeId);
      expect(payment.status).toBe('pending');

      const withdrawn = await portal.post('withdraw-change', {});
      expect(withdrawn.status).toBe(303);
      expect(withdrawn.headers.get('location')).toMatch(/done=withdraw/);
      expect((await portal.get('done=withdraw')).text).toContain('The plan change is withdrawn; you stay on Basic.');
      const sub = await dbOf(server).findOneOrFail(Subscription, subscriptionId, { populate: ['plan'] });
      expect([sub.plan.slug, sub.pendingChange]).toEqual(['basic-monthly', null]);
      expect((await dbOf(server).findOneOrFail(Payment, payment.id)).status).toBe('canceled');
      const atGateway = server.running.billing.simulator!.transactions().find((t) => t.order_id === payment.orderId)!;
      expect(atGateway.transaction_status).toBe('cancel');
      // Nothing left to withdraw: said in the page's words.
      const nothing = await portal.post('withdraw-change', {});
      expect(nothing.status).toBe(400);
      expect(nothing.text).toContain('There is no plan change to withdraw.');
    });

    it('a change scheduled for the next renewal is withdrawn too', async () => {
      const { user, subscriptionId } = await subscriber();
      const scheduled = await server.api('POST', `/subscriptions/${subscriptionId}/change-plan/`, { auth: user, body: { plan_id: 'weekly', immediate: false } });
      expect(scheduled.status).toBe(200);
      const portal = await openPortal(user);
      expect((await portal.get()).text).toContain('id="withdraw-scheduled"');
      expect((await portal.post('withdraw-change', {})).status).toBe(303);
      expect((await dbOf(server).findOneOrFail(Subscription, subscriptionId)).pendingPlan).toBeNull();
    });

    it('cancel at the period end while a change waits for its payment says what becomes of that bill', async () => {
      const { user } = await subscriber();
      const portal = await openPortal(user);
      const preview = await portal.get('change=pro-monthly');
      await portal.post('change-plan', { plan_id: 'pro-monthly', quote: field(preview.text, 'quote')! });
      expect((await portal.post('cancel', { when: 'period_end', confirm: 'yes' })).status).toBe(303);
      const page = await portal.get('done=cancel');
      const endsAt = /id="ends-at">([^<]+)</.exec(page.text)![1]!;
      expect(endsAt).toContain('Perubahan ke Pro masih menunggu pembayaran');
      expect(endsAt).toContain('jika tidak, perubahan batal tanpa biaya');
    });
  });

  it('cancel at the period end beside an open bill says what becomes of the bill, not only "no more bills"', async () => {
    const { user, subscriptionId } = await subscriber();
    await openInvoice(server, subscriptionId, '20000.00');
    const portal = await openPortal(user, 'en');
    expect((await portal.post('cancel', { when: 'period_end', confirm: 'yes' })).status).toBe(303);
    const endsAt = /id="ends-at">([^<]+)</.exec((await portal.get('done=cancel')).text)![1]!;
    expect(endsAt).toMatch(/^The subscription ends on .+\. The open bill of Rp\u00a020\.000 can still be paid until then; if it is unpaid, it is canceled when the subscription ends\. After that there are no more bills\.$/);
  });

  describe('leaving', () => {
    const stored = (id: string) => dbOf(server).findOneOrFail(Subscription, id, { refresh: true });

    it('a cancel button only asks: the form sent again asks again; only the confirmation cancels; "continue" takes it back', async () => {
      const { user, subscriptionId } = await subscriber();
      const portal = await openPortal(user);
      for (let tap = 0; tap < 2; tap++) {
        const asked = await portal.post('cancel', { when: 'period_end' });
        expect(asked.status).toBe(200);
        expect(asked.text).toContain('id="confirm-cancel-end"');
        expect(asked.text).toContain('Sampai tanggal itu Anda masih bisa berubah pikiran di sini.');
        expect(await stored(subscriptionId)).toMatchObject({ status: 'active', cancelAtPeriodEnd: false });
      }
      expect((await portal.post('cancel', { when: 'period_end', confirm: 'yes' })).status).toBe(303);
      expect((await stored(subscriptionId)).cancelAtPeriodEnd).toBe(true);
      expect((await portal.get('done=cancel')).text).toContain('id="undo-cancel"');
      expect((await portal.post('undo-cancel', {})).status).toBe(303);
      expect(await stored(subscriptionId)).toMatchObject({ status: 'active', cancelAtPeriodEnd: false, cancelReason: null });
      const kept = await portal.get('done=undo-cancel');
      expect(kept.text).toContain('Langganan Anda berlanjut dan diperpanjang seperti biasa.');
      expect(kept.text).not.toContain('id="undo-cancel"');

      const now = await portal.post('cancel', { when: 'now' });
      expect(now.text).toContain('id="confirm-cancel-now"');
      expect((await stored(subscriptionId)).status).toBe('active');
      expect((await portal.post('cancel', { when: 'now', confirm: 'yes' })).status).toBe(303);
      expect((await stored(subscriptionId)).status).toBe('canceled');
    });

    it('"continue" is gone once the period has ended, and a late form is refused with the cancel standing', async () => {
      const { user, subscriptionId } = await subscriber();
      const portal = await openPortal(user, 'en');
      await portal.post('cancel', { when: 'period_end', confirm: 'yes' });
      expect((await portal.get()).text).toContain('id="undo-cancel"');
      clock.set((await stored(subscriptionId)).nextBillingDate!);
      // A month later: a new link (the first one has run out).
      const later = await openPortal(user, 'en');
      expect((await later.get()).text).not.toContain('id="undo-cancel"');
      const late = await later.post('undo-cancel', {});
      expect(late.status).toBe(400);
      expect((await stored(subscriptionId)).cancelAtPeriodEnd).toBe(true);
    });
  });

  it('a trial\'s plan change confirms its quote too (nothing is charged, the trial runs on)', async () => {
    const user = await server.createUser();
    const made = await server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'pro-trial', payment_type: 'bank_transfer' } });
    expect(made.status).toBe(201);
    expect(made.body.subscription.status).toBe('trialing');
    const portal = await openPortal(user);
    const preview = await portal.get('change=basic-monthly');
    expect(preview.text).toContain('masa uji coba tetap berjalan');
    const confirmed = await portal.post('change-plan', { plan_id: 'basic-monthly', quote: field(preview.text, 'quote')! });
    expect(confirmed.status).toBe(303);
    const sub = await dbOf(server).findOneOrFail(Subscription, made.body.subscription.id, { populate: ['plan'] });
    expect([sub.plan.slug, sub.status]).toEqual(['basic-monthly', 'trialing']);
    expect(await payments(sub.id)).toBe(0);
  });

  describe('prices as they will be charged, with a seller that charges PPN', () => {
    let taxed: TestServer;
    beforeAll(async () => {
      taxed = await startTestServer(kind, { clock, env: { HOSTED_RETURN_ORIGINS: SHOP, BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000' } });
      await taxed.seedPlans([
        { slug: 'basic-tax', name: 'Basic', description: 'PPN added', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 1, tax_behavior: 'exclusive' },
        { slug: 'pro-tax', name: 'Pro', description: 'PPN added', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 2, tax_behavior: 'exclusive' },
        { slug: 'flat', name: 'Flat', description: 'PPN included', price: 166500, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 3, tax_behavior: 'inclusive' },
      ]);
    });
    afterAll(() => taxed?.stop());

    it('the plan line and the picker show the price with PPN, as its invoice charges it, and one line says how PPN is worked out', async () => {
      const user = await taxed.createUser();
      const { payment } = await activeSubscription(taxed, user, 'basic-tax');
      expect(payment.amount ?? payment.gross_amount).toBe('55500.00');
      const saved = server;
      server = taxed;
      try {
        const portal = await openPortal(user);
        const page = (await portal.get()).text;
        expect(/id="plan-price">([^<]+)</.exec(page)![1]).toBe('Rp\u00a055.500');
        expect(page).toContain('Harga Basic Rp\u00a050.000 belum termasuk PPN. PPN 12% dihitung dari DPP nilai lain, yaitu 11/12 dari harga (Rp\u00a045.833,33): PPN Rp\u00a05.500, sehingga yang ditagih Rp\u00a055.500 per periode.');
        expect(page).toContain('>Pro · Rp\u00a0166.500 termasuk PPN</option>');
        expect(page).toContain('>Flat · Rp\u00a0166.500 termasuk PPN</option>');
        expect(page).toContain('id="plans-tax-note"');
      } finally {
        server = saved;
      }
    });
  });

  it('a not-found says what was not found (an invoice, a credit note), and a refused state says it in the page\'s words', async () => {
    const { user } = await subscriber();
    const portal = await openPortal(user);
    const missing = '00000000-0000-4000-8000-000000000000';
    const noInvoice = await portal.at(`invoices/${missing}/pdf`);
    expect([noInvoice.status, /class="error" role="alert">([^<]+)</.exec(noInvoice.text)?.[1]]).toEqual([404, 'Faktur ini tidak ditemukan.']);
    const noNote = await portal.at(`credit-notes/${missing}/pdf`);
    expect([noNote.status, /class="error" role="alert">([^<]+)</.exec(noNote.text)?.[1]]).toEqual([404, 'Nota kredit ini tidak ditemukan.']);
    // A pause sent again from a page shown before the first: said in Bahasa, not the rule's English.
    expect((await portal.post('pause', {})).status).toBe(303);
    const again = await portal.post('pause', {});
    expect([again.status, /class="error" role="alert">([^<]+)</.exec(again.text)?.[1]]).toEqual([400, 'Ini tidak bisa dilakukan selama langganan dijeda.']);
  });
});
