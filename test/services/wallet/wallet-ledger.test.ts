import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { User } from '../../../src/db/entities/user.js';
import { Wallet, WalletTransaction } from '../../../src/db/entities/wallet.js';
import { DomainError } from '../../../src/domain/errors.js';
import { add, compare, subtract, ZERO } from '../../../src/domain/money.js';
import { getOrCreateWallet, lockWalletsOf, postWalletDebits, postWalletEntry, type WalletDebit, type WalletEntryInput } from '../../../src/services/wallet/wallet-ledger.js';
import { DATABASES } from '../../helpers/database.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { expectLedgerExact } from '../../helpers/expect-ledger-exact.js';

describe.each(DATABASES)('wallet ledger on %s', (kind) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(kind);
  });
  afterAll(() => server?.stop());
  afterEach(() => expectLedgerExact(server.running.billing.orm));

  const orm = () => server.running.billing.orm;
  const ctxFor = (em: ReturnType<ReturnType<typeof orm>['em']['fork']>) => ({ em, config: server.config, clock: server.running.billing.clock });

  /** One posting in its own transaction on its own forked entity manager, like one request. */
  async function post(userId: string, entry: Omit<WalletEntryInput, 'user' | 'currency'>): Promise<WalletTransaction> {
    return orm()
      .em.fork()
      .transactional(async (tx) => postWalletEntry(ctxFor(tx), { ...entry, user: tx.getReference(User, userId), currency: 'IDR' }));
  }

  const credit = (userId: string, amount: string, referenceId: string | null = null) =>
    post(userId, { kind: 'credit', amount, source: 'adjustment', referenceId, description: 'test credit' });
  const debit = (userId: string, amount: string, referenceId: string | null = null) =>
    post(userId, { kind: 'debit', amount, source: 'payment', referenceId, description: 'test debit' });

  async function balanceOf(userId: string): Promise<string> {
    const wallet = await orm().em.fork().findOneOrFail(Wallet, { user: userId });
    return wallet.balance;
  }

  it('creates the wallet inside the posting transaction on the first entry (no second connection needed)', async () => {
    const user = await server.createUser();
    const entry = await credit(user.id, '25000.00');
    expect(entry.balanceAfter).toBe('25000.00');
    expect(await balanceOf(user.id)).toBe('25000.00');
  });

  it('ends with one wallet when many first uses race', async () => {
    const user = await server.createUser();
    const wallets = await Promise.all(
      Array.from({ length: 8 }, () => getOrCreateWallet(ctxFor(orm().em.fork()), orm().em.fork().getReference(User, user.id))),
    );
    expect(new Set(wallets.map((w) => w.id)).size).toBe(1);
    expect(await orm().em.fork().count(Wallet, { user: user.id })).toBe(1);
    expect(wallets[0]).toMatchObject({ balance: '0.00', currency: 'IDR', isActive: true });
  });

  it('refuses a debit beyond the balance and writes nothing', async () => {
    const user = await server.createUser();
    await credit(user.id, '10000.00');
    const err = await debit(user.id, '10000.01').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('insufficient_funds');
    expect(await balanceOf(user.id)).toBe('10000.00');
    expect(await orm().em.fork().count(WalletTransaction, { wallet: { user: user.id } })).toBe(1);
    // Exactly the balance is allowed, down to zero.
    expect((await debit(user.id, '10000.00')).balanceAfter).toBe('0.00');
  });

  describe('when the batch billing run debits many wallets at once (postWalletDebits)', () => {
    /** Debits `amounts` (user id, amount) in one transaction, as renewPlainWalletBatch does. */
    async function debitMany(amounts: [string, string][]): Promise<void> {
      await orm()
        .em.fork()
        .transactional(async (tx) => {
          const wallets = await lockWalletsOf(tx, [...new Set(amounts.map(([userId]) => userId))]);
          const debits: WalletDebit[] = amounts.map(([userId, amount]) => ({
            wallet: wallets.get(userId)!, amount, currency: 'IDR', source: 'payment', referenceId: `batch-${randomUUID()}`, description: 'batch debit',
          }));
          await postWalletDebits(ctxFor(tx), debits);
        });
    }

    it('moves each balance by its debits, each entry carrying the balance after it', async () => {
      const [a, b] = [await server.createUser(), await server.createUser()];
      await credit(a.id, '100.00');
      await credit(b.id, '50.00');
      await debitMany([[a.id, '30.00'], [b.id, '50.00'], [a.id, '20.00']]);
      expect(await balanceOf(a.id)).toBe('50.00');
      expect(await balanceOf(b.id)).toBe('0.00');
      const entries = await orm().em.fork().find(WalletTransaction, { wallet: { user: a.id }, kind: 'debit' }, { orderBy: { balanceAfter: 'desc' } });
      expect(entries.map((e) => [e.amount, e.balanceAfter])).toEqual([['30.00', '70.00'], ['20.00', '50.00']]);
    });

    it('refuses the whole batch when one debit is not covered, and writes nothing', async () => {
      const [a, b] = [await server.createUser(), await server.createUser()];
      await credit(a.id, '100.00');
      await credit(b.id, '10.00');
      const err = await debitMany([[a.id, '30.00'], [b.id, '10.01']]).catch((e: unknown) => e);
      expect((err as DomainError).code).toBe('insufficient_funds');
      expect([await balanceOf(a.id), await balanceOf(b.id)]).toEqual(['100.00', '10.00']);
      expect(await orm().em.fork().count(WalletTransaction, { wallet: { user: { $in: [a.id, b.id] } }, kind: 'debit' })).toBe(0);
    });
  });

  it('never overdraws under many concurrent debits, and the balance is credits minus successful debits', async () => {
    const user = await server.createUser();
    await credit(user.id, '100000.00');
    const results = await Promise.allSettled(Array.from({ length: 25 }, () => debit(user.id, '7000.00')));
    const succeeded = results.filter((r) => r.status === 'fulfilled');
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    for (const f of failed) expect((f.reason as DomainError).code).toBe('insufficient_funds');
    // 14 × 7,000 = 98,000 fits in 100,000; a 15th would not.
    expect(succeeded).toHaveLength(14);
    expect(await balanceOf(user.id)).toBe('2000.00');
    const afters = succeeded.map((r) => (r as PromiseFulfilledResult<WalletTransaction>).value.balanceAfter).sort((a, b) => compare(b, a));
    // Serialised: each successful debit saw the balance the previous one left.
    expect(afters).toEqual(Array.from({ length: 14 }, (_, i) => subtract('100000.00', String(7000 * (i + 1)))));
  });

  it('keeps the invariant with concurrent credits and debits interleaved', async () => {
    const user = await server.createUser();
    await credit(user.id, '5000.00');
    const ops = Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? { kind: 'credit' as const, amount: '4000.00' } : { kind: 'debit' as const, amount: '3000.00' }));
    const results = await Promise.allSettled(ops.map((op) => (op.kind === 'credit' ? credit(user.id, op.amount) : debit(user.id, op.amount))));
    let credits = '5000.00';
    let debits = ZERO;
    results.forEach((r, i) => {
      if (ops[i].kind === 'credit') {
        expect(r.status).toBe('fulfilled');
        credits = add(credits, ops[i].amount);
      } else if (r.status === 'fulfilled') {
        debits = add(debits, ops[i].amount);
      } else {
        expect((r.reason as DomainError).code).toBe('insufficient_funds');
      }
    });
    expect(compare(debits, credits)).toBeLessThanOrEqual(0);
    expect(await balanceOf(user.id)).toBe(subtract(credits, debits));
  });

  it('posts the same reference once even when two postings race', async () => {
    const user = await server.createUser();
    const [a, b] = await Promise.all([credit(user.id, '15000.00', 'ref-race-1'), credit(user.id, '15000.00', 'ref-race-1')]);
    expect(a.id).toBe(b.id);
    expect(await balanceOf(user.id)).toBe('15000.00');
  });

  it('makes a second transaction on the same wallet wait for the first to commit', async () => {
    const user = await server.createUser();
    await credit(user.id, '50000.00');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let posted!: () => void;
    const firstPosted = new Promise<void>((resolve) => (posted = resolve));
    const first = orm()
      .em.fork()
      .transactional(async (tx) => {
        const entry = await postWalletEntry(ctxFor(tx), { user: tx.getReference(User, user.id), kind: 'debit', amount: '30000.00', currency: 'IDR', source: 'payment', referenceId: null, description: 'held' });
        posted();
        await gate;
        return entry;
      });
    await firstPosted;
    let secondDone = false;
    const second = debit(user.id, '30000.00').finally(() => (secondDone = true));
    second.catch(() => undefined);

    if (kind === 'postgresql') {
      // The second transaction is blocked in SELECT … FOR UPDATE on the wallet row.
      const client = new pg.Client({ connectionString: server.db.url });
      await client.connect();
      try {
        let waiting: string[] = [];
        for (let i = 0; i < 200 && waiting.length === 0; i++) {
          const res = await client.query<{ query: string }>(
            "select query from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
          );
          waiting = res.rows.map((r) => r.query);
          if (waiting.length === 0) await new Promise((r) => setTimeout(r, 25));
        }
        expect(waiting).toHaveLength(1);
        expect(waiting[0]).toMatch(/from "wallets".*for update/is);
      } finally {
        await client.end();
      }
    } else {
      // SQLite: the one connection belongs to the open transaction until it ends.
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(secondDone).toBe(false);
    release();
    expect((await first).balanceAfter).toBe('20000.00');
    // It saw the committed balance, not the one it would have read without the lock.
    const err = await second.catch((e: unknown) => e);
    expect((err as DomainError).code).toBe('insufficient_funds');
    expect(await balanceOf(user.id)).toBe('20000.00');
  });
});
