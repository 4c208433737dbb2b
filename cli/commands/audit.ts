import type { Command } from 'commander';
import { serializeAuditEvent } from '../../src/http/admin-serializers.js';
import { listAuditEvents } from '../../src/services/audit/list-audit-events.js';
import { verifyAuditChain } from '../../src/services/audit/verify-audit-chain.js';
import { DEFAULT_LIST_LIMIT, positiveWhole } from '../lookups.js';
import { EXIT, globalOptions, note, output, table, withServices } from '../runtime.js';
import { parseTime } from './webhooks.js';

export function registerAuditCommands(program: Command): void {
  const audit = program.command('audit').description('the audit trail: every change made by staff, an API key or this CLI (append-only)');

  audit
    .command('list')
    .description('audit events, newest first')
    .option('--target <id>', 'only events about this target id')
    .option('--actor <name>', 'only events by this actor (username, key name, operating-system user, or id)')
    .option('--since <time>', 'only events at or after this ISO 8601 date or time')
    .option('--limit <n>', `at most this many (default ${DEFAULT_LIST_LIMIT})`)
    .action(async (opts: { target?: string; actor?: string; since?: string; limit?: string }, cmd: Command) => {
      const filters = { target: opts.target, actor: opts.actor, since: parseTime(opts.since, '--since') };
      const limit = positiveWhole(opts.limit, '--limit') ?? DEFAULT_LIST_LIMIT;
      const page = await withServices((s) => listAuditEvents(s, filters, { page: 1, pageSize: limit }));
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

  audit
    .command('verify')
    .description("walk the trail's hash chain from its first event and name the first broken link (an event changed, deleted, or written around the service); exit status 1 when broken")
    .action(async (_opts, cmd: Command) => {
      const report = await withServices((s) => verifyAuditChain(s));
      output(globalOptions(cmd), report, () => {
        const head = report.head ? ` The head is position ${report.head.position}, event ${report.head.event_id}, hash ${report.head.hash}.` : '';
        return report.broken
          ? `The audit trail is broken: ${report.broken.message}. ${report.events_checked} event(s) read.`
          : `The audit trail is whole: ${report.events_checked} event(s), each matching its hash and following the one before it.${head}`;
      });
      // One JSON document either way: the report says what is broken, the exit status that it is.
      if (!report.ok) process.exitCode = EXIT.checkFailed;
    });
}
