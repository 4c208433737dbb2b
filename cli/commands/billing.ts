import type { Command } from 'commander';
import { COUNTERS, runBilling, type BillingRunReport } from '../../src/services/billing/run-billing.js';
import { startProgress } from '../progress.js';
import { CliFailure, EXIT, globalOptions, output, table, withServices } from '../runtime.js';
import { auditCliChange } from '../audit-trail.js';
import { cliActor } from '../../src/services/audit/actor.js';

/** How far in the past `--at` may be without --allow-past: clock skew between hosts, not back-dating. */
export const PAST_TOLERANCE_MS = 5 * 60 * 1000;

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * `--at`: an ISO 8601 date (midnight UTC) or date-time with a zone (`Z` or `+07:00`); a time
 * without a zone is refused rather than guessed.
 */
export function parseAt(text: string): Date {
  const value = text.trim();
  const ok = DATE_ONLY.test(value) || DATE_TIME.test(value);
  const at = new Date(DATE_ONLY.test(value) ? `${value}T00:00:00Z` : value);
  // Date accepts 2027-02-30 and rolls it over; the round trip catches impossible dates.
  const sameDay = ok && !Number.isNaN(at.getTime()) && (DATE_ONLY.test(value) ? at.toISOString().slice(0, 10) === value : true);
  if (!sameDay) {
    throw new CliFailure(`--at "${text}" is not a readable time; use an ISO 8601 date (2027-03-01) or date-time with a zone (2027-03-01T09:00:00Z, 2027-03-01T16:00:00+07:00)`, EXIT.usage);
  }
  return at;
}

function parseLimit(text: string): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1) throw new CliFailure(`--limit must be a positive whole number, got "${text}"`, EXIT.usage);
  return Number(text);
}

function human(report: BillingRunReport): string {
  const lines = [
    `Billing run at ${report.at}${report.dry_run ? ' (dry run: nothing was written)' : ''}: ${report.subscriptions} subscription(s) had something due` +
      (report.renewal_failures.length > 0 ? `; ${report.renewal_failures.length} renewal(s) failed (see below).` : '.'),
    '',
    table([...COUNTERS.map((c) => ({ outcome: c as string, count: report[c] })), { outcome: 'errors', count: report.errors.length }], ['outcome', 'count']),
  ];
  if (report.dry_run && report.actions.length > 0) {
    lines.push('', table(report.actions as unknown as Record<string, unknown>[], ['subscription_id', 'action', 'invoice_number', 'amount', 'status']));
    const awaiting = report.actions.filter((a) => a.awaits_gateway);
    if (awaiting.length > 0) lines.push('', `Not predictable (${awaiting.length}):`, ...awaiting.map((a) => `  ${a.subscription_id}: ${a.awaits_gateway}`));
  }
  if (report.renewal_failures.length > 0) {
    const byCode = new Map<string, number>();
    for (const f of report.renewal_failures) byCode.set(f.code, (byCode.get(f.code) ?? 0) + 1);
    const summary = [...byCode].map(([code, n]) => `${n} ${code}`).join(', ');
    lines.push('', `Renewals failed (${report.renewal_failures.length}: ${summary}):`, ...report.renewal_failures.map((f) => `  ${f.subscription_id}${f.invoice_number ? ` (${f.invoice_number})` : ''}: ${f.code}: ${f.message}`));
  }
  if (report.errors.length > 0) lines.push('', 'Errors:', ...report.errors.map((e) => `  ${e.subscription_id}: ${e.message}`));
  return lines.join('\n');
}

export function registerBillingCommands(program: Command): void {
  const billing = program.command('billing').description('recurring billing');

  billing
    .command('run')
    .description('renew, dun, cancel, expire and end trials for every subscription due at --at (default now); catches up on everything missed')
    .option('--at <time>', 'the run\'s time: ISO 8601 date or date-time with a zone (default now)')
    .option('--allow-past', `accept an --at more than ${PAST_TOLERANCE_MS / 60000} minutes in the past (back-dated invoices)`)
    .option('--force', `accept an --at more than ${PAST_TOLERANCE_MS / 60000} minutes in the future (renewals charged before they are due)`)
    .option('--limit <n>', 'bill at most this many subscriptions')
    .option('--dry-run', 'rehearse the run in a transaction that is rolled back and report what it would do; writes nothing and calls no gateway (what a charge\'s answer decides is reported as not predictable)')
    .action(async (opts: { at?: string; allowPast?: boolean; force?: boolean; limit?: string; dryRun?: boolean }, cmd: Command) => {
      const at = opts.at === undefined ? new Date() : parseAt(opts.at);
      if (!opts.allowPast && at.getTime() < Date.now() - PAST_TOLERANCE_MS) {
        throw new CliFailure(`--at ${at.toISOString()} is in the past; invoices would be back-dated (pass --allow-past to do it anyway)`, EXIT.usage);
      }
      // NOTE: a run in the future charges customers for periods that have not started and dates
      // their invoices and ledger entries ahead of everything written meanwhile. A dry run only
      // looks, so it may preview any time.
      if (!opts.force && !opts.dryRun && at.getTime() > Date.now() + PAST_TOLERANCE_MS) {
        throw new CliFailure(`--at ${at.toISOString()} is in the future; renewals would be charged before they are due (use --dry-run to preview, or pass --force to do it anyway)`, EXIT.usage);
      }
      const limit = opts.limit === undefined ? undefined : parseLimit(opts.limit);
      const progress = startProgress({ every: 25 });
      const report = await withServices(async (s) => {
        const ran = await runBilling(s, {
          at,
          limit,
          dryRun: opts.dryRun,
          actor: cliActor(),
          onProgress: ({ seen, total, report: r }) => progress.update(seen, total, `${r.renewed} renewed, ${r.renewal_failures.length} renewals failed, ${r.errors.length} errors`),
        });
        // One event for the run, with its counters: each subscription's changes are in its own history.
        if (!opts.dryRun) {
          // A run that did nothing records nothing: only the counters that moved.
          const counters = Object.entries(ran).filter((entry): entry is [string, number] => typeof entry[1] === 'number' && entry[1] !== 0);
          await auditCliChange(s, { action: 'billing.run', target: { type: 'billing_run', id: at.toISOString() }, changes: Object.fromEntries(counters.map(([k, v]) => [k, [null, v]])) });
        }
        return ran;
      }).finally(() => progress.finish());
      output(globalOptions(cmd), report, () => human(report));
      // Exit 1 only for the run's own failures (a subscription it could not bill: database, gateway
      // down, our key refused); a customer's failed renewal (a declined card, no saved card, a
      // short wallet) is business as usual, listed under "Renewals failed" with its reason, and
      // exits 0 (docs/billing.md).
      if (report.errors.length > 0) process.exitCode = EXIT.checkFailed;
    });
}
