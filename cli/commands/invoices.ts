import type { Command } from 'commander';
import type { Config } from '../../src/config.js';
import type { Invoice, InvoiceStatus } from '../../src/db/entities/invoice.js';
import { serializeInvoice, serializeInvoiceDetail } from '../../src/http/serializers.js';
import { creditNotesOfInvoice } from '../../src/services/credit-notes/list-credit-notes.js';
import { invoicePdfByNumber } from '../../src/services/documents/invoice-pdf.js';
import { findStaffInvoice } from '../../src/services/staff-queries/staff-lookups.js';
import { listStaffInvoices } from '../../src/services/staff-queries/staff-lists.js';
import { describeRecord, registerList, ownedRecord, writePdf } from '../lookups.js';
import { cliConfig, globalOptions, output, table, withServices } from '../runtime.js';

const STATUSES = ['open', 'paid', 'void', 'uncollectible'] as const satisfies readonly InvoiceStatus[];

export function registerInvoiceCommands(program: Command): void {
  const invoices = program.command('invoices').description('invoices');
  // Read once, when a list is first serialized: each invoice's hosted_url is made on it.
  let config: Config | null = null;

  registerList<Invoice>(invoices, {
    noun: 'invoices',
    statuses: STATUSES,
    extra: ['number'],
    list: listStaffInvoices,
    serialize: (i) => serializeInvoice(i, (config ??= cliConfig())),
    columns: ['number', 'username', 'status', 'issue_date', 'due_date', 'total_amount', 'currency', 'paid_at', 'amount_refunded'],
  });

  invoices
    .command('show <id_or_number>')
    .description("show any user's invoice, with its lines and credit notes, as the API does (by id or number; unknown: exit 4)")
    .action(async (ref: string, _opts, cmd: Command) => {
      const shown = await withServices(async (s) => {
        const invoice = await findStaffInvoice(s, ref);
        const notes = await creditNotesOfInvoice(s, invoice);
        return ownedRecord(s.em, invoice, (i) => serializeInvoiceDetail(i, notes, s.config));
      });
      output(globalOptions(cmd), shown, () => {
        const { lines, credit_notes: notes, ...fields } = shown;
        return [
          describeRecord(fields),
          `\nLines:\n${table(lines, ['kind', 'description', 'quantity', 'unit_amount', 'amount', 'period_start', 'period_end'])}`,
          `\nCredit notes:\n${table(notes, ['number', 'issued_at', 'reason', 'amount'])}`,
        ].join('\n');
      });
    });

  invoices
    .command('pdf <number>')
    .description('write an invoice (INV-YYYY-NNNNNN) as the PDF its customer downloads; unknown number: exit 4')
    .option('--out <file>', 'where to write it (default: NUMBER.pdf in the current directory)')
    .action(async (number: string, opts: { out?: string }, cmd: Command) => {
      await writePdf(cmd, opts.out, await withServices((s) => invoicePdfByNumber(s, number)));
    });
}
