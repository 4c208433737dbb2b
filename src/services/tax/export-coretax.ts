import { writeFile } from 'node:fs/promises';
import { extname } from 'node:path';
import type { EntityManager } from '@mikro-orm/knex';
import { takeSqliteWriteLock } from '../../db/dialect.js';
import { Invoice, InvoiceLine } from '../../db/entities/invoice.js';
import { User } from '../../db/entities/user.js';
import { ValidationError } from '../../domain/errors.js';
import { add, isPositive, ZERO, type Money } from '../../domain/money.js';
import type { TaxProfile } from '../../domain/tax-profile.js';
import { sellerIdentityOf } from '../invoices/seller-tax-identity.js';
import { lineWordsFor } from '../documents/line-words.js';
import type { DataContext } from '../context.js';
import { coretaxXml, MAX_FAKTURS_PER_FILE, missingBuyerIdentity, type CoretaxFaktur, type CoretaxSeller } from './coretax-xml.js';
import { invoicesDueIn } from './faktur-due.js';
import { fakturLines } from './faktur-lines.js';
import { creditNotesOf, standingValue } from './faktur-standing.js';
import { localDate, type TaxMonth } from './tax-month.js';

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
  /** Invoices issued before their buyer saved a tax profile, which took the profile standing now. */
  profilesAttached: string[];
}

/** Invoices are read, and their lines fetched, this many at a time. */
const BATCH = 1000;

/**
 * Writes the Coretax import files (TaxInvoiceBulk XML, docs/tax.md) for the taxable invoices whose
 * faktur fell due in `month` in BILLING_TIMEZONE (faktur-due.ts: when their money was received,
 * whatever happened to it since), one faktur per invoice dated that day, one line per invoice
 * line that charges (faktur-lines.ts), at most 1,000 per file (and one seller NPWP per file), and
 * marks each invoice exported. The faktur holds the value standing at its first export (credits
 * before it are taken off; an invoice credited in full is not exported) and names the seller the
 * invoice was made with. An invoice issued before its buyer saved a tax profile takes the profile
 * standing now, which is kept on it. An invoice is written once unless `again`; one whose Faktur
 * Pajak number is recorded, or whose buyer is still unknown, is skipped with the reason. The
 * files are written inside the transaction that marks the invoices: a file that cannot be
 * written marks none.
 */
export async function exportCoretax(ctx: DataContext, input: ExportCoretaxInput): Promise<CoretaxExport> {
  const empty: CoretaxExport = { month: input.month.label, pkp: ctx.config.tax.pkp, invoices: 0, taxBase: ZERO, otherTaxBase: ZERO, taxAmount: ZERO, files: [], skipped: [], profilesAttached: [] };
  if (!ctx.config.tax.pkp) return empty;
  const timeZone = ctx.config.documents.timeZone;
  const words = lineWordsFor(ctx.config.documents);

  return ctx.em.fork().transactional(async (em) => {
    // The export reads for a while (a month of invoices, the files) before it marks them: beside
    // a running server on SQLite it must hold the write lock from the start, or any write of the
    // server's in between fails its mark at once.
    await takeSqliteWriteLock(em, 'invoices');
    const due = await invoicesDueIn(em, input.month, timeZone, input.again);
    const invoices = due.map((d) => d.invoice);
    const lines = await linesOf(em, invoices);
    const notes = await creditNotesOf(em, invoices);
    const profiles = await currentProfiles(em, invoices.filter((i) => !i.buyerTaxProfile));
    const fakturs: { invoice: Invoice; seller: CoretaxSeller; faktur: CoretaxFaktur }[] = [];
    const skipped: SkippedInvoice[] = [];
    const profilesAttached: string[] = [];
    for (const { invoice, dueAt } of due) {
      const buyer = invoice.buyerTaxProfile ?? profiles.get(invoice.user.id) ?? null;
      // The faktur is made at the first export: credits before it are taken off, later ones are corrections.
      const exportedAt = invoice.taxExportedAt;
      const before = (notes.get(invoice.id) ?? []).filter((n) => !exportedAt || n.issuedAt <= exportedAt);
      const value = standingValue(invoice, before);
      const reason = whyNotExportable(invoice, buyer, value.taxBase);
      if (reason) {
        skipped.push({ invoiceNumber: invoice.number, reason });
        continue;
      }
      if (!invoice.buyerTaxProfile) {
        invoice.buyerTaxProfile = buyer;
        profilesAttached.push(invoice.number);
      }
      const identity = sellerIdentityOf(invoice, ctx.config);
      fakturs.push({
        invoice,
        seller: { tin: identity.npwp ?? '', idtku: identity.nitku ?? '' },
        faktur: {
          date: localDate(dueAt, timeZone),
          reference: invoice.number,
          buyer: buyer!,
          lines: fakturLines(invoice, lines.get(invoice.id) ?? [], value, words),
          taxBase: value.taxBase,
          otherTaxBase: value.otherTaxBase,
          vat: value.taxAmount,
        },
      });
    }

    const files: CoretaxExport['files'] = [];
    const base = input.out ?? `coretax-${input.month.label}.xml`;
    // One file holds one seller's fakturs (its TIN heads the file): a changed NPWP starts a new file.
    const sellers = [...new Set(fakturs.map((f) => `${f.seller.tin}/${f.seller.idtku}`))];
    for (const key of sellers) {
      const ofSeller = fakturs.filter((f) => `${f.seller.tin}/${f.seller.idtku}` === key);
      for (let start = 0; start < ofSeller.length; start += MAX_FAKTURS_PER_FILE) {
        const chunk = ofSeller.slice(start, start + MAX_FAKTURS_PER_FILE);
        const path = numberedPath(base, files.length + 1);
        await writeExport(path, coretaxXml(chunk[0].seller, chunk.map((f) => f.faktur)));
        files.push({ path, invoices: chunk.length });
      }
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
      profilesAttached,
    };
  });
}

/** The tax profile each of these invoices' buyers has saved by now, by user id. */
async function currentProfiles(em: EntityManager, invoices: Invoice[]): Promise<Map<string, TaxProfile>> {
  const ids = [...new Set(invoices.map((i) => i.user.id))];
  if (ids.length === 0) return new Map();
  const users = await em.find(User, { id: { $in: ids } }, { fields: ['taxProfile'] });
  return new Map(users.filter((u) => u.taxProfile).map((u) => [u.id, u.taxProfile!]));
}

/** Each invoice's lines, by invoice id, read this many invoices at a time. */
async function linesOf(em: EntityManager, invoices: Invoice[]): Promise<Map<string, InvoiceLine[]>> {
  const found = new Map<string, InvoiceLine[]>();
  for (let start = 0; start < invoices.length; start += BATCH) {
    const ids = invoices.slice(start, start + BATCH).map((i) => i.id);
    const lines = await em.find(InvoiceLine, { invoice: { $in: ids } }, { orderBy: [{ position: 'asc' }] });
    for (const line of lines) found.set(line.invoice.id, [...(found.get(line.invoice.id) ?? []), line]);
  }
  return found;
}

/** Why an invoice cannot go into the import file, or null. */
function whyNotExportable(invoice: Invoice, buyer: TaxProfile | null, taxBase: Money): string | null {
  if (invoice.taxInvoiceNumber) {
    return `its Faktur Pajak ${invoice.taxInvoiceNumber} is already recorded: an approved faktur is corrected in Coretax, never imported again`;
  }
  // Never a negative or empty faktur: a credit is not a negative faktur.
  if (!isPositive(taxBase)) return 'credited in full before its first export: no faktur is made for it';
  if (!buyer) return 'no buyer tax profile (NPWP, NIK, passport or other document): it is exported once the buyer saves one (PUT /tax-profile/)';
  return missingBuyerIdentity(buyer);
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
