import type { Command } from 'commander';
import { serializeAuditEvent } from '../../src/http/admin-serializers.js';
import { listAuditEvents } from '../../src/services/audit/list-audit-events.js';
import { CliFailure, EXIT, globalOptions, note, output, table, withServices } from '../runtime.js';

function instant(value: string): Date {
  const at = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(at.getTime())) throw new CliFailure(`--since must be a date or an ISO time, got "${value}"`, EXIT.usage);
  return at;
}

function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 10_000) throw new CliFailure(`--limit must be a whole number from 1 to 10000, got "${value}"`, EXIT.usage);
  return Number(value);
}

export function registerAuditCommands(program: Command): void {
  const audit = program.command('audit').description('the audit trail: every change made by staff, an API key or this CLI (append-only)');

  audit
    .command('list')
    .description('audit events, newest first')
    .option('--target <id>', 'only events about this target id')
    .option('--actor <name>', 'only events by this actor (username, key name, operating-system user, or id)')
    .option('--since <time>', 'only events at or after this time', instant)
    .option('--limit <n>', 'at most this many', positiveInteger, 100)
    .action(async (opts: { target?: string; actor?: string; since?: Date; limit: number }, cmd: Command) => {
      const page = await withServices((s) => listAuditEvents(s, opts, { page: 1, pageSize: opts.limit }));
      const events = page.items.map(serializeAuditEvent);
      if (page.count > events.length) note(`showing the newest ${events.length} of ${page.count} events (--limit)`);
      output(globalOptions(cmd), events, () =>
        table(
          events.map((e) => ({
            occurred_at: e.occurred_at,
            actor: `${e.actor.type}:${e.actor.name}`,
            action: e.action,
            target: `${e.target.type}:${e.target.id}`,
            reason: e.reason,
            changes: Object.entries(e.changes).map(([f, [b, a]]) => `${f}: ${JSON.stringify(b)} -> ${JSON.stringify(a)}`).join('; '),
          })),
          ['occurred_at', 'actor', 'action', 'target', 'reason', 'changes'],
        ),
      );
    });
}
