import type { Command } from 'commander';
import { serializeWallet, serializeWalletTransaction } from '../../src/http/serializers.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { adjustWallet } from '../../src/services/wallet/adjust-wallet.js';
import { findWalletOwner } from '../../src/services/wallet/find-wallet-owner.js';
import { listWalletTransactions } from '../../src/services/wallet/list-wallet-transactions.js';
import { verifyWallets } from '../../src/services/wallet/verify-wallets.js';
import { getOrCreateWallet } from '../../src/services/wallet/wallet-ledger.js';
import { CliFailure, EXIT, globalOptions, note, output, table, withServices } from '../runtime.js';

function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new CliFailure(`--limit must be a positive whole number, got "${value}"`, EXIT.usage);
  return Number(value);
}

export function registerWalletCommands(program: Command): void {
  const wallet = program.command('wallet').description('user wallets and their ledger (USER is a username or a user id)');

  wallet
    .command('show <user>')
    .description("show a user's wallet (created empty if the user has none, as the API does)")
    .action(async (ref: string, _opts, cmd: Command) => {
      const { username, shown } = await withServices(async (s) => {
        const user = await findWalletOwner(s, ref);
        return { username: user.username, shown: serializeWallet(await getOrCreateWallet(s, user)) };
      });
      output(globalOptions(cmd), shown, () => `Wallet ${shown.id} of ${username}: ${shown.balance} ${shown.currency}${shown.is_active ? '' : ' (inactive)'}`);
    });

  wallet
    .command('transactions <user>')
    .description("list a user's wallet ledger, newest first")
    .option('--limit <n>', 'show at most this many entries', positiveInteger, 1000)
    .action(async (ref: string, opts: { limit: number }, cmd: Command) => {
      const { count, rows } = await withServices(async (s) => {
        const page = await listWalletTransactions(s, await findWalletOwner(s, ref), { page: 1, pageSize: opts.limit });
        return { count: page.count, rows: page.items.map(serializeWalletTransaction) };
      });
      if (count > rows.length) note(`showing the newest ${rows.length} of ${count} entries (--limit)`);
      output(globalOptions(cmd), rows, () => table(rows, ['created_at', 'kind', 'amount', 'balance_after', 'source', 'reference_id', 'description']));
    });

  wallet
    .command('verify')
    .description('check every wallet: balance = credits - debits of its ledger, and balance_after continuity; exit status 1 on any difference')
    .action(async (_opts, cmd: Command) => {
      const report = await withServices((s) => verifyWallets(s));
      output(globalOptions(cmd), report, () => {
        const head = `${report.wallets_checked} wallets, ${report.entries_checked} ledger entries checked: ${report.ok ? 'all exact' : `${report.discrepancies.length} with differences`}.`;
        const lines = report.discrepancies.flatMap((d) => [
          `\n${d.username} (wallet ${d.wallet_id}): balance ${d.balance} ${d.currency}, ledger sum ${d.ledger_sum}, ${d.entries} entries`,
          ...d.issues.map((i) => `  - ${i}`),
        ]);
        const owing = report.negative_balances.map((n) => `\n${n.username} (wallet ${n.wallet_id}) is below zero: ${n.balance} ${n.currency} (a reversed top-up)`);
        return [head, ...lines, ...owing].join('\n');
      });
      if (!report.ok) throw new CliFailure(`${report.discrepancies.length} wallet(s) differ from their ledger`, EXIT.checkFailed);
    });

  wallet
    .command('adjust <user> <amount>')
    .description('credit (positive AMOUNT) or debit (negative AMOUNT) a wallet for support; a debit cannot take it below zero')
    .requiredOption('--reason <text>', 'why; kept in the audit trail (the customer never sees it)')
    .option('--description <text>', 'what the customer\'s ledger says (default "Credit from support" or "Debit by support")')
    .option('--reference <ref>', 'a ticket or case id: adjusting again with the same reference posts nothing')
    .action(async (ref: string, amount: string, opts: { reason: string; description?: string; reference?: string }, cmd: Command) => {
      const result = await withServices(async (s) => {
        const user = await findWalletOwner(s, ref);
        const { wallet: w, entry, alreadyApplied } = await adjustWallet(s, {
          user,
          amount,
          reason: opts.reason,
          description: opts.description,
          reference: opts.reference,
          actor: cliActor(),
        });
        return { username: user.username, wallet: serializeWallet(w), transaction: serializeWalletTransaction(entry), alreadyApplied };
      });
      const t = result.transaction;
      const what = `${t.amount} ${result.wallet.currency} ${t.kind === 'credit' ? 'to' : 'from'} ${result.username}`;
      output(globalOptions(cmd), { already_applied: result.alreadyApplied, wallet: result.wallet, transaction: t }, () =>
        result.alreadyApplied
          ? `Already applied: reference "${opts.reference?.trim()}" ${t.kind === 'credit' ? 'credited' : 'debited'} ${what} at ${t.created_at} (entry ${t.id}); nothing posted now. Balance ${result.wallet.balance}.`
          : `${t.kind === 'credit' ? 'Credited' : 'Debited'} ${what}: balance ${result.wallet.balance} (entry ${t.id}).`,
      );
    });
}
