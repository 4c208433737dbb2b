import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { invoicePdfByNumber } from '../../src/services/documents/invoice-pdf.js';
import { globalOptions, output, withServices } from '../runtime.js';

export function registerInvoiceCommands(program: Command): void {
  const invoices = program.command('invoices').description('invoices');

  invoices
    .command('pdf <number>')
    .description('write an invoice (INV-YYYY-NNNNNN) as the PDF its customer downloads; unknown number: exit 4')
    .option('--out <file>', 'where to write it (default: NUMBER.pdf in the current directory)')
    .action(async (number: string, opts, cmd: Command) => {
      const { filename, pdf } = await withServices((s) => invoicePdfByNumber(s, number));
      const path = opts.out ?? filename;
      await writeFile(path, pdf);
      output(globalOptions(cmd), { number: filename.replace(/\.pdf$/, ''), file: path, bytes: pdf.length }, () => `Wrote ${path} (${pdf.length} bytes).`);
    });
}
