import type { User } from '../../db/entities/user.js';
import { Wallet, WalletTransaction } from '../../db/entities/wallet.js';
import type { DataContext } from '../context.js';
import { findPage, type Page, type PageRequest } from '../common/pagination.js';

/** A page of the user's wallet ledger, newest first (the id breaks ties of the same instant). */
export async function listWalletTransactions(ctx: Pick<DataContext, 'em'>, user: User, page: PageRequest): Promise<Page<WalletTransaction>> {
  // No wallet yet means no entries; listing does not create one.
  const wallet = await ctx.em.findOne(Wallet, { user });
  if (!wallet) return { count: 0, items: [] };
  return findPage(ctx.em, WalletTransaction, { wallet }, page, { orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
}
