import { CreditNote } from '../../db/entities/credit-note.js';
import type { Invoice } from '../../db/entities/invoice.js';
import { add, subtract, ZERO, type Money } from '../../domain/money.js';
import type { TaxAction } from '../../domain/tax.js';
import type { DataContext } from '../context.js';
import { isInMonth, localDate, searchWindow, type TaxMonth } from './tax-month.js';

export interface TaxCorrection {
  creditNoteNumber: string;
  /** YYYY-MM-DD in BILLING_TIMEZONE. */
  issuedOn: string;
  invoiceNumber: string;
  /** The invoice's Faktur Pajak number, null until `billing-admin tax record`. */
  taxInvoiceNumber: string | null;
  amount: Money;
  taxAmount: Money;
  taxAction: Exclude<TaxAction, 'none'>;
  /** The invoice's PPN not yet credited, before and after this credit note. */
  taxBefore: Money;
  taxAfter: Money;
  /** What the finance team does in Coretax, in one line. */
  instruction: string;
}

/**
 * The credit notes issued in `month` (BILLING_TIMEZONE) that need a correction in Coretax, oldest
 * first, each with what to do there: Coretax takes corrections in its own screens, not by import
 * (tax/CORETAX.md §3, docs/tax.md).
 */
export async function listTaxCorrections(ctx: DataContext, month: TaxMonth): Promise<TaxCorrection[]> {
  const timeZone = ctx.config.documents.timeZone;
  const { from, to } = searchWindow(month);
  const notes = (
    await ctx.em.find(
      CreditNote,
      { issuedAt: { $gte: from, $lt: to }, taxAction: { $ne: 'none' } },
      { populate: ['invoice'], orderBy: [{ issuedAt: 'asc' }, { number: 'asc' }] },
    )
  ).filter((n) => isInMonth(n.issuedAt, month, timeZone));
  const creditedBefore = await taxCreditedBefore(ctx, notes);
  return notes.map((note) => {
    const invoice = note.invoice;
    const taxBefore = subtract(invoice.taxAmount, creditedBefore.get(note.id) ?? ZERO);
    const taxAfter = subtract(taxBefore, note.taxAmount);
    const action = note.taxAction as TaxCorrection['taxAction'];
    return {
      creditNoteNumber: note.number,
      issuedOn: localDate(note.issuedAt, timeZone),
      invoiceNumber: invoice.number,
      taxInvoiceNumber: invoice.taxInvoiceNumber,
      amount: note.amount,
      taxAmount: note.taxAmount,
      taxAction: action,
      taxBefore,
      taxAfter,
      instruction: instructionFor(action, invoice, taxBefore, taxAfter),
    };
  });
}

/** For each note, the PPN its invoice's earlier credit notes (of any month) already credited. */
async function taxCreditedBefore(ctx: DataContext, notes: CreditNote[]): Promise<Map<string, Money>> {
  const invoiceIds = [...new Set(notes.map((n) => n.invoice.id))];
  const all = invoiceIds.length === 0 ? [] : await ctx.em.find(CreditNote, { invoice: { $in: invoiceIds } }, { orderBy: [{ issuedAt: 'asc' }, { number: 'asc' }] });
  const running = new Map<string, Money>();
  const before = new Map<string, Money>();
  for (const note of all) {
    const soFar = running.get(note.invoice.id) ?? ZERO;
    before.set(note.id, soFar);
    running.set(note.invoice.id, add(soFar, note.taxAmount));
  }
  return before;
}

function instructionFor(action: TaxCorrection['taxAction'], invoice: Invoice, taxBefore: Money, taxAfter: Money): string {
  const faktur = invoice.taxInvoiceNumber
    ? `Faktur Pajak ${invoice.taxInvoiceNumber}`
    : `the Faktur Pajak of ${invoice.number} (its number is not recorded yet: billing-admin tax record)`;
  switch (action) {
    case 'buyer_cancellation_note':
      return `Ask the buyer to make a Nota Pembatalan in Coretax for ${faktur} (PMK 81/2024 Pasal 289); its PPN of ${taxBefore} is cancelled only when DJP approves the note.`;
    case 'amendment':
      return `Amend ${faktur} in Coretax (Faktur Pajak Pengganti: e-Faktur, Pajak Keluaran, Amend) to the value after this credit, PPN ${taxBefore} to ${taxAfter}; the buyer approves the replacement.`;
    case 'cancel_and_reissue':
      return `Cancel ${faktur} in Coretax (the buyer confirms the cancellation) and make a new faktur naming the right buyer.`;
  }
}
