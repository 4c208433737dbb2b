import { randomUUID } from 'node:crypto';
import { HostedSession } from '../../db/entities/hosted-session.js';
import { Invoice } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import { DomainError } from '../../domain/errors.js';
import { GatewayError } from '../../gateway/errors.js';
import type { ServiceContext } from '../context.js';
import { chargeSubscription } from '../subscriptions/charge-subscription.js';
import { chargeProgress, claimMs, nothingYet, type CheckoutChoice, type CheckoutProgress, type ChoiceResult } from './checkout.js';
import { invoiceClaimHash } from './invoice-links.js';
import { askGatewayAboutPayment, cancelWaitingPayment, dueToAsk } from './waiting-payment.js';

/**
 * An open invoice's hosted page (docs/hosted.md, "A page for every open invoice"): where it
 * stands, and the customer's choice of method, charged by the same use case as
 * `POST /payments/charge/` with the invoice. It shows the checkout's states: `choose`,
 * `processing` (another submit is charging), `pending`/`confirming` (a payment waits for the
 * customer, which another method may replace), `paid`, and `nothing_due` once the invoice was
 * voided or written off.
 */

/** How long an invoice page's claim row is kept after its last claim (the hourly sweep then deletes it). */
const CLAIM_ROW_MS = 24 * 3_600_000;

/** The invoice a page shows, read afresh with its owner; null when there is none. */
export function findPageInvoice(ctx: Pick<ServiceContext, 'em'>, invoiceId: string): Promise<Invoice | null> {
  return ctx.em.findOne(Invoice, invoiceId, { populate: ['user', 'lines'], refresh: true });
}

/** Where the invoice stands, leaving any claim out. */
async function madeProgress(ctx: Pick<ServiceContext, 'em'>, invoiceId: string): Promise<CheckoutProgress> {
  const invoice = await ctx.em.fork().findOneOrFail(Invoice, invoiceId);
  if (invoice.status === 'paid') return { ...nothingYet, state: 'paid' };
  if (invoice.status !== 'open') return { ...nothingYet, state: 'nothing_due' };
  const payments = await ctx.em.fork().find(Payment, { invoice: invoiceId }, { orderBy: { createdAt: 'desc' } });
  const waiting = payments.find((p) => p.status === 'pending');
  if (waiting) return chargeProgress(waiting, waiting.grossAmount);
  // A card the bank refused is said next to the card form; any other ended payment (a virtual
  // account that lapsed, a renewal that failed) just leaves the invoice to pay.
  const latest = payments[0];
  if (latest?.status === 'failed' && latest.paymentType === 'credit_card' && latest.gatewayStatus === 'deny') {
    return { ...nothingYet, state: 'failed', failure: 'card_declined' };
  }
  return nothingYet;
}

function isClaimed(ctx: Pick<ServiceContext, 'config' | 'clock'>, row: HostedSession | null): boolean {
  return row?.choosingAt != null && ctx.clock.now().getTime() - row.choosingAt.getTime() < claimMs(ctx);
}

/** The invoice page's progress as its GET shows it: nothing is written. */
export async function invoiceProgress(ctx: Pick<ServiceContext, 'em' | 'config' | 'clock'>, invoiceId: string): Promise<CheckoutProgress> {
  const made = await madeProgress(ctx, invoiceId);
  if (made.state === 'paid' || made.state === 'nothing_due') return made;
  const row = await ctx.em.fork().findOne(HostedSession, { tokenHash: invoiceClaimHash(invoiceId), kind: 'invoice' });
  return isClaimed(ctx, row) ? { ...nothingYet, state: 'processing' } : made;
}

/**
 * The page's poll: its progress, and a waiting payment asked about at the gateway (at most
 * every few seconds), its answer applied as `payments sync` applies it, so a late or lost
 * notification does not leave the customer waiting.
 */
export async function followInvoice(ctx: ServiceContext, invoiceId: string): Promise<CheckoutProgress> {
  const progress = await invoiceProgress(ctx, invoiceId);
  if ((progress.state !== 'pending' && progress.state !== 'confirming') || !progress.orderId) return progress;
  const payment = await ctx.em.fork().findOneOrFail(Payment, { orderId: progress.orderId }, { fields: ['createdAt'] });
  if (!dueToAsk(ctx, `invoice:${invoiceId}`, payment.createdAt)) return progress;
  try {
    await askGatewayAboutPayment(ctx, progress.orderId, progress.state === 'pending');
  } catch (err) {
    // The gateway cannot be reached now: the page keeps waiting and asks again on a later poll.
    if (!(err instanceof GatewayError)) throw err;
    return progress;
  }
  return invoiceProgress(ctx, invoiceId);
}

/**
 * Claims the invoice's page for one submit: one conditional UPDATE of its claim row (made by
 * the first submit ever, one per invoice), so that of forty submits at once one charges. A
 * claim left by a process that died is taken over after claimMs.
 */
async function claim(ctx: ServiceContext, invoice: Invoice, at: Date): Promise<boolean> {
  const tokenHash = invoiceClaimHash(invoice.id);
  const keepUntil = new Date(at.getTime() + CLAIM_ROW_MS);
  const em = ctx.em.fork();
  const row = { kind: 'invoice' as const, user: invoice.user.id, tokenHash, expiresAt: keepUntil, createdAt: at };
  await em.createQueryBuilder(HostedSession).insert({ id: randomUUID(), ...row }).onConflict('token_hash').ignore().execute();
  const stale = new Date(at.getTime() - claimMs(ctx));
  const claimed = await em.nativeUpdate(
    HostedSession,
    { tokenHash, kind: 'invoice', $or: [{ choosingAt: null }, { choosingAt: { $lt: stale } }] },
    // Kept from the sweep while it is claimed.
    { choosingAt: at, expiresAt: keepUntil },
  );
  return claimed === 1;
}

/**
 * The customer's choice on an invoice's page, charged as `POST /payments/charge/` charges
 * `invoice_id` (its earlier pending orders withdrawn and canceled at the gateway first), as
 * the invoice's owner. NOTE: one charge per page, as on the checkout: a submit claims the
 * page first; the others, and any submit once a payment waits, answer `already_chosen`. A
 * waiting payment is replaced only when the page's switch form names it, and only once the
 * gateway canceled it: one the gateway would not cancel, or that was paid, stays the one.
 */
export async function payInvoiceChoice(ctx: ServiceContext, invoice: Invoice, choice: Omit<CheckoutChoice, 'terms'>): Promise<ChoiceResult> {
  const at = ctx.clock.now();
  if (!(await claim(ctx, invoice, at))) return { outcome: 'already_chosen' };
  try {
    const progress = await madeProgress(ctx, invoice.id);
    const switching = (progress.state === 'pending' || progress.state === 'confirming') && choice.replaces !== undefined && choice.replaces === progress.orderId;
    if (!switching && progress.state !== 'choose' && progress.state !== 'failed') return { outcome: 'already_chosen' };
    if (switching) {
      const earlier = await cancelWaitingPayment(ctx, progress.orderId!);
      if (earlier !== 'canceled') return { outcome: earlier === 'paid' ? 'earlier_paid' : 'earlier_not_canceled' };
    }
    try {
      await chargeSubscription(ctx, invoice.user, { invoiceId: invoice.id, paymentType: choice.paymentType, token: choice.token, bank: choice.bank });
    } catch (err) {
      // An earlier order paid the invoice meanwhile (its cancel was refused, its status applied).
      if (err instanceof DomainError && err.code === 'nothing_due') return { outcome: 'earlier_paid' };
      throw err;
    }
    return { outcome: 'charged', threeDsUrl: null };
  } finally {
    await ctx.em.fork().nativeUpdate(HostedSession, { tokenHash: invoiceClaimHash(invoice.id), kind: 'invoice', choosingAt: at }, { choosingAt: null });
  }
}
