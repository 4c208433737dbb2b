import type { User } from '../../db/entities/user.js';
import { WalletTransaction, type Wallet } from '../../db/entities/wallet.js';
import { DomainError, ValidationError } from '../../domain/errors.js';
import { add, parseAmountInput, subtract } from '../../domain/money.js';
import type { Actor } from '../audit/actor.js';
import { recordAuditEvent } from '../audit/record-audit-event.js';
import type { DataContext } from '../context.js';
import { SUPPORT_WORDS } from './ledger-words.js';
import { getOrCreateWallet, postWalletEntry } from './wallet-ledger.js';

export interface WalletAdjustmentInput {
  user: User;
  /** Signed: positive credits the wallet, negative debits it ("-5000"). */
  amount: string;
  /** Why: kept in the audit trail only; the customer never sees it. */
  reason: string;
  /** What the customer's ledger says; by default "Credit from support" or "Debit by support". */
  description?: string | null;
  /** A support ticket or similar: adjusting twice with the same reference posts once. */
  reference?: string | null;
  /** Who adjusts: recorded with the entry, in the same transaction. */
  actor: Actor;
}

/**
 * A support adjustment of a user's wallet (`billing-admin wallet adjust`): a ledger entry with
 * source `adjustment`; a debit may not take the balance below zero (`insufficient_funds`).
 */
export async function adjustWallet(
  ctx: DataContext,
  input: WalletAdjustmentInput,
): Promise<{ wallet: Wallet; entry: WalletTransaction; /** The reference was used before: nothing was posted now. */ alreadyApplied: boolean }> {
  const reason = input.reason.trim();
  if (reason === '') throw new ValidationError([{ field: 'reason', message: 'is required: say why the balance changes' }]);
  if (reason.length > 450) throw new ValidationError([{ field: 'reason', message: 'must be at most 450 characters' }]);
  const description = input.description?.trim() || null;
  if (description !== null && description.length > 200) throw new ValidationError([{ field: 'description', message: 'must be at most 200 characters' }]);
  const reference = input.reference?.trim() || null;
  if (reference !== null && reference.length > 80) throw new ValidationError([{ field: 'reference', message: 'must be at most 80 characters' }]);
  const text = input.amount.trim();
  const negative = text.startsWith('-');
  const amount = parseAmountInput(negative ? text.slice(1) : text.replace(/^\+/, ''), ctx.config.walletCurrency);
  let alreadyApplied = false;
  const entry = await ctx.em.transactional(async (em) => {
    if (reference !== null) {
      alreadyApplied = (await em.count(WalletTransaction, { source: 'adjustment', referenceId: `adjustment:${reference}` })) > 0;
    }
    const posted = await postWalletEntry(
      { ...ctx, em },
      {
        user: input.user,
        kind: negative ? 'debit' : 'credit',
        amount,
        currency: ctx.config.walletCurrency,
        source: 'adjustment',
        referenceId: reference === null ? null : `adjustment:${reference}`,
        description: description ?? SUPPORT_WORDS[negative ? 'debit' : 'credit'],
      },
    );
    if (!alreadyApplied) {
      await recordAuditEvent({ ...ctx, em }, input.actor, {
        action: 'wallet.adjust',
        target: { type: 'wallet', id: posted.wallet.id },
        reason,
        changes: { balance: [negative ? add(posted.balanceAfter, amount) : subtract(posted.balanceAfter, amount), posted.balanceAfter] },
      });
    }
    return posted;
  });
  if (entry.kind !== (negative ? 'debit' : 'credit') || entry.amount !== amount) {
    throw new DomainError('conflict', `Reference "${reference}" was already used for a ${entry.kind} of ${entry.amount}; use another reference.`);
  }
  const wallet = await getOrCreateWallet(ctx, input.user);
  await ctx.em.refresh(wallet);
  return { wallet, entry, alreadyApplied };
}
