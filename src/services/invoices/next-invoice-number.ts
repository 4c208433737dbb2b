import type { DataContext } from '../context.js';

/**
 * The next invoice number of the year, `INV-YYYY-000001`, from the counters table.
 *
 * NOTE: gap-free: the counter row is incremented with an UPDATE inside the caller's transaction,
 * which holds its row lock until commit (PostgreSQL) or holds the write lock (SQLite). A
 * transaction that rolls back rolls its number back too, and a concurrent one waits for it.
 */
export async function nextInvoiceNumber(ctx: DataContext, at: Date): Promise<string> {
  if (!ctx.em.isInTransaction()) throw new Error('nextInvoiceNumber must run inside a transaction');
  const year = at.getUTCFullYear();
  const name = `invoice:${year}`;
  await ctx.em.execute('insert into counters (name, value) values (?, 0) on conflict (name) do nothing', [name], 'run');
  const rows = (await ctx.em.execute('update counters set value = value + 1 where name = ? returning value', [name], 'all')) as {
    value: number | string;
  }[];
  const value = Number(rows[0]?.value);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`counter ${name} did not return a value`);
  return `INV-${year}-${String(value).padStart(6, '0')}`;
}
