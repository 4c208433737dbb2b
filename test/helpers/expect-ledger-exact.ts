import { Decimal } from 'decimal.js';
import { expect } from 'vitest';
import type { Orm } from '../../src/db/orm.js';
import { verifyWallets } from '../../src/services/wallet/verify-wallets.js';
import { dialectOfPlatform } from '../../src/db/dialect.js';

/**
 * The wallet invariant, checked after every wallet test: each balance equals credits minus
 * debits of its ledger, no entry leaves a balance negative, and the balance_after values chain.
 * The sums are computed here from raw rows, independently of the code under test; the chaining
 * is checked by the same verifier `billing-admin wallet verify` uses.
 */
export async function expectLedgerExact(orm: Orm): Promise<void> {
  const conn = orm.em.fork().getConnection();
  // SQLite keeps money as integer minor units (src/db/types/money-type.ts), PostgreSQL as numeric.
  const scale = dialectOfPlatform(orm.em.getPlatform()) === 'sqlite' ? 100 : 1;
  const amount = (raw: string | number) => new Decimal(String(raw)).dividedBy(scale);
  const wallets = (await conn.execute('select id, balance from wallets')) as { id: string; balance: string | number }[];
  const entries = (await conn.execute('select wallet_id, kind, amount, balance_after from wallet_transactions')) as {
    wallet_id: string;
    kind: string;
    amount: string | number;
    balance_after: string | number;
  }[];
  for (const w of wallets) {
    const mine = entries.filter((e) => e.wallet_id === w.id);
    const sum = mine.reduce((acc, e) => (e.kind === 'credit' ? acc.plus(amount(e.amount)) : acc.minus(amount(e.amount))), new Decimal(0));
    expect(amount(w.balance).toFixed(2), `wallet ${w.id}: balance vs credits minus debits`).toBe(sum.toFixed(2));
    for (const e of mine) {
      expect(amount(e.amount).isPositive(), `wallet ${w.id}: an entry with a non-positive amount`).toBe(true);
      expect(amount(e.balance_after).isNegative(), `wallet ${w.id}: an entry left the balance negative`).toBe(false);
      expect(['credit', 'debit']).toContain(e.kind);
    }
  }
  const report = await verifyWallets({ em: orm.em.fork() });
  expect(report.discrepancies).toEqual([]);
}
