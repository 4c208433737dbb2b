import type { DataContext } from '../context.js';

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
  if (!ctx.em.isInTransaction()) throw new Error('invoice numbers must be reserved inside a transaction');
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`count must be a positive whole number, got ${count}`);
  const year = at.getUTCFullYear();
  const name = `invoice:${year}`;
  await ctx.em.execute('insert into counters (name, value) values (?, 0) on conflict (name) do nothing', [name], 'run');
  const rows = (await ctx.em.execute('update counters set value = value + ? where name = ? returning value', [count, name], 'all')) as {
    value: number | string;
  }[];
  const last = Number(rows[0]?.value);
  if (!Number.isSafeInteger(last) || last < count) throw new Error(`counter ${name} did not return a value`);
  return Array.from({ length: count }, (_, i) => `INV-${year}-${String(last - count + 1 + i).padStart(6, '0')}`);
}
