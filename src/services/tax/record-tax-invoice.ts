import { LockMode } from '@mikro-orm/core';
import { isPostgres } from '../../db/dialect.js';
import { Invoice } from '../../db/entities/invoice.js';
import { DomainError, InvalidStateError, NotFoundError, ValidationError } from '../../domain/errors.js';
import { isPositive } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { CORETAX_CODES } from './coretax-xml.js';
import { isFakturDue } from './faktur-due.js';

export interface RecordedTaxInvoice {
  invoiceNumber: string;
  taxInvoiceNumber: string;
  /** True when the invoice already had this number: nothing changed. */
  alreadyRecorded: boolean;
  /** The number it replaced (a replacement recorded after its original), else null. */
  replaced: string | null;
}

/** The transaction code of every faktur this service exports (coretax-xml.ts). */
const TRANSACTION_CODE = CORETAX_CODES.trxCode;

/** A Faktur Pajak number, read: its transaction code, status (0 normal, 1 replacement) and serial. */
export interface FakturNumber {
  digits: string;
  replacement: boolean;
  /** The 13 digits that name the faktur; a replacement keeps its original's. */
  serial: string;
}

/**
 * The 17-digit NSFP Coretax assigns on approval (docs/tax.md, "tax record"): a 2-digit
 * transaction code, a 2-digit status (00 a normal faktur, 01 its replacement) and a 13-digit
 * serial. People copy it with dots and dashes (04.00-25.00000000001); those are dropped. Null
 * when it is not 17 digits.
 */
export function normaliseFakturNumber(text: string): string | null {
  const digits = text.replace(/[\s.\-]/g, '');
  return /^\d{17}$/.test(digits) ? digits : null;
}

/** The number's parts, or why it cannot be one of our fakturs. */
export function parseFakturNumber(text: string): FakturNumber | string {
  const digits = normaliseFakturNumber(text);
  if (!digits) return `A Faktur Pajak number has 17 digits (2-digit transaction code, 2-digit status, 13-digit serial), got "${text}".`;
  if (digits.slice(0, 2) !== TRANSACTION_CODE) {
    return `Faktur Pajak ${digits} has transaction code ${digits.slice(0, 2)}; this service exports code ${TRANSACTION_CODE} (DPP Nilai Lain) only.`;
  }
  const status = digits.slice(2, 4);
  if (status !== '00' && status !== '01') return `Faktur Pajak ${digits} has status ${status}; a status is 00 (normal) or 01 (replacement).`;
  return { digits, replacement: status === '01', serial: digits.slice(4) };
}

/**
 * Stores the Faktur Pajak number Coretax assigned to a taxed, paid invoice (`billing-admin tax
 * record`). Safe to repeat with the same number. A replacement (status 01) is taken after its
 * original (status 00, the same serial), which it replaces; any other different number, or one
 * already on another invoice, is refused: one faktur per invoice is what the export writes.
 */
export async function recordTaxInvoice(ctx: DataContext, invoiceNumber: string, fakturNumber: string): Promise<RecordedTaxInvoice> {
  const parsed = parseFakturNumber(fakturNumber);
  if (typeof parsed === 'string') throw new ValidationError([], parsed);
  const nsfp = parsed.digits;
  const number = invoiceNumber.trim().toUpperCase();
  return ctx.em.fork().transactional(async (em) => {
    const invoice = await em.findOne(Invoice, { number }, isPostgres(em) ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {});
    if (!invoice) throw new NotFoundError(`Invoice ${number}`);
    if (invoice.taxBehavior === 'none' || !isPositive(invoice.taxBase)) throw new InvalidStateError(`Invoice ${number} carries no PPN: it has no Faktur Pajak.`);
    // A faktur is due once money was received for the invoice, whatever happened to it since (a chargeback).
    if (!invoice.taxExportedAt && !(await isFakturDue(em, invoice))) {
      throw new InvalidStateError(`Invoice ${number} is ${invoice.status} and no payment of it was received: a Faktur Pajak is recorded only once its money was.`);
    }
    const held = invoice.taxInvoiceNumber;
    if (held === nsfp) return { invoiceNumber: number, taxInvoiceNumber: nsfp, alreadyRecorded: true, replaced: null };
    const replacesHeld = held !== null && parsed.replacement && held.slice(0, 4) === `${TRANSACTION_CODE}00` && held.slice(4) === parsed.serial;
    if (held && !replacesHeld) {
      throw new DomainError(
        'conflict',
        parsed.replacement
          ? `Invoice ${number} has Faktur Pajak ${held}; a replacement keeps its original's serial (${TRANSACTION_CODE}01${held.slice(4)}).`
          : `Invoice ${number} already has Faktur Pajak ${held}; a replacement (status 01, the same serial) is recorded after it, a cancellation is made in Coretax.`,
      );
    }
    if (!held && parsed.replacement) {
      throw new InvalidStateError(`Faktur Pajak ${nsfp} is a replacement (status 01): record the original (status 00) on invoice ${number} first.`);
    }
    const holder = await em.findOne(Invoice, { taxInvoiceNumber: nsfp }, { fields: ['number'] });
    if (holder) throw new DomainError('conflict', `Faktur Pajak ${nsfp} is already recorded on invoice ${holder.number}.`);
    invoice.taxInvoiceNumber = nsfp;
    await em.flush();
    return { invoiceNumber: number, taxInvoiceNumber: nsfp, alreadyRecorded: false, replaced: held };
  });
}
