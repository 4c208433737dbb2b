import { localDate } from '../../domain/billing-calendar.js';
import type { DataContext } from '../context.js';

/*
 * The one home of document numbers: invoices (`INV-YYYY-000001`) and credit notes
 * (`CN-YYYY-000001`) each have their own yearly sequence, a row of the counters table.
 */

/** A numbered document series: its prefix on the document and its counter's name. */
interface DocumentSeries {
  prefix: string;
  counter: string;
}

const INVOICES: DocumentSeries = { prefix: 'INV', counter: 'invoice' };
const CREDIT_NOTES: DocumentSeries = { prefix: 'CN', counter: 'credit_note' };

/**
 * The next invoice number of the year, `INV-YYYY-000001`, from the counters table.
 *
 * NOTE: gap-free: the counter row is incremented with an UPDATE inside the caller's transaction,
 * which holds its row lock until commit (PostgreSQL) or holds the write lock (SQLite). A
 * transaction that rolls back rolls its number back too, and a concurrent one waits for it.
 */
export async function nextInvoiceNumber(ctx: DataContext, at: Date): Promise<string> {
  return (await reserveInvoiceNumbers(ctx, at, 1))[0];
}

/**
 * `count` consecutive numbers of the year in one UPDATE (the batched billing run), under the
 * same rule as nextInvoiceNumber: the block is the caller's until its transaction ends, and
 * rolls back with it, so numbers stay gap-free.
 */
export async function reserveInvoiceNumbers(ctx: DataContext, at: Date, count: number): Promise<string[]> {
  return reserveNumbers(ctx, INVOICES, at, count);
}

/**
 * The next credit note number of the year, `CN-YYYY-000001`: a sequence of its own, gap-free
 * under the same rule as invoice numbers. NOTE: take it last in a transaction (after the rows
 * it locks are locked): every credit note of the year waits on this one counter row.
 */
export async function nextCreditNoteNumber(ctx: DataContext, at: Date): Promise<string> {
  return (await reserveNumbers(ctx, CREDIT_NOTES, at, 1))[0];
}

async function reserveNumbers(ctx: DataContext, series: DocumentSeries, at: Date, count: number): Promise<string[]> {
  if (!ctx.em.isInTransaction()) throw new Error(`${series.counter} numbers must be reserved inside a transaction`);
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`count must be a positive whole number, got ${count}`);
  // The year of the document's date where the seller is (BILLING_TIMEZONE), as its issue_date.
  const year = localDate(at, ctx.config.documents.timeZone).slice(0, 4);
  const name = `${series.counter}:${year}`;
  await ctx.em.execute('insert into counters (name, value) values (?, 0) on conflict (name) do nothing', [name], 'run');
  const rows = (await ctx.em.execute('update counters set value = value + ? where name = ? returning value', [count, name], 'all')) as {
    value: number | string;
  }[];
  const last = Number(rows[0]?.value);
  if (!Number.isSafeInteger(last) || last < count) throw new Error(`counter ${name} did not return a value`);
  return Array.from({ length: count }, (_, i) => `${series.prefix}-${year}-${String(last - count + 1 + i).padStart(6, '0')}`);
}
