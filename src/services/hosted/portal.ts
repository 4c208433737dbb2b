import type { CreditNote } from '../../db/entities/credit-note.js';
import type { Invoice, LineSubject } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import { Plan } from '../../db/entities/plan.js';
import { Subscription } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import type { Wallet, WalletTransaction } from '../../db/entities/wallet.js';
import { LIVE_SUBSCRIPTION_STATUSES } from '../../domain/states/subscription-states.js';
import type { DataContext } from '../context.js';
import { listCreditNotes } from '../credit-notes/list-credit-notes.js';
import { listInvoices } from '../invoices/list-invoices.js';
import { currentUsage, type CurrentUsage } from '../usage/current-usage.js';
import { listWalletTransactions } from '../wallet/list-wallet-transactions.js';
import { ledgerSubjects } from '../wallet/ledger-words.js';
import { readWallet } from '../wallet/wallet-ledger.js';

/** How many of each list the portal shows: the latest, as a statement would. */
export const PORTAL_LIST_SIZE = 12;

export interface PortalOverview {
  /** The user's live subscription, else the latest one (to show that it ended). */
  subscription: Subscription | null;
  /** A payment of that subscription still waiting for the customer (how to pay it). */
  pendingPayment: Payment | null;
  /** Active plans the subscription could move to (same currency, not the current plan). */
  otherPlans: Plan[];
  invoices: Invoice[];
  creditNotes: CreditNote[];
  wallet: Wallet;
  ledger: WalletTransaction[];
  /** What ledger entries are, where known, so that a page words them in its language (wallet/ledger-words.ts). */
  ledgerSubjects: Map<string, LineSubject>;
  /** What the live subscription's coming invoice will bill for usage so far; null when its plan has no charges. */
  usage: CurrentUsage | null;
}

/** Everything the customer portal shows, read through the same queries as the API's lists. */
export async function portalOverview(ctx: DataContext, user: User): Promise<PortalOverview> {
  const page = { page: 1, pageSize: PORTAL_LIST_SIZE };
  const subscription =
    (await ctx.em.findOne(Subscription, { user: user.id, status: { $in: [...LIVE_SUBSCRIPTION_STATUSES] } }, { populate: ['plan', 'pendingPlan', 'pendingChangePlan'], refresh: true })) ??
    (await ctx.em.findOne(Subscription, { user: user.id }, { orderBy: { createdAt: 'desc' }, populate: ['plan', 'pendingPlan', 'pendingChangePlan'], refresh: true }));
  const live = subscription !== null && LIVE_SUBSCRIPTION_STATUSES.includes(subscription.status);
  const pendingPayment = live
    ? await ctx.em.findOne(Payment, { subscription: subscription.id, status: 'pending', outcomeUnknown: false }, { orderBy: { createdAt: 'desc' }, refresh: true })
    : null;
  const otherPlans = live
    ? await ctx.em.find(Plan, { status: 'active', currency: subscription.plan.currency, id: { $ne: subscription.plan.id } }, { orderBy: { sortOrder: 'asc', price: 'asc' } })
    : [];
  const [invoices, creditNotes, wallet, ledger] = [
    await listInvoices(ctx, user, {}, page),
    await listCreditNotes(ctx, { user }, page),
    await readWallet(ctx, user),
    await listWalletTransactions(ctx, user, page),
  ];
  const usage = live && subscription.plan.charges.length > 0 ? await currentUsage(ctx, subscription) : null;
  const subjects = await ledgerSubjects(ctx.em, ledger.items);
  return { subscription, pendingPayment, otherPlans, invoices: invoices.items, creditNotes: creditNotes.items, wallet, ledger: ledger.items, ledgerSubjects: subjects, usage };
}
