import type { Command } from 'commander';
import { exportCoretax, type CoretaxExport } from '../../src/services/tax/export-coretax.js';
import type { FakturValue } from '../../src/domain/tax.js';
import { listTaxCorrections, type TaxCorrection } from '../../src/services/tax/list-tax-corrections.js';
import { recordTaxInvoice } from '../../src/services/tax/record-tax-invoice.js';
import { parseTaxMonth, uploadDeadline, type TaxMonth } from '../../src/services/tax/tax-month.js';
import { CliFailure, EXIT, globalOptions, note, output, table, withServices } from '../runtime.js';
import { auditCliChange, withReason } from '../audit-trail.js';

function monthOption(value: string): TaxMonth {
  const month = parseTaxMonth(value);
  if (!month) throw new CliFailure(`--month must be a month as YYYY-MM (2026-03), got "${value}"`, EXIT.usage);
  return month;
}

function exportJson(result: CoretaxExport) {
  return {
    month: result.month,
    invoices: result.invoices,
    tax_base: result.taxBase,
    other_tax_base: result.otherTaxBase,
    tax_amount: result.taxAmount,
    files: result.files.map((f) => f.path),
    skipped: result.skipped.map((s) => ({ invoice_number: s.invoiceNumber, reason: s.reason })),
    profiles_attached: result.profilesAttached,
  };
}

function exportText(result: CoretaxExport, month: TaxMonth): string {
  if (!result.pkp) return 'The seller is not a PKP (BILLING_PKP is not true): it charges no PPN, and there is nothing to export.';
  const skipped = result.skipped.map((s) => `Skipped ${s.invoiceNumber}: ${s.reason}.`);
  if (result.invoices === 0) {
    return [`No taxed invoice paid in ${month.label} is left to export (those already exported need --again).`, ...skipped].join('\n');
  }
  return [
    ...result.files.map((f) => `Wrote ${f.path} (${f.invoices} faktur${f.invoices === 1 ? '' : 's'}).`),
    `${result.invoices} invoice${result.invoices === 1 ? '' : 's'}: DPP ${result.taxBase}, DPP Nilai Lain ${result.otherTaxBase}, PPN ${result.taxAmount}.`,
    ...(result.profilesAttached.length > 0
      ? [`Issued before their buyer saved a tax profile, now made out to the profile saved since: ${result.profilesAttached.join(', ')}.`]
      : []),
    ...skipped,
    `Import into Coretax (e-Faktur, Pajak Keluaran, Impor Data), then submit and sign by ${uploadDeadline(month)}; record each approved number with billing-admin tax record.`,
  ].join('\n');
}

const valueJson = (v: FakturValue) => ({ tax_base: v.taxBase, other_tax_base: v.otherTaxBase, tax_amount: v.taxAmount });

function correctionJson(c: TaxCorrection) {
  return {
    kind: c.kind,
    credit_note_number: c.creditNoteNumber,
    issued_on: c.issuedOn,
    invoice_number: c.invoiceNumber,
    tax_invoice_number: c.taxInvoiceNumber,
    amount: c.amount,
    tax_amount: c.taxAmount,
    tax_action: c.taxAction,
    before: valueJson(c.before),
    after: valueJson(c.after),
    instruction: c.instruction,
  };
}

/** One faktur's values before and after, as finance types them in Coretax. */
function valuesLine(c: ReturnType<typeof correctionJson>): string {
  const [b, a] = [c.before, c.after];
  return `DPP ${b.tax_base} -> ${a.tax_base}, DPP Nilai Lain ${b.other_tax_base} -> ${a.other_tax_base}, PPN ${b.tax_amount} -> ${a.tax_amount}`;
}

export function registerTaxCommands(program: Command): void {
  const tax = program.command('tax').description('Indonesian PPN: the Coretax import file, Faktur Pajak numbers and the corrections to make in Coretax (docs/tax.md)');

  tax
    .command('export')
    .description('write the Coretax import XML for the taxable invoices whose payment settled in a month (BILLING_TIMEZONE; charged back since included, reversed not), at most 1,000 per file, and mark them exported')
    .requiredOption('--month <YYYY-MM>', 'the tax period')
    .option('--out <file>', 'the first file (default coretax-YYYY-MM.xml in the current directory); more get -2, -3 … before the extension')
    .option('--again', 'write again invoices an earlier export wrote (never one whose Faktur Pajak number is recorded)')
    .action(async (opts: { month: string; out?: string; again?: boolean }, cmd: Command) => {
      const month = monthOption(opts.month);
      const result = await withServices((s) => exportCoretax(s, { month, out: opts.out, again: opts.again === true }));
      const global = globalOptions(cmd);
      if (global.json && !result.pkp) note('The seller is not a PKP (BILLING_PKP is not true): nothing to export.');
      output(global, exportJson(result), () => exportText(result, month));
    });

  withReason(tax.command('record <invoice-number> <faktur-number>'))
    .description('store the 17-digit Faktur Pajak number (NSFP) Coretax assigned to a taxed invoice whose payment was received (transaction code 04, status 00; a replacement, status 01, after its original); dots and dashes are ignored')
    .action(async (invoiceNumber: string, fakturNumber: string, opts: { reason: string }, cmd: Command) => {
      const recorded = await withServices(async (s) => {
        const result = await recordTaxInvoice(s, invoiceNumber, fakturNumber);
        if (!result.alreadyRecorded) {
          await auditCliChange(s, { action: 'invoice.record_tax_invoice', target: { type: 'invoice', id: result.invoiceNumber }, reason: opts.reason, changes: { tax_invoice_number: [result.replaced, result.taxInvoiceNumber] } });
        }
        return result;
      });
      output(
        globalOptions(cmd),
        { invoice_number: recorded.invoiceNumber, tax_invoice_number: recorded.taxInvoiceNumber, already_recorded: recorded.alreadyRecorded, replaced: recorded.replaced },
        () =>
          recorded.alreadyRecorded
            ? `${recorded.invoiceNumber} already has Faktur Pajak ${recorded.taxInvoiceNumber}: nothing changed.`
            : recorded.replaced
              ? `Recorded replacement Faktur Pajak ${recorded.taxInvoiceNumber} on ${recorded.invoiceNumber} (it replaces ${recorded.replaced}).`
              : `Recorded Faktur Pajak ${recorded.taxInvoiceNumber} on ${recorded.invoiceNumber}.`,
      );
    });

  tax
    .command('corrections')
    .description('list what happened in a month (BILLING_TIMEZONE) to exported fakturs: credit notes to correct in Coretax, chargebacks, reversals and write-offs where PPN stands, with DPP, DPP Nilai Lain and PPN before and after')
    .requiredOption('--month <YYYY-MM>', 'the month the credit notes, chargebacks, reversals and write-offs happened in')
    .action(async (opts: { month: string }, cmd: Command) => {
      const month = monthOption(opts.month);
      const corrections = await withServices((s) => listTaxCorrections(s, month));
      const rows = corrections.map(correctionJson);
      output(globalOptions(cmd), rows, () =>
        rows.length === 0
          ? `No exported faktur was credited, charged back, reversed or written off in ${month.label}: nothing to correct in Coretax.`
          : [
              table(rows, ['kind', 'credit_note_number', 'issued_on', 'invoice_number', 'tax_invoice_number', 'amount', 'tax_amount', 'tax_action']),
              '',
              'In Coretax:',
              ...rows.flatMap((r) => [`${r.credit_note_number ?? r.invoice_number} (${r.invoice_number}): ${valuesLine(r)}`, `  ${r.instruction}`]),
            ].join('\n'),
      );
    });
}
