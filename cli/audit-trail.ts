import { InvalidArgumentError, type Command } from 'commander';
import { cliActor } from '../src/services/audit/actor.js';
import { recordAuditEvent, type AuditEntry } from '../src/services/audit/record-audit-event.js';
import type { DataContext } from '../src/services/context.js';
import { CliFailure, EXIT } from './runtime.js';

/**
 * Records a change this CLI made, with the operating-system user (or BILLING_OPERATOR) and the
 * command line (secret options redacted): every change a person makes is in the audit trail.
 * An entry whose `changes` are empty (a no-op) records nothing.
 */
export async function auditCliChange(ctx: Pick<DataContext, 'em'>, ...entries: AuditEntry[]): Promise<void> {
  const actor = cliActor();
  for (const entry of entries) await recordAuditEvent(ctx, actor, entry);
}

const REASON_HELP = 'why (required): kept in the audit trail, as the staff API requires';

function nonBlank(value: string): string {
  if (!value.trim()) throw new InvalidArgumentError('may not be empty');
  return value;
}

/**
 * `--reason <text>`, required: every change made from the CLI says why, as every staff API action
 * does (docs/audit.md). Without it the command stops before changing anything (exit 2).
 */
export function withReason(cmd: Command): Command {
  return cmd.requiredOption('--reason <text>', REASON_HELP, nonBlank);
}

/** `--reason <text>` for a command with `--dry-run`: required only when it changes something. */
export function withReasonUnlessDryRun(cmd: Command): Command {
  return cmd.option('--reason <text>', `${REASON_HELP}; not needed with --dry-run`, nonBlank);
}

/** The reason of a command that may run dry: a real run without one is refused (exit 2) before it starts. */
export function reasonFor(opts: { reason?: string; dryRun?: boolean }): string | undefined {
  if (!opts.dryRun && !opts.reason) throw new CliFailure("required option '--reason <text>' not specified (a dry run needs none)", EXIT.usage);
  return opts.reason;
}
