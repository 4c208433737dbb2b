import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { User } from '../../src/db/entities/user.js';
import { Wallet } from '../../src/db/entities/wallet.js';
import { ManualClock } from '../../src/domain/clock.js';
import { postWalletEntry } from '../../src/services/wallet/wallet-ledger.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type Credentials, type HttpResult, type TestServer } from '../helpers/server.js';
import { expectLedgerExact } from '../helpers/expect-ledger-exact.js';
import { postTopup, settleTopup, walletBalance } from '../helpers/topups.js';

const SHOP = 'https://shop.example.com';

describe.each(DATABASES)('wallet on %s', (kind) => {
  let server: TestServer;
  const clock = new ManualClock(new Date('2026-03-01T08:00:00Z'));

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: { HOSTED_RETURN_ORIGINS: SHOP } });
  });
  afterAll(() => server?.stop());
  afterEach(() => expectLedgerExact(server.running.billing.orm));

  const em = () => server.running.billing.orm.em.fork();
  let user: Credentials | undefined;

  /** A ledger entry posted the way other features post them (refunds, proration, payments). */
  async function post(userId: string, kind: 'credit' | 'debit', amount: string, source: 'refund' | 'payment' | 'proration', referenceId: string) {
    return em().transactional((tx) =>
      postWalletEntry(
        { em: tx, config: server.config, clock },
        { user: tx.getReference(User, userId), kind, amount, currency: 'IDR', source, referenceId, description: `${source} ${referenceId}` },
      ),
    );
  }

  async function topUp(user: Credentials, amount: number): Promise<string> {
    const res = await postTopup(server, user, { amount, payment_type: 'bank_transfer' });
    expect(res.status, res.text).toBe(201);
    await settleTopup(server, res.body.order_id);
    return res.body.id;
  }

  it('a user without a wallet is answered an empty one in the wallet currency, by GET /wallet/me/ and staff\'s GET /admin/wallets/{user}/, and no wallet row is stored; the first entry stores it with the id answered', async () => {
    const user = await server.createUser();
    const staff = await server.createUser({ isStaff: true });
    const first = await server.api('GET', '/wallet/me/', { auth: user });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ id: expect.any(String), balance: '0.00', currency: 'IDR', is_active: true });
    const second = await server.api('GET', '/wallet/me', { auth: user });
    expect(second.body).toEqual(first.body);
    const staffView = await server.api('GET', `/admin/wallets/${user.username}/`, { auth: staff });
    expect(staffView.status, staffView.text).toBe(200);
    expect(staffView.body).toMatchObject({ user: { id: user.id }, wallet: first.body, transactions: { count: 0, results: [] } });
    expect(await em().count(Wallet, { user: user.id })).toBe(0);

    await post(user.id, 'credit', '1500.00', 'refund', `first-entry-${user.id}`);
    const stored = await em().findOneOrFail(Wallet, { user: user.id });
    expect(stored.id).toBe(first.body.id);
    const after = await server.api('GET', '/wallet/me/', { auth: user });
    expect(after.body).toMatchObject({ id: first.body.id, balance: '1500.00' });
    expect(await em().count(Wallet, { user: user.id })).toBe(1);
  });

  it('concurrent first lookups all answer the same wallet, and store none', async () => {
    const user = await server.createUser();
    const answers = await Promise.all(Array.from({ length: 6 }, () => server.api('GET', '/wallet/me/', { auth: user })));
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(await em().count(Wallet, { user: user.id })).toBe(0);
  });

  it('the customer portal opens for a user without a wallet, and stores no wallet', async () => {
    const user = await server.createUser();
    const made = await server.api('POST', '/portal-sessions/', { auth: user, body: { return_url: `${SHOP}/account` } });
    expect(made.status, made.text).toBe(201);
    const path = `${new URL(made.body.url).pathname}?lang=en`;
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
    expect(page.text).toMatch(/Wallet/);
    expect(await em().count(Wallet, { user: user.id })).toBe(0);
  });

  it('requires authentication', async () => {
    expect((await server.api('GET', '/wallet/me/')).status).toBe(401);
    expect((await server.api('GET', '/wallet/transactions/')).status).toBe(401);
  });

  it('lists no transactions for a user without a wallet, without creating one', async () => {
    const user = await server.createUser();
    const res = await server.api('GET', '/wallet/transactions/', { auth: user });
    expect(res.body).toEqual({ count: 0, next: null, previous: null, results: [] });
    expect(await em().count(Wallet, { user: user.id })).toBe(0);
  });

  it('lists the ledger newest first with balance_after, paginated, only the caller’s', async () => {
    const user = await server.createUser();
    const other = await server.createUser();
    const first = await topUp(user, 100000);
    clock.advance(60_000);
    await post(user.id, 'debit', '30000.00', 'payment', 'pay-1');
    clock.advance(60_000);
    await post(user.id, 'credit', '5000.50', 'refund', 'refund-1');
    clock.advance(60_000);
    await topUp(other, 50000);

    const res = await server.api('GET', '/wallet/transactions/', { auth: user });
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(3);
    expect(res.body.results.map((t: Record<string, unknown>) => [t.kind, t.amount, t.balance_after, t.source])).toEqual([
      ['credit', '5000.50', '75000.50', 'refund'],
      ['debit', '30000.00', '70000.00', 'payment'],
      ['credit', '100000.00', '100000.00', 'topup'],
    ]);
    expect(res.body.results[2]).toMatchObject({ reference_id: first, description: expect.stringMatching(/^Top-up TOPUP-/) });
    expect(await walletBalance(server, user)).toBe('75000.50');

    const page1 = await server.api('GET', '/wallet/transactions/?page_size=2', { auth: user });
    const page2 = await server.api('GET', '/wallet/transactions/?page_size=2&page=2', { auth: user });
    expect(page1.body.results).toHaveLength(2);
    expect(page1.body.next).toMatch(/page=2/);
    expect(page2.body.results).toHaveLength(1);
    expect(page2.body.previous).toMatch(/page=1/);
    expect([...page1.body.results, ...page2.body.results].map((t: { id: string }) => t.id)).toEqual(res.body.results.map((t: { id: string }) => t.id));
    expect((await server.api('GET', '/wallet/transactions/?page=5', { auth: user })).body).toMatchObject({ count: 3, results: [] });
  });

  it('breaks ties of the same instant by id, so pages never overlap', async () => {
    const user = await server.createUser();
    for (let i = 0; i < 5; i++) await post(user.id, 'credit', '1000.00', 'refund', `tie-${user.id}-${i}`);
    const all = await server.api('GET', '/wallet/transactions/?page_size=100', { auth: user });
    const ids = all.body.results.map((t: { id: string }) => t.id);
    expect(ids).toEqual([...ids].sort().reverse());
    const paged: string[] = [];
    for (let page = 1; page <= 3; page++) {
      paged.push(...(await server.api('GET', `/wallet/transactions/?page_size=2&page=${page}`, { auth: user })).body.results.map((t: { id: string }) => t.id));
    }
    expect(paged).toEqual(ids);
  });

  it.each([['page=0'], ['page=-1'], ['page=abc'], ['page_size=0'], ['page_size=101'], ['page_size=1.5']])('refuses %s with 400', async (query) => {
    user ??= await server.createUser();
    const res = await server.api('GET', `/wallet/transactions/?${query}`, { auth: user });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_error');
  });
});
