import { randomUUID } from 'node:crypto';
import { LockMode, type RequiredEntityData } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { v5 as uuidv5 } from 'uuid';
import { fromColumn, insertRows, updateRows } from '../../db/bulk-sql.js';
import { isPostgres } from '../../db/dialect.js';
import type { User } from '../../db/entities/user.js';
import { Wallet, WalletTransaction, type WalletTransactionKind, type WalletTransactionSource } from '../../db/entities/wallet.js';
import { DomainError } from '../../domain/errors.js';
import { add, compare, isPositive, subtract, ZERO } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { onWalletDebtMoved } from './wallet-debt.js';

/*
 * NOTE: a wallet's id follows from its user's (a name-based UUID), so the id a lookup answers for
 * a user who has no wallet yet is the id the wallet gets when its first entry creates it.
 */
const WALLET_ID_NAMESPACE = 'a0b7e9c2-4f1d-5e3a-9c6b-2d8f0e4a7b13';

/** The id the user's wallet has, or will have when it is created. */
export function walletIdOf(userId: string): string {
  return uuidv5(userId, WALLET_ID_NAMESPACE);
}

/**
 * The user's wallet for reading: the stored one, or, for a user who has none yet, an empty one in
 * WALLET_CURRENCY that is answered but never stored (a lookup writes nothing; the first entry
 * creates the wallet, with the same id). The unstored one dates from the user's creation.
 */
export async function readWallet(ctx: DataContext, user: User): Promise<Wallet> {
  const existing = await ctx.em.findOne(Wallet, { user });
  if (existing) return existing;
  return Object.assign(new Wallet(), {
    id: walletIdOf(user.id),
    user,
    balance: ZERO,
    currency: ctx.config.walletCurrency,
    isActive: true,
    entries: 0,
    createdAt: user.createdAt,
    updatedAt: user.createdAt,
  });
}

/** The user's wallet, created on first use in WALLET_CURRENCY: only for callers about to post an entry. */
export async function getOrCreateWallet(ctx: DataContext, user: User): Promise<Wallet> {
  const existing = await ctx.em.findOne(Wallet, { user });
  if (existing) return existing;
  // NOTE: created with INSERT … ON CONFLICT DO NOTHING on the caller's own connection (and in its
  // transaction, if any): two first uses at once end with one wallet, and nothing waits for a
  // second connection, which SQLite's single connection would never hand out mid-transaction.
  const now = ctx.clock.now();
  await ctx.em
    .createQueryBuilder(Wallet)
    .insert({ id: walletIdOf(user.id), user: user.id, balance: ZERO, currency: ctx.config.walletCurrency, isActive: true, createdAt: now, updatedAt: now } as never)
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

/** Why a wallet cannot take an entry (inactive, another currency, a debit it does not cover), or null. */
export function walletRefusal(
  wallet: Pick<Wallet, 'balance' | 'currency' | 'isActive'>,
  entry: Pick<WalletEntryInput, 'kind' | 'amount' | 'currency' | 'allowNegative'>,
): DomainError | null {
  if (!wallet.isActive) return new DomainError('invalid_state', 'The wallet is not active.');
  if (wallet.currency !== entry.currency) return new DomainError('validation_error', `The wallet holds ${wallet.currency}, not ${entry.currency}.`);
  if (entry.kind === 'debit' && !entry.allowNegative && compare(wallet.balance, entry.amount) < 0) {
    return new DomainError('insufficient_funds', `The wallet balance ${wallet.balance} ${wallet.currency} does not cover ${entry.amount}.`);
  }
  return null;
}

/**
 * One of the two writers of wallet balances, both in this module (the other is
 * postWalletDebits, for the batch billing run): posts a ledger entry and moves the balance with it, under
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
  const refused = walletRefusal(wallet, input);
  if (refused) throw refused;
  const before = wallet.balance;
  wallet.balance = input.kind === 'credit' ? add(wallet.balance, input.amount) : subtract(wallet.balance, input.amount);
  if (compare(wallet.balance, ZERO) < 0 || compare(before, ZERO) < 0) await onWalletDebtMoved(ctx, input.user, before, wallet.balance);
  wallet.entries += 1;
  const entry = ctx.em.create(WalletTransaction, {
    wallet,
    kind: input.kind,
    amount: input.amount,
    balanceAfter: wallet.balance,
    source: input.source,
    referenceId: input.referenceId,
    description: input.description,
    position: wallet.entries,
    createdAt: ctx.clock.now(),
  } as WalletTransaction);
  // Flushed at once: a second posting in the same transaction re-reads the locked row.
  await ctx.em.flush();
  return entry;
}

/** A wallet as postWalletDebits needs it, read and locked by lockWalletsOf. */
export interface LockedWallet {
  id: string;
  userId: string;
  balance: string;
  currency: string;
  isActive: boolean;
  /** The ledger's length; postWalletDebits follows it as it posts. */
  entries: number;
}

/**
 * The wallets of `userIds`, locked for the caller's transaction (FOR UPDATE on PostgreSQL; on
 * SQLite the transaction already holds the write lock), by user id. NOTE: locked in wallet id
 * order, so two transactions never wait on each other's wallets in a cycle. Read with plain
 * SQL: the batch billing run reads a page of a thousand wallets at once.
 */
export async function lockWalletsOf(em: EntityManager, userIds: string[]): Promise<Map<string, LockedWallet>> {
  if (userIds.length === 0) return new Map();
  const rows = (await em.execute(
    `select id, user_id, balance, currency, is_active, entries from wallets where user_id in (${userIds.map(() => '?').join(', ')}) order by id${isPostgres(em) ? ' for update' : ''}`,
    userIds,
    'all',
  )) as Record<string, unknown>[];
  return new Map(
    rows.map((r) => [
      String(r.user_id),
      {
        id: String(r.id),
        userId: String(r.user_id),
        balance: fromColumn(em, Wallet, 'balance', r.balance) as string,
        currency: String(r.currency),
        isActive: fromColumn(em, Wallet, 'isActive', r.is_active) as boolean,
        entries: Number(r.entries),
      },
    ]),
  );
}

export interface WalletDebit {
  /** Locked by lockWalletsOf in this transaction; its `balance` follows the debits posted. */
  wallet: LockedWallet;
  /** The entry's id, when the caller names it elsewhere first (a payment's wallet_transaction_id). */
  id?: string;
  amount: string;
  currency: string;
  source: WalletTransactionSource;
  /** Must not have been posted before under `source`: the unique (source, reference) rejects the whole batch. */
  referenceId: string;
  description: string;
}

/**
 * postWalletEntry's debit for many wallets at once, set-based (one INSERT of the entries, one
 * UPDATE of the balances), for the batch billing run. The same rules: inside the caller's
 * transaction, on wallets it has locked, never below zero, each entry carrying the balance after
 * it. Nothing is written unless every debit is allowed.
 */
export async function postWalletDebits(ctx: DataContext, debits: WalletDebit[]): Promise<void> {
  if (debits.length === 0) return;
  if (!ctx.em.isInTransaction()) throw new Error('postWalletDebits must run inside a transaction');
  const at = ctx.clock.now();
  const entries: RequiredEntityData<WalletTransaction>[] = [];
  const balances = new Map<string, [string, number]>();
  for (const debit of debits) {
    if (!isPositive(debit.amount)) throw new DomainError('validation_error', 'A wallet entry must have a positive amount.');
    const refused = walletRefusal(debit.wallet, { kind: 'debit', amount: debit.amount, currency: debit.currency });
    if (refused) throw refused;
    debit.wallet.balance = subtract(debit.wallet.balance, debit.amount);
    debit.wallet.entries += 1;
    balances.set(debit.wallet.id, [debit.wallet.balance, debit.wallet.entries]);
    entries.push({
      id: debit.id ?? randomUUID(),
      wallet: debit.wallet.id,
      kind: 'debit',
      amount: debit.amount,
      balanceAfter: debit.wallet.balance,
      source: debit.source,
      referenceId: debit.referenceId,
      description: debit.description,
      position: debit.wallet.entries,
      createdAt: at,
    });
  }
  await insertRows(ctx.em, WalletTransaction, entries);
  await updateRows(ctx.em, Wallet, ['balance', 'entries'], [...balances].map(([id, [balance, entries]]) => [id, balance, entries]), { sql: 'updated_at = ?', params: [new Date()] });
}
