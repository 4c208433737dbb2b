import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type HttpResult, type TestServer } from '../helpers/server.js';
import { activeSubscription, type TestUser } from '../helpers/subscriptions.js';

const SHOP = 'https://shop.example.com';
const DAY = 24 * 60 * 60 * 1000;

/*
 * The portal's wallet entries speak the page's language: a plan change's unused time credited to
 * the wallet reads "Sisa waktu Pro yang tidak terpakai setelah pindah ke Basic" in Bahasa (it read
 * "Unused time on Pro after moving to Basic"), and a support adjustment without words of its own
 * "Kredit dari tim dukungan"; in English, the English words. The API keeps the stored description.
 */
describe.each(DATABASES)("the portal's wallet entries in the page's language (%s)", (kind) => {
  let server: TestServer;
  const clock = new ManualClock(new Date('2026-03-03T03:00:00Z'));
  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: { HOSTED_RETURN_ORIGINS: SHOP } });
    await server.seedPlans(STANDARD_PLANS);
  }, 120_000);
  afterAll(() => server?.stop());

  /** The portal page as a browser opens its link (claimed with the landing page's form), in `lang`. */
  async function portalText(user: TestUser, lang: 'id' | 'en'): Promise<string> {
    const made = await server.api('POST', '/portal-sessions/', { auth: user, body: { return_url: `${SHOP}/account` } });
    const path = `${new URL(made.body.url).pathname}?lang=${lang}`;
    let cookie = '';
    const keep = (res: HttpResult) => {
      const set = res.headers.get('set-cookie');
      if (set) cookie = set.split(';')[0]!;
      return res;
    };
    const landing = keep(await server.request('GET', path));
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(landing.text)?.[1] ?? '';
    keep(await server.request('POST', path, { headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, rawBody: new URLSearchParams({ csrf_token: csrf }).toString() }));
    const page = await server.request('GET', path, { headers: { cookie } });
    expect(page.status).toBe(200);
    return page.text.replace(/\s+/g, ' ');
  }

  it('a downgrade\'s unused time reads in Bahasa in the Bahasa portal, in English in the English one; the API keeps the stored words', async () => {
    const user = await server.createUser();
    const { subscription } = await activeSubscription(server, user, 'pro-monthly');
    clock.advance(10 * DAY);
    const down = await server.api('POST', `/subscriptions/${subscription.id}/change-plan/`, { auth: user, body: { plan_id: 'basic-monthly' } });
    expect(down.status, down.text).toBe(200);

    const bahasa = await portalText(user, 'id');
    expect(bahasa).toContain('Sisa waktu Pro yang tidak terpakai setelah pindah ke Basic');
    expect(bahasa).not.toContain('Unused time');
    const english = await portalText(user, 'en');
    expect(english).toContain('Unused time on Pro after moving to Basic');
    const ledger = await server.api('GET', '/wallet/me/transactions/', { auth: user });
    if (ledger.status === 200) expect(JSON.stringify(ledger.body)).toContain('Unused time on Pro after moving to Basic');
  });
});
