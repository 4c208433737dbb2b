import type { Command } from 'commander';
import type { ApiKey } from '../../src/db/entities/api-key.js';
import { createApiKey, listApiKeys, revokeApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { withReason } from '../audit-trail.js';
import { globalOptions, note, output, table, withServices } from '../runtime.js';

function serializeApiKey(k: ApiKey) {
  return {
    id: k.id,
    name: k.name,
    scope: k.scope,
    prefix: k.prefix,
    created_by: k.createdBy,
    created_at: k.createdAt.toISOString(),
    last_used_at: k.lastUsedAt?.toISOString() ?? null,
    revoked_at: k.revokedAt?.toISOString() ?? null,
  };
}

export function registerApiKeyCommands(program: Command): void {
  const keys = program.command('api-keys').description('API keys for the staff API (Authorization: Bearer KEY on /api/subscriptions/admin/)');

  withReason(
    keys
      .command('create')
      .description('make a key; it is printed once and only its hash is kept')
      .requiredOption('--name <name>', 'who or what uses it (shown in the audit trail)')
      .requiredOption('--scope <scope>', 'read (look-ups and reports), write (also act: refund, cancel, adjust…) or events (sends usage events, nothing else)'),
  ).action(async (opts: { name: string; scope: string; reason: string }, cmd: Command) => {
      const { apiKey, key } = await withServices((s) => createApiKey(s, cliActor(), opts));
      output(globalOptions(cmd), { id: apiKey.id, name: apiKey.name, scope: apiKey.scope, key }, () => key);
      if (!globalOptions(cmd).json) note(`API key ${apiKey.id} "${apiKey.name}" (${apiKey.scope}). Store it now: it is not shown again.`);
    });

  keys
    .command('list')
    .description('every key (never the key itself: its first characters, to tell them apart)')
    .action(async (_opts, cmd: Command) => {
      const rows = (await withServices((s) => listApiKeys(s))).map(serializeApiKey);
      output(globalOptions(cmd), rows, () => table(rows, ['id', 'name', 'scope', 'prefix', 'created_at', 'last_used_at', 'revoked_at']));
    });

  withReason(keys.command('revoke <id>').description('revoke a key (by its id or its prefix); it fails at once on every server process')).action(
    async (ref: string, opts: { reason: string }, cmd: Command) => {
      const { apiKey, changed } = await withServices((s) => revokeApiKey(s, cliActor(), ref, opts.reason));
      output(globalOptions(cmd), serializeApiKey(apiKey), () =>
        changed ? `Revoked API key ${apiKey.id} "${apiKey.name}".` : `API key ${apiKey.id} "${apiKey.name}" was already revoked at ${apiKey.revokedAt?.toISOString()}.`,
      );
    },
  );
}
