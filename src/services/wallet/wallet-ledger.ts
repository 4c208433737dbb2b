import { randomUUID } from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import type { User } from '../../db/entities/user.js';
import { Wallet, WalletTransaction, type WalletTransactionKind, type WalletTransactionSource } from '../../db/entities/wallet.js';
import { DomainError } from '../../domain/errors.js';
import { add, compare, isPositive, subtract, ZERO } from '../../domain/money.js';
import type { DataContext } from '../context.js';

/** The user's wallet, created on first use in WALLET_CURRENCY. */
export async function getOrCreateWallet(ctx: DataContext, user: User): Promise<Wallet> {
  const existing = await ctx.em.findOne(Wallet, { user });
  if (existing) return existing;
  // NOTE: created with INSERT … ON CONFLICT DO NOTHING on the caller's own connection (and in its
  // transaction, if any): two first uses at once end with one wallet, and nothing waits for a
  // second connection, which SQLite's single connection would never hand out mid-transaction.
  const now = ctx.clock.now();
  await ctx.em
    .createQueryBuilder(Wallet)
    .insert({ id: randomUUID(), user: user.id, balance: ZERO, currency: ctx.config.walletCurrency, isActive: true, createdAt: now, updatedAt: now } as never)
    .onConflict('user')
    .ignore()
    .execute();
  return ctx.em.findOneOrFail(Wallet, { user }, { refresh: true });
}

export interface WalletEntryInput {
  user: User;
  kind: WalletTransactionKind;
  amount: string;
  currency: string;
  source: WalletTransactionSource;
  /** What caused the entry; (source, reference) is unique, so posting the same thing twice is a no-op. */
  referenceId: string | null;
  description: string;
  /**
   * NOTE: only a gateway reversal of a top-up may take the balance below zero: the money was
   * never ours to spend, and refusing the debit would hide it.
   */
  allowNegative?: boolean;
}

/**
 * The only writer of wallet balances: posts a ledger entry and moves the balance with it, under
 * a row lock, inside the caller's transaction (`ctx.em` must be transactional). A debit never
 * takes the balance below zero (`insufficient_funds`). Posting the same (source, reference)
 * again returns the first entry and changes nothing.
 */
export async function postWalletEntry(ctx: DataContext, input: WalletEntryInput): Promise<WalletTransaction> {
  if (!ctx.em.isInTransaction()) throw new Error('postWalletEntry must run inside a transaction');
  if (!isPositive(input.amount)) throw new DomainError('validation_error', 'A wallet entry must have a positive amount.');
  const created = await getOrCreateWallet(ctx, input.user);
  // PostgreSQL takes FOR UPDATE; on SQLite the one connection already serialises transactions.
  const wallet = await ctx.em.findOneOrFail(Wallet, { id: created.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  if (input.referenceId) {
    // Looked up under the lock: a concurrent posting of the same reference has committed by now.
    const posted = await ctx.em.findOne(WalletTransaction, { source: input.source, referenceId: input.referenceId }, { refresh: true });
    if (posted) return posted;
  }
  if (!wallet.isActive) throw new DomainError('invalid_state', 'The wallet is not active.');
  if (wallet.currency !== input.currency) {
    throw new DomainError('validation_error', `The wallet holds ${wallet.currency}, not ${input.currency}.`);
  }
  if (input.kind === 'debit' && !input.allowNegative && compare(wallet.balance, input.amount) < 0) {
    throw new DomainError('insufficient_funds', `The wallet balance ${wallet.balance} ${wallet.currency} does not cover ${input.amount}.`);
  }
  wallet.balance = input.kind === 'credit' ? add(wallet.balance, input.amount) : subtract(wallet.balance, input.amount);
  const entry = ctx.em.create(WalletTransaction, {
    wallet,
    kind: input.kind,
    amount: input.amount,
    balanceAfter: wallet.balance,
    source: input.source,
    referenceId: input.referenceId,
    description: input.description,
    createdAt: ctx.clock.now(),
  } as WalletTransaction);
  // Flushed at once: a second posting in the same transaction re-reads the locked row.
  await ctx.em.flush();
  return entry;
}
