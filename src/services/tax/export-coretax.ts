import { writeFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { isPostgres } from '../../db/dialect.js';
import { Invoice, InvoiceLine } from '../../db/entities/invoice.js';
import { ValidationError } from '../../domain/errors.js';
import { add, isPositive, ZERO, type Money } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { coretaxXml, MAX_FAKTURS_PER_FILE, unitOfPeriod, type CoretaxFaktur, type CoretaxSeller } from './coretax-xml.js';
import { isInMonth, localDate, searchWindow, type TaxMonth } from './tax-month.js';

export interface ExportCoretaxInput {
  month: TaxMonth;
  /** The first file's path (default `coretax-YYYY-MM.xml`); more files get -2, -3 … before the extension. */
  out?: string;
  /** Write invoices that an earlier export already wrote (never one whose Faktur Pajak number is recorded). */
  again: boolean;
}

export interface SkippedInvoice {
  invoiceNumber: string;
  reason: string;
}

export interface CoretaxExport {
  month: string;
  /** False when the seller is not a PKP: no PPN, nothing to export. */
  pkp: boolean;
  /** How many invoices (fakturs) the files hold. */
  invoices: number;
  taxBase: Money;
  otherTaxBase: Money;
  taxAmount: Money;
  files: { path: string; invoices: number }[];
  skipped: SkippedInvoice[];
}

/** Invoices are read, and their lines fetched, this many at a time. */
const BATCH = 1000;

/**
 * Writes the Coretax import files (TaxInvoiceBulk XML, docs/tax.md) for the taxed invoices paid
 * in `month` in BILLING_TIMEZONE, one faktur per invoice dated by its payment, at most 1,000 per
 * file, and marks each invoice exported. An invoice is written once unless `again`; one whose
 * Faktur Pajak number is recorded, or whose buyer is unknown, is skipped with the reason. The
 * files are written inside the transaction that marks the invoices: a file that cannot be
 * written marks none.
 */
export async function exportCoretax(ctx: DataContext, input: ExportCoretaxInput): Promise<CoretaxExport> {
  const empty: CoretaxExport = { month: input.month.label, pkp: ctx.config.tax.pkp, invoices: 0, taxBase: ZERO, otherTaxBase: ZERO, taxAmount: ZERO, files: [], skipped: [] };
  const { pkp, sellerTaxId, sellerNitku } = ctx.config.tax;
  if (!pkp || !sellerTaxId || !sellerNitku) return empty;
  const seller: CoretaxSeller = { tin: sellerTaxId, idtku: sellerNitku };
  const timeZone = ctx.config.documents.timeZone;

  return ctx.em.fork().transactional(async (em) => {
    const invoices = (await paidTaxedInvoices(em, input)).filter((i) => isInMonth(i.paidAt!, input.month, timeZone));
    const lines = await firstChargedLines(em, invoices);
    const fakturs: { invoice: Invoice; faktur: CoretaxFaktur }[] = [];
    const skipped: SkippedInvoice[] = [];
    for (const invoice of invoices) {
      const reason = whyNotExportable(invoice);
      if (reason) {
        skipped.push({ invoiceNumber: invoice.number, reason });
        continue;
      }
      const line = lines.get(invoice.id);
      fakturs.push({
        invoice,
        faktur: {
          date: localDate(invoice.paidAt!, timeZone),
          reference: invoice.number,
          buyer: invoice.buyerTaxProfile!,
          name: line?.description ?? `Invoice ${invoice.number}`,
          unit: unitOfPeriod(line?.kind ?? '', line?.periodStart ?? null, line?.periodEnd ?? null),
          taxBase: invoice.taxBase,
          otherTaxBase: invoice.otherTaxBase,
          vat: invoice.taxAmount,
        },
      });
    }

    const files: CoretaxExport['files'] = [];
    const base = input.out ?? `coretax-${input.month.label}.xml`;
    for (let start = 0; start < fakturs.length; start += MAX_FAKTURS_PER_FILE) {
      const chunk = fakturs.slice(start, start + MAX_FAKTURS_PER_FILE).map((f) => f.faktur);
      const path = numberedPath(base, files.length + 1);
      await writeExport(path, coretaxXml(seller, chunk));
      files.push({ path, invoices: chunk.length });
    }
    const now = ctx.clock.now();
    for (const { invoice } of fakturs) invoice.taxExportedAt ??= now;
    await em.flush();

    const exported = fakturs.map((f) => f.faktur);
    return {
      ...empty,
      invoices: exported.length,
      taxBase: add(ZERO, ...exported.map((f) => f.taxBase)),
      otherTaxBase: add(ZERO, ...exported.map((f) => f.otherTaxBase)),
      taxAmount: add(ZERO, ...exported.map((f) => f.vat)),
      files,
      skipped,
    };
  });
}

/** Paid invoices with PPN whose payment falls near the month (searchWindow), oldest payment first; locked on PostgreSQL against a second export at once. */
async function paidTaxedInvoices(em: EntityManager, input: ExportCoretaxInput): Promise<Invoice[]> {
  const { from, to } = searchWindow(input.month);
  const where = {
    status: 'paid' as const,
    taxAmount: { $gt: ZERO },
    paidAt: { $gte: from, $lt: to },
    ...(input.again ? {} : { taxExportedAt: null }),
  };
  return em.find(Invoice, where, {
    orderBy: [{ paidAt: 'asc' }, { number: 'asc' }],
    ...(isPostgres(em) ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {}),
  });
}

/**
 * The line that names each invoice's service: its first line that charges (a plan change's
 * invoice starts with the credit for the old plan's unused time), else its first line.
 */
async function firstChargedLines(em: EntityManager, invoices: Invoice[]): Promise<Map<string, InvoiceLine>> {
  const found = new Map<string, InvoiceLine>();
  for (let start = 0; start < invoices.length; start += BATCH) {
    const ids = invoices.slice(start, start + BATCH).map((i) => i.id);
    const lines = await em.find(InvoiceLine, { invoice: { $in: ids } }, { orderBy: [{ position: 'asc' }] });
    for (const line of lines) {
      const id = line.invoice.id;
      const held = found.get(id);
      if (!held || (!isPositive(held.amount) && isPositive(line.amount))) found.set(id, line);
    }
  }
  return found;
}

/** Why an invoice cannot go into the import file, or null. */
function whyNotExportable(invoice: Invoice): string | null {
  if (invoice.taxInvoiceNumber) {
    return `its Faktur Pajak ${invoice.taxInvoiceNumber} is already recorded: an approved faktur is corrected in Coretax, never imported again`;
  }
  const buyer = invoice.buyerTaxProfile;
  if (!buyer) return 'no buyer tax profile (NPWP or NIK) when it was issued: a faktur must name its buyer; make this one in Coretax by hand';
  if (buyer.buyer_type === 'business' ? !buyer.npwp : !buyer.nik) return `its buyer tax profile has no ${buyer.buyer_type === 'business' ? 'NPWP' : 'NIK'}`;
  // Never a negative or zero amount: a credit is not a negative faktur (tax/CORETAX.md §3).
  if (![invoice.taxBase, invoice.otherTaxBase, invoice.taxAmount].every(isPositive)) return 'its DPP, DPP Nilai Lain and PPN are not all above zero';
  return null;
}

/** The n-th file of an export: FILE, then FILE with -2, -3 … before its extension. */
export function numberedPath(base: string, n: number): string {
  if (n === 1) return base;
  const ext = extname(base);
  return `${base.slice(0, base.length - ext.length)}-${n}${ext}`;
}

/** A file that cannot be written is bad input (a missing folder, no permission), not a bug. */
async function writeExport(path: string, xml: string): Promise<void> {
  try {
    await writeFile(path, xml, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code !== 'string') throw err;
    throw new ValidationError([], `Cannot write ${path} (${code}); no invoice was marked exported.`);
  }
}
