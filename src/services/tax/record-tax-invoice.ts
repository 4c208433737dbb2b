import { LockMode } from '@mikro-orm/core';
import { isPostgres } from '../../db/dialect.js';
import { Invoice } from '../../db/entities/invoice.js';
import { DomainError, InvalidStateError, NotFoundError, ValidationError } from '../../domain/errors.js';
import { isPositive } from '../../domain/money.js';
import type { DataContext } from '../context.js';

export interface RecordedTaxInvoice {
  invoiceNumber: string;
  taxInvoiceNumber: string;
  /** True when the invoice already had this number: nothing changed. */
  alreadyRecorded: boolean;
}

/**
 * The 17-digit NSFP Coretax assigns on approval (PER-11/PJ/2025): a 2-digit transaction code, a
 * 2-digit status (00 normal, 01, 02 … replacements) and a 13-digit serial. People copy it with
 * dots and dashes (04.00-25.00000000001); those are dropped. Null when it is not 17 digits.
 */
export function normaliseFakturNumber(text: string): string | null {
  const digits = text.replace(/[\s.\-]/g, '');
  return /^\d{17}$/.test(digits) ? digits : null;
}

/**
 * Stores the Faktur Pajak number Coretax assigned to a taxed, paid invoice (`billing-admin tax
 * record`). Safe to repeat with the same number; a different number, or one already on another
 * invoice, is refused: a replacement or cancellation is made in Coretax, and one faktur per
 * invoice is what the export writes.
 */
export async function recordTaxInvoice(ctx: DataContext, invoiceNumber: string, fakturNumber: string): Promise<RecordedTaxInvoice> {
  const nsfp = normaliseFakturNumber(fakturNumber);
  if (!nsfp) {
    throw new ValidationError([], `A Faktur Pajak number has 17 digits (2-digit transaction code, 2-digit status, 13-digit serial), got "${fakturNumber}".`);
  }
  const number = invoiceNumber.trim().toUpperCase();
  return ctx.em.fork().transactional(async (em) => {
    const invoice = await em.findOne(Invoice, { number }, isPostgres(em) ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {});
    if (!invoice) throw new NotFoundError(`Invoice ${number}`);
    if (!isPositive(invoice.taxAmount)) throw new InvalidStateError(`Invoice ${number} carries no PPN: it has no Faktur Pajak.`);
    if (invoice.status !== 'paid') throw new InvalidStateError(`Invoice ${number} is ${invoice.status}: a Faktur Pajak is recorded only on a paid invoice.`);
    if (invoice.taxInvoiceNumber === nsfp) return { invoiceNumber: number, taxInvoiceNumber: nsfp, alreadyRecorded: true };
    if (invoice.taxInvoiceNumber) {
      throw new DomainError(
        'conflict',
        `Invoice ${number} already has Faktur Pajak ${invoice.taxInvoiceNumber}; a replacement or cancellation is made in Coretax, not recorded over it.`,
      );
    }
    const holder = await em.findOne(Invoice, { taxInvoiceNumber: nsfp }, { fields: ['number'] });
    if (holder) throw new DomainError('conflict', `Faktur Pajak ${nsfp} is already recorded on invoice ${holder.number}.`);
    invoice.taxInvoiceNumber = nsfp;
    await em.flush();
    return { invoiceNumber: number, taxInvoiceNumber: nsfp, alreadyRecorded: false };
  });
}
