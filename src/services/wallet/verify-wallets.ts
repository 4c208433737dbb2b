import { TAKE_BACK_REFERENCES } from './take-back-references.js';
import { Wallet, WalletTransaction } from '../../db/entities/wallet.js';
import { add, compare, isPositive, subtract, ZERO, type Money } from '../../domain/money.js';
import type { DataContext } from '../context.js';

export interface WalletDiscrepancy {
  wallet_id: string;
  user_id: string;
  username: string;
  currency: string;
  balance: Money;
  /** Credits minus debits over the whole ledger. */
  ledger_sum: Money;
  entries: number;
  issues: string[];
}

export interface WalletVerification {
  ok: boolean;
  wallets_checked: number;
  entries_checked: number;
  discrepancies: WalletDiscrepancy[];
  /** Wallets below zero (only money the gateway took back can do that): exact, but money the user owes. */
  negative_balances: { wallet_id: string; user_id: string; username: string; currency: string; balance: Money }[];
}

type Entry = Pick<WalletTransaction, 'id' | 'kind' | 'amount' | 'balanceAfter' | 'createdAt' | 'position'> & Partial<Pick<WalletTransaction, 'source' | 'referenceId'>>;

/**
 * Money the gateway took back (a reversed or charged-back top-up, a payment's wallet credit
 * paid out again at the gateway) is debited even below zero; no other entry may go negative.
 */
const mayGoNegative = (e: Entry): boolean =>
  e.kind === 'credit' ||
  (e.kind === 'debit' && (e.source === 'topup' || TAKE_BACK_REFERENCES.some((prefix) => e.referenceId?.startsWith(prefix) === true)));

const signed = (e: Entry): Money => (e.kind === 'credit' ? e.amount : subtract(ZERO, e.amount));
const before = (e: Entry): Money => subtract(e.balanceAfter, signed(e));

/**
 * Whether entries stamped with the same instant can be put in some order in which each one's
 * `balance_after` follows from the previous: an Eulerian path over balances (edges before→after)
 * from `start`. Entries written in one transaction, or under a test clock, share a timestamp,
 * so their stored order is unknown and only their chaining can be checked.
 */
function chainsFrom(start: Money, group: Entry[]): boolean {
  const end = group.reduce((sum, e) => add(sum, signed(e)), start);
  const degree = new Map<string, number>();
  const bump = (node: string, by: number) => degree.set(node, (degree.get(node) ?? 0) + by);
  const neighbours = new Map<string, string[]>();
  const link = (a: string, b: string) => neighbours.set(a, [...(neighbours.get(a) ?? []), b]);
  for (const e of group) {
    const from = before(e);
    bump(from, 1);
    bump(e.balanceAfter, -1);
    link(from, e.balanceAfter);
    link(e.balanceAfter, from);
  }
  bump(start, -1);
  bump(end, 1);
  if ([...degree.values()].some((d) => d !== 0)) return false;
  // Degrees balance; the path exists when every balance touched is connected to the start.
  const seen = new Set([start]);
  const queue = [start];
  while (queue.length > 0) {
    for (const next of neighbours.get(queue.pop()!) ?? []) {
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return [...neighbours.keys()].every((node) => seen.has(node));
}

/** The problems of one wallet's ledger (entries oldest first); empty when it is exact. */
export function ledgerIssues(balance: Money, entries: Entry[]): { ledgerSum: Money; issues: string[] } {
  const issues: string[] = [];
  let running = ZERO;
  for (let i = 0; i < entries.length; ) {
    let j = i + 1;
    while (j < entries.length && entries[j].createdAt.getTime() === entries[i].createdAt.getTime()) j += 1;
    const group = entries.slice(i, j);
    for (const e of group) {
      if (!isPositive(e.amount)) issues.push(`entry ${e.id} has a non-positive amount ${e.amount}`);
      if (compare(e.balanceAfter, ZERO) < 0 && !mayGoNegative(e)) issues.push(`entry ${e.id} leaves the balance negative (${e.balanceAfter})`);
    }
    if (group.length === 1) {
      const expected = add(running, signed(group[0]));
      if (compare(group[0].balanceAfter, expected) !== 0) {
        issues.push(`entry ${group[0].id} (${group[0].kind} ${group[0].amount}) records balance_after ${group[0].balanceAfter}, but the entries before it give ${expected}`);
      }
    } else if (!chainsFrom(running, group)) {
      issues.push(`the ${group.length} entries at ${group[0].createdAt.toISOString()} (${group.map((e) => e.id).join(', ')}) do not chain from ${running} by their balance_after`);
    }
    // Continue from what the amounts say, so that one bad balance_after is reported once.
    running = group.reduce((sum, e) => add(sum, signed(e)), running);
    i = j;
  }
  if (compare(balance, running) !== 0) issues.push(`balance ${balance} differs from the ledger sum ${running} (credits minus debits) by ${subtract(balance, running)}`);
  return { ledgerSum: running, issues };
}

/**
 * Checks every wallet: its balance equals the sum of its ledger (credits minus debits), and each
 * entry's `balance_after` follows from the one before. For `billing-admin wallet verify`.
 */
export async function verifyWallets(ctx: Pick<DataContext, 'em'>): Promise<WalletVerification> {
  const wallets = await ctx.em.find(Wallet, {}, { populate: ['user'], orderBy: { createdAt: 'asc', id: 'asc' } });
  const discrepancies: WalletDiscrepancy[] = [];
  const negative: WalletVerification['negative_balances'] = [];
  let entriesChecked = 0;
  for (const wallet of wallets) {
    const entries = await ctx.em.find(
      WalletTransaction,
      { wallet },
      // In ledger order (WalletTransaction.position), not by time: see the entity.
      { fields: ['id', 'kind', 'amount', 'balanceAfter', 'createdAt', 'position', 'source', 'referenceId'], orderBy: { position: 'asc', createdAt: 'asc', id: 'asc' } },
    );
    entriesChecked += entries.length;
    const { ledgerSum, issues } = ledgerIssues(wallet.balance, entries);
    if (issues.length > 0) {
      discrepancies.push({
        wallet_id: wallet.id,
        user_id: wallet.user.id,
        username: wallet.user.username,
        currency: wallet.currency,
        balance: wallet.balance,
        ledger_sum: ledgerSum,
        entries: entries.length,
        issues,
      });
    }
    if (compare(wallet.balance, ZERO) < 0) {
      negative.push({ wallet_id: wallet.id, user_id: wallet.user.id, username: wallet.user.username, currency: wallet.currency, balance: wallet.balance });
    }
    // Keeps memory flat over many wallets.
    ctx.em.clear();
  }
  return { ok: discrepancies.length === 0, wallets_checked: wallets.length, entries_checked: entriesChecked, discrepancies, negative_balances: negative };
}
