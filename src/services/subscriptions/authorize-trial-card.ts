import type { Plan } from '../../db/entities/plan.js';
import { DomainError } from '../../domain/errors.js';
import { GatewayError } from '../../gateway/errors.js';
import type { GatewayTransaction } from '../../gateway/types.js';
import { consoleLogger } from '../../logger.js';
import type { ServiceContext } from '../context.js';
import { savedCardOf, type SavedCard } from '../gateway-events/saved-card.js';
import { priceInvoice } from '../invoices/create-invoice.js';

/*
 * A card given when subscribing to a trial is kept for the trial's end (docs/billing.md, "A card
 * given for a trial"): the gateway pre-authorises the first period's amount with the card
 * (credit_card.type "authorize", 3-D Secure as for a charge, save_token_id), which moves no
 * money; once the gateway has saved the card, the authorisation is canceled and the hold on the
 * card released. The order is named after the subscription, so an answer or notification about
 * it leads back to its subscription without a table of its own.
 */

/** Every card pre-authorisation this service makes has an order id starting with this. */
export const CARD_CHECK_ORDER_PREFIX = 'CARD-';

/** `CARD-` and the subscription id's 32 hex digits (37 characters; the gateway takes 50). */
export function cardCheckOrderId(subscriptionId: string): string {
  return `${CARD_CHECK_ORDER_PREFIX}${subscriptionId.replace(/-/g, '').toUpperCase()}`;
}

/** The subscription a card pre-authorisation was made for, or null when the order id is not one. */
export function subscriptionOfCardCheck(orderId: string): string | null {
  const m = /^CARD-([0-9A-F]{8})([0-9A-F]{4})([0-9A-F]{4})([0-9A-F]{4})([0-9A-F]{12})$/.exec(orderId);
  return m ? m.slice(1).join('-').toLowerCase() : null;
}

/** What the gateway made of the card. */
export type CardCheck =
  /** Authorised and saved: the trial can start; the authorisation is to be canceled. */
  | { status: 'saved'; card: SavedCard; maskedCard: string | null }
  /** The customer must pass 3-D Secure at `redirectUrl`; the notification (or a sync) tells the rest. */
  | { status: 'pending'; redirectUrl: string | null; maskedCard: string | null };

/** The first paid period's amount, PPN included where the plan adds it: what the trial's end will charge. */
export function firstPeriodAmount(ctx: Pick<ServiceContext, 'config'>, plan: Plan, quantity = 1): string {
  return priceInvoice(ctx.config, {
    lines: [{ description: plan.name, kind: 'subscription', quantity: plan.perUnit ? quantity : 1, unitAmount: plan.price }],
    currency: plan.currency,
    taxBehavior: plan.taxBehavior,
  }).tax.total;
}

const reasonOf = (tx: GatewayTransaction): string => {
  const message = tx.raw['status_message'];
  const channel = tx.raw['channel_response_message'];
  return [typeof message === 'string' ? message : null, typeof channel === 'string' && channel !== '' ? `(${channel})` : null].filter(Boolean).join(' ') || tx.transactionStatus;
};

/**
 * What a gateway answer about a card pre-authorisation means. Throws `card_declined` (the bank
 * or the fraud check refused the card, or 3-D Secure failed) and `gateway_error` (approved, but
 * the gateway did not save the card) with the gateway's reason.
 */
export function readCardCheck(tx: GatewayTransaction): CardCheck {
  const masked = tx.paymentDetails.masked_card ?? null;
  const approved = tx.transactionStatus === 'authorize' || (tx.transactionStatus === 'capture' && tx.fraudStatus === 'accept');
  if (approved) {
    const card = savedCardOf(tx.raw);
    if (!card) throw new DomainError('gateway_error', `The gateway approved the card but did not save it for the trial's end (${reasonOf(tx)}).`);
    return { status: 'saved', card, maskedCard: masked };
  }
  if (tx.transactionStatus === 'pending') return { status: 'pending', redirectUrl: tx.paymentDetails.redirect_url ?? null, maskedCard: masked };
  throw new DomainError('card_declined', `The card was declined: ${reasonOf(tx)}.`);
}

/**
 * Asks the gateway to pre-authorise `amount` on the card (the customer is present: 3-D Secure
 * when the card asks for it) and to save it. Nothing is written here. A gateway that refused the
 * request throws its GatewayError (502/503 with its reason); one whose answer was lost may hold
 * an authorisation, which is canceled before the error goes on.
 */
export async function authorizeTrialCard(
  ctx: ServiceContext,
  input: { orderId: string; amount: string; currency: string; token: string; customer?: Record<string, string> },
): Promise<CardCheck> {
  let tx: GatewayTransaction;
  try {
    tx = await ctx.gateway.charge({
      orderId: input.orderId,
      grossAmount: input.amount,
      currency: input.currency,
      paymentType: 'credit_card',
      cardToken: input.token,
      saveCard: true,
      authorizeOnly: true,
      customer: input.customer
        ? { firstName: input.customer.first_name, lastName: input.customer.last_name, email: input.customer.email, phone: input.customer.phone }
        : undefined,
    });
  } catch (err) {
    if (err instanceof GatewayError && err.outcomeUnknown) await releaseCardAuthorization(ctx, input.orderId);
    throw err;
  }
  try {
    return readCardCheck(tx);
  } catch (err) {
    // Approved but not saved: the hold has no use.
    if (tx.transactionStatus === 'authorize' || tx.transactionStatus === 'capture') await releaseCardAuthorization(ctx, input.orderId);
    throw err;
  }
}

/**
 * Cancels a card pre-authorisation at the gateway, releasing the hold on the customer's card.
 * Best effort: one the gateway does not know, or no longer holds, needs nothing; a gateway that
 * cannot be reached leaves it to lapse there on its own (a pre-authorisation lasts a few days),
 * and `GET /subscriptions/{id}/sync/` tries again.
 */
export async function releaseCardAuthorization(ctx: ServiceContext, orderId: string): Promise<boolean> {
  try {
    await ctx.gateway.cancel(orderId);
    return true;
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    if (err.kind !== 'not_found' && err.kind !== 'cannot_modify') consoleLogger.warn(`card pre-authorisation ${orderId} not canceled: ${err.message}`);
    return false;
  }
}
