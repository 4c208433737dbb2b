import type { Command } from 'commander';
import { serializeCreditNote } from '../../src/http/credit-note-serializers.js';
import { listCreditNotes } from '../../src/services/credit-notes/list-credit-notes.js';
import { renderCreditNotePdf } from '../../src/services/documents/credit-note-pdf.js';
import { findStaffCreditNote } from '../../src/services/staff-queries/staff-lookups.js';
import { writePdf } from '../lookups.js';
import { findWalletOwner } from '../../src/services/wallet/find-wallet-owner.js';
import { globalOptions, note, output, table, withServices } from '../runtime.js';
import { parseLimit } from './webhooks.js';

const DEFAULT_LIMIT = 1000;

export function registerCreditNoteCommands(program: Command): void {
  const creditNotes = program.command('credit-notes').description('credit notes: the documents of money given back against an invoice (refunds, wallet credits)');

  creditNotes
    .command('list')
    .description('list credit notes, newest first, of one user (--user, a username or a user id) or of everyone')
    .option('--user <user>', "only this user's credit notes")
    .option('--limit <n>', `show at most this many (default ${DEFAULT_LIMIT})`)
    .action(async (opts: { user?: string; limit?: string }, cmd: Command) => {
      const limit = parseLimit(opts.limit) ?? DEFAULT_LIMIT;
      const { count, rows } = await withServices(async (s) => {
        const user = opts.user === undefined ? undefined : await findWalletOwner(s, opts.user);
        const page = await listCreditNotes(s, { user }, { page: 1, pageSize: limit });
        return { count: page.count, rows: page.items.map((n) => ({ ...serializeCreditNote(n), username: n.user.username })) };
      });
      if (count > rows.length) note(`showing the newest ${rows.length} of ${count} credit notes (--limit)`);
      output(globalOptions(cmd), rows, () =>
        rows.length === 0 ? 'No credit notes.' : table(rows, ['number', 'issued_at', 'username', 'invoice_number', 'reason', 'amount', 'currency', 'memo']),
      );
    });

  creditNotes
    .command('pdf <id_or_number>')
    .description('write a credit note (by id, or number CN-YYYY-NNNNNN) as the PDF its customer downloads; unknown: exit 4')
    .option('--out <file>', 'where to write it (default: NUMBER.pdf in the current directory)')
    .action(async (ref: string, opts: { out?: string }, cmd: Command) => {
      await writePdf(cmd, opts.out, await withServices(async (s) => renderCreditNotePdf(s, await findStaffCreditNote(s, ref))));
    });
}
