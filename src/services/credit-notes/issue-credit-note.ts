import { LockMode } from '@mikro-orm/core';
import { CreditNote, CreditNoteLine, type CreditNoteReason } from '../../db/entities/credit-note.js';
import { Invoice, type LineSubject } from '../../db/entities/invoice.js';
import { Payment, Refund } from '../../db/entities/payment.js';
import type { WalletTransaction } from '../../db/entities/wallet.js';
import { isoDate } from '../../domain/billing-calendar.js';
import { add, compare, isPositive, minimum, subtract, ZERO, type Money } from '../../domain/money.js';
import { succeededTotal } from '../../domain/refund-sum.js';
import { creditNoteTax as splitCreditTax, taxActionFor, type TaxAction } from '../../domain/tax.js';
import type { DataContext } from '../context.js';
import { nextCreditNoteNumber } from '../invoices/next-invoice-number.js';

/*
 * NOTE: money that goes back against an invoice leaves a document (issue 20): every refund and
 * every wallet credit drawn from a payment of an invoice (a proration credit, a settlement
 * nobody could use) issues a credit note, exactly once, in the transaction that gives the money
 * back; so does a partial chargeback, money the card's issuer gave back (which takes no PPN off,
 * docs/tax.md). This module is the only writer of credit notes. Top-ups and staff wallet adjustments were never invoiced, so they
 * issue none.
 *
 * The invariant: the sum of an invoice's credit notes never exceeds what was paid on it (the
 * gross of its payments that settled). Checked here under the invoice's row lock; a credit that
 * would break it is a bug upstream and is refused.
 *
 * Lock order, as elsewhere: subscription, then payment (both held by the callers), then the
 * invoice, then the credit-note counter last (every credit note of the year waits on it).
 */

export interface CreditNoteInput {
  /** The payment whose money goes back; the note is issued against its invoice. */
  payment: Payment;
  reason: CreditNoteReason;
  amount: Money;
  refund?: Refund | null;
  walletTransaction?: WalletTransaction | null;
  memo?: string | null;
  /**
   * One line per part; by default one line of the whole amount. A line without a subject takes
   * the one its reason and the invoice tell (lineSubjectFor), so its words follow the document's language.
   */
  lines: { description: string; amount: Money; subject?: LineSubject | null }[];
}

/** Raised when a credit note would take an invoice's credit notes past what was paid on it. */
export class CreditNoteInvariantError extends Error {}

/**
 * Issues one credit note inside the caller's transaction. Returns null when the payment has no
 * invoice (nothing was invoiced, so nothing to credit). A wallet credit already documented for
 * this payment returns its note again (posting a wallet entry twice is a no-op too).
 */
export async function issueCreditNote(ctx: DataContext, input: CreditNoteInput): Promise<CreditNote | null> {
  if (!ctx.em.isInTransaction()) throw new Error('credit notes must be issued inside a transaction');
  if (!isPositive(input.amount)) return null;
  const invoiceRef = input.payment.invoice;
  if (!invoiceRef) return null;
  // Flushed first: the payment's settlement and refunds of this transaction must be visible to
  // the sums below, and their row locks taken before the invoice's and the counter's.
  await ctx.em.flush();
  if (input.walletTransaction) {
    const documented = await ctx.em.findOne(CreditNote, { walletTransaction: input.walletTransaction, payment: input.payment });
    if (documented) return documented;
  }
  const invoice = await ctx.em.findOneOrFail(Invoice, { id: invoiceRef.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  const paid = await paidOnInvoice(ctx, invoice);
  // One read of the invoice's notes for both sums: all of them (the invariant) and those that gave back supply (PPN).
  const earlier = await ctx.em.find(CreditNote, { invoice }, { fields: ['amount', 'reason', 'taxBase'] });
  const credited = add(ZERO, ...earlier.map((n) => n.amount));
  if (compare(add(credited, input.amount), paid) > 0) {
    throw new CreditNoteInvariantError(
      `A credit note of ${input.amount} ${invoice.currency} on invoice ${invoice.number} would take its credit notes (${credited}) past what was paid on it (${paid}).`,
    );
  }
  const tax = creditNoteTax(invoice, earlier.filter((n) => creditsTax(n.reason)), input);
  const at = ctx.clock.now();
  const note = ctx.em.create(CreditNote, {
    number: await nextCreditNoteNumber(ctx, at),
    user: input.payment.user,
    invoice,
    payment: input.payment,
    refund: input.refund ?? null,
    walletTransaction: input.walletTransaction ?? null,
    reason: input.reason,
    memo: input.memo ?? null,
    currency: input.payment.currency,
    amount: input.amount,
    taxBase: tax.taxBase,
    taxAmount: tax.taxAmount,
    taxRounding: tax.taxRounding,
    taxAction: tax.taxAction,
    issuedAt: at,
    createdAt: at,
  } as CreditNote);
  input.lines.forEach((line, position) =>
    ctx.em.create(CreditNoteLine, { creditNote: note, position, description: line.description, subject: line.subject ?? lineSubjectFor(input, invoice), amount: line.amount } as CreditNoteLine),
  );
  await ctx.em.flush();
  return note;
}

/**
 * What a line is when its caller named no subject, from the facts this module has (the reason,
 * the payment's order id, the memo that says why a settlement could not be used, the invoice's
 * number and period): a settlement nobody could use, or one that came after its period had
 * passed. Null when they do not tell (the stored English description is shown then).
 */
function lineSubjectFor(input: CreditNoteInput, invoice: Invoice): LineSubject | null {
  const order = input.payment.orderId;
  switch (input.reason) {
    case 'period_passed':
      if (invoice.periodStart && invoice.periodEnd) return { type: 'period_passed', order, invoice: invoice.number, start: isoDate(invoice.periodStart), end: isoDate(invoice.periodEnd) };
      return { type: 'unusable_settlement', order, invoice: invoice.number, why: 'period_passed' };
    case 'unusable_settlement':
      return { type: 'unusable_settlement', order, invoice: invoice.number, why: input.memo ?? null };
    default:
      return null;
  }
}

/**
 * NOTE: which credits give back supply, and so take DPP and PPN off the faktur (docs/tax.md,
 * "Credit notes"). A settlement nobody could use (a second payment of a paid invoice, one of a
 * voided invoice) paid for no supply; a chargeback is a dispute the card's issuer decided, not a
 * price change, and Indonesia gives no PPN relief for money lost to it: both credit no PPN and
 * need nothing in Coretax. A refund, unused time and a period that passed before its renewal
 * settled give back part of what the invoice supplied.
 */
export function creditsTax(reason: CreditNoteReason): boolean {
  return reason !== 'unusable_settlement' && reason !== 'chargeback';
}

const NO_TAX = { taxBase: ZERO, taxAmount: ZERO, taxRounding: ZERO, taxAction: 'none' as TaxAction };

/**
 * The tax parts of a credit note and what Coretax needs for it (src/domain/tax.ts): the faktur
 * stands at the invoice's DPP less what earlier supply credits took off, and at its total less
 * their amounts. A credit that gives back no supply, or one on an untaxed invoice, takes nothing off.
 */
function creditNoteTax(
  invoice: Invoice,
  earlierSupplyCredits: Pick<CreditNote, 'amount' | 'taxBase'>[],
  input: CreditNoteInput,
): { taxBase: Money; taxAmount: Money; taxRounding: Money; taxAction: TaxAction } {
  if (!creditsTax(input.reason) || invoice.taxBehavior === 'none' || !isPositive(invoice.taxBase)) return NO_TAX;
  const standing = {
    taxBase: subtract(invoice.taxBase, add(ZERO, ...earlierSupplyCredits.map((n) => n.taxBase))),
    gross: subtract(invoice.totalAmount, add(ZERO, ...earlierSupplyCredits.map((n) => n.amount))),
  };
  if (!isPositive(standing.taxBase)) return NO_TAX;
  const tax = splitCreditTax(standing, input.amount, invoice.currency);
  return { taxBase: tax.taxBase, taxAmount: tax.taxAmount, taxRounding: tax.taxRounding, taxAction: taxActionFor(tax) };
}

/** What was paid on an invoice: the gross of its payments whose money arrived (settled at some time). */
export async function paidOnInvoice(ctx: DataContext, invoice: Invoice): Promise<Money> {
  const payments = await ctx.em.find(Payment, { invoice, paidAt: { $ne: null } }, { fields: ['grossAmount'] });
  return add(ZERO, ...payments.map((p) => p.grossAmount));
}

/** The sum of an invoice's credit notes. */
export async function creditedOnInvoice(ctx: DataContext, invoice: Invoice): Promise<Money> {
  const notes = await ctx.em.find(CreditNote, { invoice }, { fields: ['amount'] });
  return add(ZERO, ...notes.map((n) => n.amount));
}

/**
 * Brings a payment's refund credit notes up to its succeeded refunds: each refund gets a note
 * for what no note covers yet, never more in all than the refunded total. NOTE: "once per
 * total": a refund made in the gateway's dashboard is known only by the cumulative
 * refund_amount, held by one row whose amount is recomputed (and which keyed refunds may later
 * replace), so notes follow the total, never a row twice. Issued when a refund succeeds, not
 * when it is requested: a refund the gateway declines gave nothing back, and credit notes are
 * never voided. A refund reported before the payment's settlement waits for the settlement
 * (nothing was paid on the invoice yet). Returns the changes for the log.
 */
export async function issueRefundCreditNotes(ctx: DataContext, payment: Payment): Promise<string[]> {
  if (!payment.paidAt || !payment.invoice) return [];
  await ctx.em.populate(payment, ['invoice']);
  await ctx.em.flush();
  const refunds = await ctx.em.find(Refund, { payment, status: 'succeeded' }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  const paymentNotes = await ctx.em.find(CreditNote, { payment });
  const notes = paymentNotes.filter((n) => n.reason === 'refund');
  // A refund made at the gateway can pay out to the card what a wallet credit of this payment
  // already gave back and documented (apply-refund.ts takes it back from the wallet): the
  // payment's notes never exceed its gross, so that part gets no second note.
  const creditNoted = add(ZERO, ...paymentNotes.filter((n) => n.reason !== 'refund').map((n) => n.amount));
  const refunded = minimum(succeededTotal(refunds), subtract(payment.grossAmount, creditNoted));
  let noted = add(ZERO, ...notes.map((n) => n.amount));
  const changes: string[] = [];
  for (const refund of refunds) {
    const ofRefund = add(ZERO, ...notes.filter((n) => n.refund?.id === refund.id).map((n) => n.amount));
    const owed = minimum(subtract(refund.amount, ofRefund), subtract(refunded, noted));
    if (!isPositive(owed)) continue;
    const note = await issueCreditNote(ctx, {
      payment,
      reason: 'refund',
      amount: owed,
      refund,
      walletTransaction: null,
      memo: refund.reason,
      lines: [{
        description: `Refund ${refund.refundKey} of payment ${payment.orderId} (invoice ${payment.invoice!.number})`,
        subject: { type: 'refund', refund: refund.refundKey, order: payment.orderId, invoice: payment.invoice!.number },
        amount: owed,
      }],
    });
    if (!note) continue;
    noted = add(noted, owed);
    changes.push(`credit note ${note.number} issued for ${owed}`);
  }
  return changes;
}

/**
 * Brings a payment's chargeback credit note up to its partial chargebacks (docs/tax.md): one
 * note for what no note covers yet, "once per total" as for refunds made at the gateway (each
 * partial chargeback raises the total). NOTE: like those refunds, a chargeback can pay out to the
 * card what a wallet credit of this payment already gave back and documented (reverse-payment.ts
 * takes it back from the wallet): the payment's notes never exceed its gross, so that part gets
 * no second note. A full chargeback opens the invoice again instead and issues none. `reason`:
 * the issuer's free text (the step's `refunds[]` reason, else the message's status_message).
 */
export async function issueChargebackCreditNotes(ctx: DataContext, payment: Payment, reason: string | null = null): Promise<string[]> {
  if (!payment.paidAt || !payment.invoice) return [];
  await ctx.em.populate(payment, ['invoice']);
  const notes = await ctx.em.find(CreditNote, { payment });
  const noted = add(ZERO, ...notes.filter((n) => n.reason === 'chargeback').map((n) => n.amount));
  const all = add(ZERO, ...notes.map((n) => n.amount));
  const owed = minimum(subtract(payment.chargebackAmount, noted), subtract(payment.grossAmount, all));
  const note = await issueCreditNote(ctx, {
    payment,
    reason: 'chargeback',
    amount: owed,
    walletTransaction: null,
    // The issuer's own words for the dispute, as the gateway passed them on: the customer's
    // document says why the money went back, as a refund's says the refund's reason.
    memo: reason,
    lines: [{
        description: `Chargeback of payment ${payment.orderId} by the card's issuer (invoice ${payment.invoice.number}), ${payment.chargebackAmount} in all`,
        subject: { type: 'chargeback', order: payment.orderId, invoice: payment.invoice.number, total: payment.chargebackAmount },
        amount: owed,
      }],
  });
  return note ? [`credit note ${note.number} issued for ${owed}`] : [];
}

/**
 * Documents a wallet credit drawn from payments of invoices: one credit note per payment (a
 * proration credit may draw on several), each against that payment's invoice.
 */
export async function issueWalletCreditNotes(
  ctx: DataContext,
  entry: WalletTransaction,
  reason: Exclude<CreditNoteReason, 'refund' | 'chargeback'>,
  parts: { payment: Payment; amount: Money; description: string; subject?: LineSubject }[],
  memo: string | null = null,
): Promise<CreditNote[]> {
  const notes: CreditNote[] = [];
  for (const part of parts) {
    const note = await issueCreditNote(ctx, {
      payment: part.payment,
      reason,
      amount: part.amount,
      walletTransaction: entry,
      memo,
      lines: [{ description: part.description, amount: part.amount, subject: part.subject }],
    });
    if (note) notes.push(note);
  }
  return notes;
}
