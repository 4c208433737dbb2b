import type { Payment } from '../../db/entities/payment.js';
import type { User } from '../../db/entities/user.js';
import type { WalletTransactionSource } from '../../db/entities/wallet.js';
import { add } from '../../domain/money.js';
import { consoleLogger } from '../../logger.js';
import type { DataContext } from '../context.js';
import { issueWalletCreditNotes } from '../credit-notes/issue-credit-note.js';
import { notify } from '../notifications/notify.js';
import { postWalletEntry } from '../wallet/wallet-ledger.js';

/** Why money that arrived could not be used for what it was meant to pay. */
export type UnusableSettlementReason = 'invoice_already_paid' | 'invoice_void' | 'subscription_ended' | 'plan_change_dropped' | 'topup_canceled' | 'period_passed';

export interface UnusableSettlement {
  user: User;
  orderId: string;
  amount: string;
  currency: string;
  reason: UnusableSettlementReason;
  /**
   * The ledger key: (source, reference) is unique, so the credit is posted exactly once however
   * often the settlement is reported. Top-ups keep their usual (`topup`, top-up id), so a late
   * settlement and an ordinary one can never both credit.
   */
  source: Extract<WalletTransactionSource, 'refund' | 'topup'>;
  referenceId: string;
  /** The subscription payment credited: its credited_amount grows, so no refund can pay it out again. */
  payment?: Payment;
}

/**
 * NOTE: no payment is kept silently (docs/billing.md, 'Dunning'). A settlement nobody can
 * use — its invoice already paid by a newer payment or voided, its subscription canceled,
 * expired or replaced, its top-up canceled or expired — still moved the customer's money, so
 * its full amount goes to the wallet, the user gets an `in_app` notification (and the other
 * channels), and a warning line is logged for support. The one home of that rule for payments
 * and top-ups alike. Runs inside the caller's transaction; returns the change for the log.
 */
export async function creditUnusableSettlement(ctx: DataContext, input: UnusableSettlement): Promise<string> {
  const fields = { order_id: input.orderId, user_id: input.user.id, amount: input.amount, currency: input.currency, reason: input.reason };
  if (input.currency !== ctx.config.walletCurrency) {
    // NOTE: the wallet holds one currency; money in another cannot go there. The settlement is
    // still recorded (the webhook must not fail for ever), and support is told to refund it.
    notify(ctx, input.user, 'payment_credited_to_wallet', { ...fields, credited: false });
    consoleLogger.error('settlement could not be used nor credited (wallet currency differs): refund it', { ...fields, wallet_currency: ctx.config.walletCurrency });
    return `settlement in ${input.currency} not credited (the wallet holds ${ctx.config.walletCurrency}): refund it`;
  }
  const description = `Payment ${input.orderId} could not be used (${input.reason}): credited to the wallet`;
  const entry = await postWalletEntry(ctx, {
    user: input.user,
    kind: 'credit',
    amount: input.amount,
    currency: input.currency,
    source: input.source,
    referenceId: input.referenceId,
    description,
  });
  if (input.payment) {
    input.payment.creditedAmount = add(input.payment.creditedAmount, input.amount);
    const noteReason = input.reason === 'period_passed' ? 'period_passed' : 'unusable_settlement';
    await issueWalletCreditNotes(ctx, entry, noteReason, [{ payment: input.payment, amount: input.amount, description }], input.reason);
  }
  notify(ctx, input.user, 'payment_credited_to_wallet', { ...fields, credited: true, wallet_transaction_id: entry.id });
  consoleLogger.warn('settlement credited to the wallet', fields);
  return `settlement credited to the wallet (${input.reason})`;
}
