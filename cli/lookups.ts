import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { ownedRecord, withOwners } from '../src/http/admin-serializers.js';
import type { Schemas } from '../src/http/operations.js';
import type { PdfFile } from '../src/services/documents/invoice-pdf.js';
import type { ServiceContext } from '../src/services/context.js';
import type { StaffListFilters } from '../src/services/staff-queries/filters.js';
import type { Page, PageRequest } from '../src/services/common/pagination.js';
import { parseTime } from './commands/webhooks.js';
import { CliFailure, csvOutput, EXIT, globalOptions, note, output, table, withServices } from './runtime.js';

/*
 * Support staff's look-ups (`subscriptions|invoices|payments list|show`): the same filters as
 * the staff API, and with --json the same records as the staff API (its serialisers, the owner
 * beside each record: withOwners); CSV for exports.
 */

export { ownedRecord };

type OwnerRef = Schemas['OwnerRef'];

export const DEFAULT_LIST_LIMIT = 100;

/** A whole number above 0 from an option. */
export function positiveWhole(value: string | undefined, option: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new CliFailure(`${option} must be a whole number above 0, got "${value}"`, EXIT.usage);
  return Number(value);
}

type ExtraFilter = 'orderId' | 'number';

export interface ListSpec<T extends { user: { id: string } }> {
  /** The records' name in messages: "subscriptions". */
  noun: string;
  /** The status values, for the help text (an unknown one lists nothing). */
  statuses: readonly string[];
  /** Filters beyond user, status and the created window. */
  extra: readonly ExtraFilter[];
  list(services: ServiceContext, filters: StaffListFilters, page: PageRequest): Promise<Page<T>>;
  /** The record as the API shows it. */
  serialize(item: T): Record<string, unknown>;
  /** The human table's columns (of the serialised record, and `username`). */
  columns: string[];
}

interface ListOptions {
  user?: string;
  status?: string;
  orderId?: string;
  number?: string;
  createdAfter?: string;
  createdBefore?: string;
  limit?: string;
  page?: string;
  csv?: boolean;
}

/** `<group> list`: every user's records, newest first, filtered and paged; --json (API records) or --csv (with username). */
export function registerList<T extends { user: { id: string } }>(group: Command, spec: ListSpec<T>): void {
  const command = group
    .command('list')
    .description(`list every user's ${spec.noun}, newest first (filters combine)`)
    .option('--user <user>', 'only this user (username or id)')
    .option('--status <status>', `only this status: ${spec.statuses.join(', ')}`);
  if (spec.extra.includes('orderId')) command.option('--order-id <order_id>', 'only this order id');
  if (spec.extra.includes('number')) command.option('--number <number>', 'only this number (exactly)');
  command
    .option('--created-after <time>', 'created at or after this ISO 8601 date or time')
    .option('--created-before <time>', 'created before this ISO 8601 date or time')
    .option('--limit <n>', `at most this many per page (default ${DEFAULT_LIST_LIMIT})`)
    .option('--page <n>', 'which page of --limit records (default 1)')
    .option('--csv', "print CSV: a header row, then the API's fields of each record after the username (nothing when none match)")
    .action(async (opts: ListOptions, cmd: Command) => {
      const json = globalOptions(cmd).json;
      if (json && opts.csv) throw new CliFailure('give at most one of --json and --csv', EXIT.usage);
      const filters: StaffListFilters = {
        user: opts.user,
        status: opts.status,
        orderId: opts.orderId,
        number: opts.number,
        createdAfter: parseTime(opts.createdAfter, '--created-after'),
        createdBefore: parseTime(opts.createdBefore, '--created-before'),
      };
      const page = { page: positiveWhole(opts.page, '--page') ?? 1, pageSize: positiveWhole(opts.limit, '--limit') ?? DEFAULT_LIST_LIMIT };
      const { count, records } = await withServices(async (s) => {
        const found = await spec.list(s, filters, page);
        return { count: found.count, records: found.items.map(await withOwners(s.em, found.items, spec.serialize)) };
      });
      const first = (page.page - 1) * page.pageSize;
      if (count > records.length) {
        note(
          records.length === 0
            ? `no ${spec.noun} on page ${page.page}: ${count} in all`
            : `${spec.noun} ${first + 1}-${first + records.length} of ${count} (--page, --limit)`,
        );
      }
      // Flat rows for a table or a spreadsheet: the owner as a username column.
      const rows = records.map(({ user, ...r }) => ({ username: user.username, ...r }));
      if (opts.csv) {
        // The header is the records' own fields, so an empty page has none to name: it prints nothing.
        if (rows.length === 0) return note(`No ${spec.noun}.`);
        return csvOutput(rows, Object.keys(rows[0]));
      }
      output({ json }, records, () => (rows.length === 0 ? `No ${spec.noun}.` : table(rows, spec.columns)));
    });
}

/** A record in the human form: one `field  value` line each, the owner by name, other nested values as compact JSON. */
export function describeRecord(record: Record<string, unknown>): string {
  const width = Math.max(...Object.keys(record).map((k) => k.length));
  const shown = (k: string, v: unknown): string => {
    if (v === null || v === undefined) return '';
    if (k === 'user' && typeof v === 'object') return `${(v as OwnerRef).username} (${(v as OwnerRef).id})`;
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
  };
  return Object.entries(record)
    .map(([k, v]) => `${k.padEnd(width)}  ${shown(k, v)}`)
    .join('\n');
}

/** Writes a document's PDF to --out, or to its own file name in the current directory, and says where. */
export async function writePdf(cmd: Command, out: string | undefined, { filename, pdf }: PdfFile): Promise<void> {
  const path = out ?? filename;
  await writeFile(path, pdf);
  output(globalOptions(cmd), { number: filename.replace(/\.pdf$/, ''), file: path, bytes: pdf.length }, () => `Wrote ${path} (${pdf.length} bytes).`);
}
