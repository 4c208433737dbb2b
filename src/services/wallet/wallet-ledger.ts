import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { User } from '../../db/entities/user.js';
import { Wallet, WalletTransaction, type WalletTransactionKind, type WalletTransactionSource } from '../../db/entities/wallet.js';
import { DomainError } from '../../domain/errors.js';
import { add, compare, isPositive, subtract } from '../../domain/money.js';
import type { DataContext } from '../context.js';

/** The user's wallet, created on first use in WALLET_CURRENCY. */
export async function getOrCreateWallet(ctx: DataContext, user: User): Promise<Wallet> {
  const existing = await ctx.em.findOne(Wallet, { user });
  if (existing) return existing;
  // Created in its own short transaction so that two first uses at once end with one wallet.
  try {
    await ctx.em.fork().transactional(async (em) => {
      em.create(Wallet, { user: user.id, currency: ctx.config.walletCurrency, isActive: true } as unknown as Wallet);
    });
  } catch (err) {
    if (!(err instanceof UniqueConstraintViolationException)) throw err;
  }
  return ctx.em.findOneOrFail(Wallet, { user });
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
  if (input.referenceId) {
    const posted = await ctx.em.findOne(WalletTransaction, { source: input.source, referenceId: input.referenceId });
    if (posted) return posted;
  }
  const created = await getOrCreateWallet(ctx, input.user);
  // PostgreSQL takes FOR UPDATE; on SQLite the write transaction already serialises writers.
  const wallet = await ctx.em.findOneOrFail(Wallet, { id: created.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  if (!wallet.isActive) throw new DomainError('invalid_state', 'The wallet is not active.');
  if (wallet.currency !== input.currency) {
    throw new DomainError('validation_error', `The wallet holds ${wallet.currency}, not ${input.currency}.`);
  }
  if (input.kind === 'debit' && compare(wallet.balance, input.amount) < 0) {
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
