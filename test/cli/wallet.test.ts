import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Wallet, WalletTransaction } from '../../src/db/entities/wallet.js';
import { cliEntry } from '../helpers/cli.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type Credentials, type TestServer } from '../helpers/server.js';
import { expectLedgerExact } from '../helpers/expect-ledger-exact.js';
import { postTopup, settleTopup, walletBalance } from '../helpers/topups.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

describe.each(DATABASES)('billing-admin wallet on %s', (kind) => {
  let server: TestServer;
  let alice: Credentials & { id: string };

  /** Runs the real CLI binary against the test server's database. */
  function cli(...args: string[]): Promise<CliResult> {
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [cliEntry(), ...args],
        { cwd: ROOT, env: { ...process.env, DATABASE_URL: server.db.url, SESSION_SECRET: 'cli-test', NODE_ENV: 'test' }, timeout: 60_000 },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
          let json: unknown = null;
          try {
            json = JSON.parse(stdout);
          } catch {
            /* human output */
          }
          resolve({ code, stdout, stderr, json });
        },
      );
    });
  }

  beforeAll(async () => {
    server = await startTestServer(kind);
    alice = await server.createUser();
    for (const amount of [100000, 20000]) {
      const topup = await postTopup(server, alice, { amount, payment_type: 'bank_transfer' });
      await settleTopup(server, topup.body.order_id);
    }
  });
  afterAll(() => server?.stop());
  afterEach(() => expectLedgerExact(server.running.billing.orm));

  const em = () => server.running.billing.orm.em.fork();
  /** A money value as the column stores it: minor units on SQLite, numeric on PostgreSQL. */
  const stored = (amount: string) => (kind === 'sqlite' ? Math.round(Number(amount) * 100) : amount);

  it('shows a wallet by username or id, in the API’s shape', async () => {
    const api = (await server.api('GET', '/wallet/me/', { auth: alice })).body;
    const byName = await cli('wallet', 'show', alice.username, '--json');
    expect(byName.code, byName.stderr).toBe(0);
    expect(byName.json).toEqual(api);
    const byId = await cli('--json', 'wallet', 'show', alice.id);
    expect(byId.json).toEqual(api);
    const human = await cli('wallet', 'show', alice.username);
    expect(human.stdout).toContain('120000.00 IDR');
  });

  it('exits 4 for an unknown user', async () => {
    const res = await cli('wallet', 'show', 'nobody-by-that-name', '--json');
    expect(res.code).toBe(4);
    expect(res.json).toEqual({ error: { code: 'not_found', message: expect.stringMatching(/not found/) } });
    expect(res.stderr).toMatch(/not found/);
  });

  it('lists the ledger newest first, like the API', async () => {
    const res = await cli('wallet', 'transactions', alice.username, '--json');
    expect(res.code, res.stderr).toBe(0);
    const api = (await server.api('GET', '/wallet/transactions/?page_size=100', { auth: alice })).body.results;
    expect(res.json).toEqual(api);
    expect(res.json.at(-1)).toMatchObject({ kind: 'credit', amount: '100000.00', balance_after: '100000.00', source: 'topup' });
    const limited = await cli('wallet', 'transactions', alice.username, '--limit', '1', '--json');
    expect(limited.json).toHaveLength(1);
    expect(limited.stderr).toMatch(/newest 1 of/);
    expect((await cli('wallet', 'transactions', alice.username, '--limit', 'zero')).code).toBe(2);
  });

  it('adjusts a wallet up and down with a reason; a debit cannot go below zero', async () => {
    const user = await server.createUser();
    const credit = await cli('wallet', 'adjust', user.username, '25000', '--reason', 'goodwill after outage', '--json');
    expect(credit.code, credit.stderr).toBe(0);
    expect(credit.json.transaction).toMatchObject({ kind: 'credit', amount: '25000.00', balance_after: '25000.00', source: 'adjustment', description: 'Credit from support' });
    expect(credit.json.wallet).toMatchObject({ balance: '25000.00', currency: 'IDR' });

    const debit = await cli('wallet', 'adjust', user.id, '-10000', '--reason', 'double credit', '--json');
    expect(debit.code, debit.stderr).toBe(0);
    expect(debit.json.transaction).toMatchObject({ kind: 'debit', amount: '10000.00', balance_after: '15000.00' });
    expect(await walletBalance(server, user)).toBe('15000.00');

    const overdraw = await cli('wallet', 'adjust', user.username, '-15000.01', '--reason', 'too much', '--json');
    expect(overdraw.code).not.toBe(0);
    const whole = await cli('wallet', 'adjust', user.username, '-15001', '--reason', 'too much', '--json');
    expect(whole.code).toBe(3);
    expect(whole.stderr).toMatch(/insufficient_funds/);
    expect(await walletBalance(server, user)).toBe('15000.00');

    const all = await cli('wallet', 'adjust', user.username, '-15000', '--reason', 'close out', '--json');
    expect(all.json.wallet.balance).toBe('0.00');
    // The ledger entries are visible to the user too.
    const ledger = (await server.api('GET', '/wallet/transactions/', { auth: user })).body;
    expect(ledger.count).toBe(3);
  });

  it.each([
    ['zero', ['0']],
    ['decimals for IDR', ['100.50']],
    ['too many decimals', ['100.001']],
    ['not a number', ['lots']],
    ['absurdly long', ['9'.repeat(40)]],
  ])('refuses an amount that is %s with exit status 2', async (_name, amount) => {
    const before = await em().count(WalletTransaction, {});
    const res = await cli('wallet', 'adjust', alice.username, ...amount, '--reason', 'x', '--json');
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/amount/);
    expect(await em().count(WalletTransaction, {})).toBe(before);
  });

  it('requires a reason', async () => {
    expect((await cli('wallet', 'adjust', alice.username, '1000')).code).toBe(2);
    const blank = await cli('wallet', 'adjust', alice.username, '1000', '--reason', '   ');
    expect(blank.code).toBe(2);
    expect(blank.stderr).toMatch(/reason/);
  });

  it('posts an adjustment with a reference once, and refuses the reference for a different amount', async () => {
    const user = await server.createUser();
    const first = await cli('wallet', 'adjust', user.username, '5000', '--reason', 'ticket', '--reference', 'T-1', '--json');
    const second = await cli('wallet', 'adjust', user.username, '5000', '--reason', 'ticket', '--reference', 'T-1', '--json');
    expect(second.json.transaction.id).toBe(first.json.transaction.id);
    expect(second.json.wallet.balance).toBe('5000.00');
    const other = await cli('wallet', 'adjust', user.username, '7000', '--reason', 'ticket', '--reference', 'T-1', '--json');
    expect(other.code).toBe(3);
    expect(await walletBalance(server, user)).toBe('5000.00');
  });

  it('verifies every wallet: exit 0 when exact', async () => {
    const res = await cli('wallet', 'verify', '--json');
    expect(res.code, res.stderr).toBe(0);
    expect(res.json).toMatchObject({ ok: true, discrepancies: [] });
    expect(res.json.wallets_checked).toBeGreaterThan(0);
    expect(res.json.entries_checked).toBeGreaterThan(0);
  });

  it('detects a balance tampered with in the database: exit 1 and a report', async () => {
    const wallet = await em().findOneOrFail(Wallet, { user: alice.id });
    const conn = em().getConnection();
    await conn.execute('update wallets set balance = ? where id = ?', [stored('999999.00'), wallet.id]);
    try {
      const res = await cli('wallet', 'verify', '--json');
      expect(res.code).toBe(1);
      expect(res.json.ok).toBe(false);
      expect(res.json.discrepancies).toEqual([
        expect.objectContaining({ wallet_id: wallet.id, username: alice.username, balance: '999999.00', ledger_sum: wallet.balance }),
      ]);
      expect(res.json.discrepancies[0].issues.join('\n')).toMatch(/differs from the ledger sum/);
      expect(res.stderr).toMatch(/1 wallet\(s\) differ/);
      const human = await cli('wallet', 'verify');
      expect(human.code).toBe(1);
      expect(human.stdout).toContain(alice.username);
      expect(human.stdout).toContain('999999.00');
    } finally {
      await conn.execute('update wallets set balance = ? where id = ?', [stored(wallet.balance), wallet.id]);
    }
    expect((await cli('wallet', 'verify', '--json')).code).toBe(0);
  });

  it('detects a broken balance_after chain even when the balance matches the sum', async () => {
    const user = await server.createUser();
    await cli('wallet', 'adjust', user.username, '1000', '--reason', 'a');
    await new Promise((r) => setTimeout(r, 5));
    const second = await cli('wallet', 'adjust', user.username, '2000', '--reason', 'b', '--json');
    const conn = em().getConnection();
    await conn.execute('update wallet_transactions set balance_after = ? where id = ?', [stored('2500.00'), second.json.transaction.id]);
    try {
      const res = await cli('wallet', 'verify', '--json');
      expect(res.code).toBe(1);
      const mine = res.json.discrepancies.find((d: { username: string }) => d.username === user.username);
      expect(mine.issues.join('\n')).toMatch(new RegExp(`${second.json.transaction.id}|do not chain`));
      expect(mine.balance).toBe(mine.ledger_sum);
    } finally {
      await conn.execute('update wallet_transactions set balance_after = ? where id = ?', [stored('3000.00'), second.json.transaction.id]);
    }
  });
});
