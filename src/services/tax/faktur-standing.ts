import type { EntityManager } from '@mikro-orm/knex';
import { CreditNote } from '../../db/entities/credit-note.js';
import type { Invoice } from '../../db/entities/invoice.js';
import { add, subtract, ZERO, type Money } from '../../domain/money.js';
import { fakturValueOf, type FakturValue } from '../../domain/tax.js';
import { creditsTax } from '../credit-notes/issue-credit-note.js';

/*
 * NOTE: where an invoice's faktur stands (docs/tax.md, "Credit notes"): its DPP less what the
 * credit notes that gave back supply took off (their tax_base), each value computed as Coretax
 * computes it. The export writes the value standing when the faktur is made; corrections give it
 * before and after each later note.
 */

/** An invoice's credit notes, oldest first, by invoice id. */
export async function creditNotesOf(em: EntityManager, invoices: Pick<Invoice, 'id'>[]): Promise<Map<string, CreditNote[]>> {
  const byInvoice = new Map<string, CreditNote[]>();
  const ids = [...new Set(invoices.map((i) => i.id))];
  for (let start = 0; start < ids.length; start += 1000) {
    const notes = await em.find(CreditNote, { invoice: { $in: ids.slice(start, start + 1000) } }, { orderBy: [{ issuedAt: 'asc' }, { number: 'asc' }] });
    for (const note of notes) byInvoice.set(note.invoice.id, [...(byInvoice.get(note.invoice.id) ?? []), note]);
  }
  return byInvoice;
}

/** The faktur's DPP once `notes` (those that gave back supply count) are taken off the invoice's. */
export function standingTaxBase(invoice: Pick<Invoice, 'taxBase'>, notes: Pick<CreditNote, 'reason' | 'taxBase'>[]): Money {
  return subtract(invoice.taxBase, add(ZERO, ...notes.filter((n) => creditsTax(n.reason)).map((n) => n.taxBase)));
}

/** The faktur value of an invoice after `notes`. */
export function standingValue(invoice: Pick<Invoice, 'taxBase' | 'currency'>, notes: Pick<CreditNote, 'reason' | 'taxBase'>[]): FakturValue {
  return fakturValueOf(standingTaxBase(invoice, notes), invoice.currency);
}
