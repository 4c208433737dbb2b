import { CreditNote } from '../../db/entities/credit-note.js';
import { Invoice } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import { isPositive, type Money } from '../../domain/money.js';
import type { FakturValue, TaxAction } from '../../domain/tax.js';
import type { DataContext } from '../context.js';
import { creditsTax } from '../credit-notes/issue-credit-note.js';
import { creditNotesOf, standingValue } from './faktur-standing.js';
import { isInMonth, localDate, searchWindow, type TaxMonth } from './tax-month.js';

/**
 * What happened to a faktur: a credit note that takes DPP off (`credit_note`), a chargeback, a
 * reversal by the gateway or a write-off (PPN stands), or an invoice credited in full before its
 * first export, which no faktur will ever hold (`not_exported`).
 */
export type TaxCorrectionKind = 'credit_note' | 'chargeback' | 'reversal' | 'write_off' | 'not_exported';

export interface TaxCorrection {
  kind: TaxCorrectionKind;
  /** The credit note, null for a full chargeback, a reversal or a write-off (which issue none). */
  creditNoteNumber: string | null;
  /** YYYY-MM-DD in BILLING_TIMEZONE. */
  issuedOn: string;
  at: Date;
  invoiceNumber: string;
  /** The invoice's Faktur Pajak number, null until `billing-admin tax record`. */
  taxInvoiceNumber: string | null;
  /** The money credited, charged back, reversed or written off. */
  amount: Money;
  /** The PPN taken off the faktur ("0.00" when PPN stands). */
  taxAmount: Money;
  taxAction: TaxAction;
  /** The faktur's DPP, DPP Nilai Lain and PPN before and after, as Coretax computes them. */
  before: FakturValue;
  after: FakturValue;
  /** What the finance team does in Coretax, in one line. */
  instruction: string;
}

/**
 * What happened in `month` (BILLING_TIMEZONE) to fakturs already exported, oldest first, each with
 * what to do in Coretax, which takes corrections in its own screens, never by import (docs/tax.md,
 * "tax corrections"): credit notes that take DPP off; chargebacks, reversals and write-offs,
 * where PPN stands (a chargeback before the export too, once the faktur is exported: its
 * faktur is due on the money received and holds its full value), each dated by the instant the service applied it (charged_back_at,
 * reversed_at, uncollectible_at: updated_at would move with any later change of the row). A faktur never exported needs no correction: its export holds the value after its
 * credits; one credited in full before it is listed as never to be exported.
 */
export async function listTaxCorrections(ctx: DataContext, month: TaxMonth): Promise<TaxCorrection[]> {
  const timeZone = ctx.config.documents.timeZone;
  const { from, to } = searchWindow(month);
  const inMonth = (at: Date) => isInMonth(at, month, timeZone);
  // A credit at the export's very instant is in the exported faktur (export-coretax.ts takes off those up to it).
  const exportedBy = (invoice: Invoice, at: Date) => invoice.taxExportedAt !== null && invoice.taxExportedAt < at;
  const taxable = { taxBehavior: { $ne: 'none' as const }, taxBase: { $gt: '0.00' } };

  const notes = (
    await ctx.em.find(CreditNote, { issuedAt: { $gte: from, $lt: to }, invoice: taxable }, { populate: ['invoice'], orderBy: [{ issuedAt: 'asc' }, { number: 'asc' }] })
  ).filter((n) => inMonth(n.issuedAt));
  const exportedInvoice = { ...taxable, taxExportedAt: { $ne: null } };
  const chargedBack = (
    await ctx.em.find(Payment, { status: 'charged_back', chargedBackAt: { $gte: from, $lt: to }, invoice: exportedInvoice }, { populate: ['invoice'] })
  ).filter((p) => inMonth(p.chargedBackAt!));
  const reversed = (
    await ctx.em.find(Payment, { status: 'reversed', reversedAt: { $gte: from, $lt: to }, invoice: exportedInvoice }, { populate: ['invoice'] })
  ).filter((p) => inMonth(p.reversedAt!) && exportedBy(p.invoice!, p.reversedAt!));
  const writtenOff = (
    await ctx.em.find(Invoice, { ...exportedInvoice, status: 'uncollectible', uncollectibleAt: { $gte: from, $lt: to } })
  ).filter((i) => inMonth(i.uncollectibleAt!) && exportedBy(i, i.uncollectibleAt!));
  const allNotes = await creditNotesOf(ctx.em, [...notes.map((n) => n.invoice), ...chargedBack.map((p) => p.invoice!), ...reversed.map((p) => p.invoice!), ...writtenOff]);
  /** The faktur's value once the notes of its invoice issued up to `at` are taken off. */
  const valueAt = (invoice: Invoice, at: Date) => standingValue(invoice, (allNotes.get(invoice.id) ?? []).filter((n) => n.issuedAt <= at));

  const rows: TaxCorrection[] = [];
  const row = (kind: TaxCorrectionKind, invoice: Invoice, at: Date, fields: Pick<TaxCorrection, 'creditNoteNumber' | 'amount' | 'taxAmount' | 'taxAction' | 'before' | 'after'>) =>
    rows.push({ kind, issuedOn: localDate(at, timeZone), at, invoiceNumber: invoice.number, taxInvoiceNumber: invoice.taxInvoiceNumber, ...fields, instruction: '' });

  for (const note of notes) {
    const invoice = note.invoice;
    const ofInvoice = allNotes.get(invoice.id) ?? [];
    const index = ofInvoice.findIndex((n) => n.id === note.id);
    const before = standingValue(invoice, ofInvoice.slice(0, index));
    const takesDpp = creditsTax(note.reason) && isPositive(note.taxBase);
    const after = takesDpp ? standingValue(invoice, ofInvoice.slice(0, index + 1)) : before;
    const fields = { creditNoteNumber: note.number, amount: note.amount, before, after };
    // A chargeback takes no PPN off whenever it came: once the faktur is exported, PPN stands.
    if (note.reason === 'chargeback' && !takesDpp) {
      if (invoice.taxExportedAt !== null) row('chargeback', invoice, note.issuedAt, { ...fields, taxAmount: '0.00', taxAction: 'none' });
      continue;
    }
    if (!exportedBy(invoice, note.issuedAt)) {
      // Never exported: the export will hold the value after this note, unless nothing is left.
      if (takesDpp && !isPositive(after.taxBase)) row('not_exported', invoice, note.issuedAt, { ...fields, taxAmount: '0.00', taxAction: 'none', after: before });
      continue;
    }
    if (takesDpp) row('credit_note', invoice, note.issuedAt, { ...fields, taxAmount: note.taxAmount, taxAction: note.taxAction });
  }
  // NOTE: a full chargeback is dated by the payment's first chargeback: when a partial one came
  // first, that is the partial one's instant (docs/tax.md, "tax corrections").
  for (const payment of chargedBack) {
    const value = valueAt(payment.invoice!, payment.chargedBackAt!);
    const amount = isPositive(payment.chargebackAmount) ? payment.chargebackAmount : payment.grossAmount;
    row('chargeback', payment.invoice!, payment.chargedBackAt!, { creditNoteNumber: null, amount, taxAmount: '0.00', taxAction: 'none', before: value, after: value });
  }
  // The gateway took the whole payment back: the supply was made and its faktur stands.
  for (const payment of reversed) {
    const value = valueAt(payment.invoice!, payment.reversedAt!);
    row('reversal', payment.invoice!, payment.reversedAt!, { creditNoteNumber: null, amount: payment.grossAmount, taxAmount: '0.00', taxAction: 'none', before: value, after: value });
  }
  for (const invoice of writtenOff) {
    const value = valueAt(invoice, invoice.uncollectibleAt!);
    row('write_off', invoice, invoice.uncollectibleAt!, { creditNoteNumber: null, amount: invoice.totalAmount, taxAmount: '0.00', taxAction: 'none', before: value, after: value });
  }
  // At one instant: credit notes by number, then chargebacks, reversals and write-offs in that order (the sort is stable).
  const noteless = (r: TaxCorrection) => (r.creditNoteNumber === null ? 1 : 0);
  rows.sort((a, b) => a.at.getTime() - b.at.getTime() || noteless(a) - noteless(b) || (a.creditNoteNumber ?? '').localeCompare(b.creditNoteNumber ?? ''));
  for (const r of rows) r.instruction = instructionFor(r);
  return rows;
}

const valueText = (v: FakturValue) => `DPP ${v.taxBase}, DPP Nilai Lain ${v.otherTaxBase}, PPN ${v.taxAmount}`;

function instructionFor(r: TaxCorrection): string {
  const faktur = r.taxInvoiceNumber ? `Faktur Pajak ${r.taxInvoiceNumber}` : `the Faktur Pajak of ${r.invoiceNumber} (its number is not recorded yet: billing-admin tax record)`;
  switch (r.kind) {
    case 'not_exported':
      return `Credited in full before its first export: no faktur was made for ${r.invoiceNumber} and none will be; nothing to do in Coretax.`;
    case 'chargeback':
      return `PPN stands: a chargeback is a dispute, not a price change, and takes no PPN off; ${faktur} keeps ${valueText(r.before)}. Nothing to do in Coretax.`;
    case 'reversal':
      return `PPN stands: the gateway took payment back for ${r.invoiceNumber} (a deny or cancel after settlement), but the service was supplied and ${faktur} keeps ${valueText(r.before)}. Nothing to do in Coretax: the invoice is owed again, and its next payment is paid on this faktur, not a new one; if it is never paid, it is written off, and PPN still stands.`;
    case 'write_off':
      return `PPN stands: an invoice written off as uncollectible takes no PPN off; ${faktur} keeps ${valueText(r.before)}. Nothing to do in Coretax.`;
    case 'credit_note':
      break;
  }
  switch (r.taxAction) {
    case 'buyer_cancellation_note':
      return `Ask the buyer to make a Nota Pembatalan in Coretax for ${faktur}; its ${valueText(r.before)} are cancelled only when DJP approves the note.`;
    case 'amendment':
      return `Amend ${faktur} in Coretax (Faktur Pajak Pengganti: e-Faktur, Pajak Keluaran, Amend) to the value after this credit: DPP ${r.before.taxBase} to ${r.after.taxBase}, DPP Nilai Lain ${r.before.otherTaxBase} to ${r.after.otherTaxBase}, PPN ${r.before.taxAmount} to ${r.after.taxAmount}; the buyer approves the replacement.`;
    case 'cancel_and_reissue':
      return `Cancel ${faktur} in Coretax (the buyer confirms the cancellation) and make a new faktur naming the right buyer.`;
    case 'none':
      return 'Nothing to do in Coretax.';
  }
}
