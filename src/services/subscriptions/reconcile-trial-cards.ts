import type { EntityManager } from '@mikro-orm/knex';
import { Invoice } from '../../db/entities/invoice.js';
import { Subscription } from '../../db/entities/subscription.js';
import { addDays } from '../../domain/billing-calendar.js';
import { GatewayError } from '../../gateway/errors.js';
import type { ServiceContext } from '../context.js';
import { cardCheckOrderId } from './authorize-trial-card.js';
import type { ReconcileItem } from '../gateway-events/reconcile-payments.js';
import { confirmTrialCard } from './confirm-trial-card.js';

/*
 * A card given for a trial is pre-authorised at the gateway (authorize-trial-card.ts): a hold on
 * the customer's card, with no row of its own here. Its notifications can be lost, and the
 * cancel that releases it can fail, so reconciliation (`payments sync`) asks the gateway about
 * each hold that may still be undecided or held, and does what the webhook would.
 */

/**
 * How long the gateway keeps a pre-authorisation before releasing it itself (Midtrans: 8 days).
 * A trial started longer ago than this cannot hold the customer's card any more.
 */
export const CARD_HOLD_DAYS = 8;

/** One hold's reconciliation, as `payments sync` reports each order: the subscription's status before and after. */
export type TrialCardItem = ReconcileItem & { kind: 'card_check' };

/**
 * The subscriptions whose card pre-authorisation may be undecided or still held, oldest first:
 * every one still waiting for its card (pending with a card and no invoice: its 3-D Secure result
 * unheard), and every card trial begun within CARD_HOLD_DAYS (its release may have failed).
 */
export async function trialCardsToReconcile(ctx: Pick<ServiceContext, 'em' | 'clock'>, since?: Date): Promise<Pick<Subscription, 'id' | 'status'>[]> {
  const em = ctx.em.fork({ keepTransactionContext: true }) as EntityManager;
  const created = since ? { createdAt: { $gte: since } } : {};
  const holdSince = addDays(ctx.clock.now(), -CARD_HOLD_DAYS);
  const subs = await em.find(
    Subscription,
    {
      paymentType: 'credit_card',
      $or: [{ status: 'pending' }, { status: { $ne: 'pending' }, trialEnd: { $ne: null }, createdAt: { $gte: holdSince } }],
      ...created,
    },
    { fields: ['id', 'status'], orderBy: { createdAt: 'asc' } },
  );
  const invoiced = new Set(
    (await em.find(Invoice, { subscription: { $in: subs.filter((s) => s.status === 'pending').map((s) => s.id) } }, { fields: ['subscription'] })).map((i) => i.subscription!.id),
  );
  // A pending subscription with an invoice waits for a payment, not a card: payments sync asks about that.
  return subs.filter((s) => s.status !== 'pending' || !invoiced.has(s.id));
}

/** `payments sync`'s look at the trial card holds (after the payments and top-ups); each reported as it is done. */
export async function reconcileTrialCards(ctx: ServiceContext, input: { since?: Date; limit?: number; dryRun?: boolean }, onItem?: (item: TrialCardItem, index: number, total: number) => void): Promise<TrialCardItem[]> {
  const subs = (await trialCardsToReconcile(ctx, input.since)).slice(0, input.limit);
  const items: TrialCardItem[] = [];
  for (const sub of subs) {
    const item = await reconcileTrialCard(ctx, sub, Boolean(input.dryRun));
    items.push(item);
    onItem?.(item, items.length - 1, subs.length);
  }
  return items;
}

/**
 * Asks the gateway about one subscription's card pre-authorisation and does what its
 * notification would (confirmTrialCard): starts the trial with the card, or cancels the waiting
 * subscription, and releases a hold still approved there, retrying a release that failed. A dry
 * run only asks and says whether there is something to do.
 */
export async function reconcileTrialCard(ctx: ServiceContext, sub: Pick<Subscription, 'id' | 'status'>, dryRun: boolean): Promise<TrialCardItem> {
  const orderId = cardCheckOrderId(sub.id);
  const base = { kind: 'card_check' as const, id: sub.id, orderId, statusBefore: sub.status, statusAfter: sub.status, changes: [] as string[], error: null, log: null };
  try {
    if (dryRun) return { ...base, ...(await preview(ctx, sub, orderId)) };
    const done = await confirmTrialCard(ctx, sub.id);
    const now = await ctx.em.fork().findOneOrFail(Subscription, sub.id, { fields: ['status'] });
    const changes = [
      ...(done.outcome === 'trial_started' ? ['trial started with the saved card'] : []),
      ...(done.outcome === 'card_declined' ? [`waiting subscription ${now.status}: the card was not approved (${done.gatewayStatus})`] : []),
      ...(done.released ? ['card hold released at the gateway'] : []),
    ];
    const stillHeld = !done.released && (done.gatewayStatus === 'authorize' || done.gatewayStatus === 'capture');
    return {
      ...base,
      statusAfter: now.status,
      gatewayStatus: done.gatewayStatus,
      result: done.gatewayStatus === null ? 'not_found' : stillHeld ? 'gateway_error' : changes.length > 0 ? 'processed' : 'unchanged',
      changes,
      error: stillHeld ? 'the card hold could not be released; the next sync tries again' : null,
    };
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    return { ...base, gatewayStatus: null, result: err.kind === 'not_found' ? 'not_found' : 'gateway_error', error: `gateway ${err.kind}: ${err.message}` };
  }
}

/** What a real run would do, from the gateway's status alone. */
async function preview(ctx: ServiceContext, sub: Pick<Subscription, 'status'>, orderId: string): Promise<Pick<TrialCardItem, 'gatewayStatus' | 'result' | 'changes'>> {
  const answer = await ctx.gateway.status(orderId);
  const status = answer.transactionStatus;
  const held = status === 'authorize' || status === 'capture';
  const changes = [
    ...(sub.status === 'pending' && status !== 'pending' ? [held ? 'the trial would start with the saved card' : 'the waiting subscription would be canceled'] : []),
    ...(held ? ['the card hold would be released at the gateway'] : []),
  ];
  return { gatewayStatus: status, result: changes.length > 0 ? 'would_process' : 'unchanged', changes };
}
