import type { Command } from 'commander';
import { createHash } from 'node:crypto';
import { existsSync, linkSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { dialectOf, migrateUp, migratorOf, openOrm, pendingMigrations } from '../../src/db/orm.js';
import { verifyWallets } from '../../src/services/wallet/verify-wallets.js';
import { CliFailure, cliConfig, EXIT, globalOptions, note, openDatabase, output, table } from '../runtime.js';

/** What `db backup` says on PostgreSQL, where pg_dump (and the server's WAL archiving) do the job. */
export const PG_DUMP_ADVICE = [
  'db backup copies SQLite databases only; back up PostgreSQL with its own tools:',
  '  pg_dump --format=custom --file=billing-$(date +%Y%m%dT%H%M%S).dump "$DATABASE_URL"',
  'restore into an empty database with: pg_restore --dbname="$NEW_DATABASE_URL" --no-owner FILE.dump',
  'for point-in-time recovery archive the WAL (archive_mode, pg_basebackup): docs/operations.md, "Backups"',
].join('\n');

export function registerDbCommands(program: Command): void {
  const db = program.command('db').description('database migrations');

  db.command('migrate')
    .description('apply pending migrations; the one command that creates the database (a PostgreSQL database, a SQLite file and its folder) when it is missing')
    .action(async (_opts, cmd: Command) => {
      const config = cliConfig();
      const orm = await openDatabase(config, { create: true, requireCurrentSchema: false });
      try {
        // Under the migration lock: a second `db migrate` at once waits, then has nothing to do.
        const applied = await migrateUp(orm);
        output(globalOptions(cmd), { dialect: dialectOf(config.databaseUrl), applied }, () =>
          applied.length ? `Applied ${applied.length} migration(s):\n${applied.map((n) => `  ${n}`).join('\n')}` : 'Nothing to apply; the database is up to date.',
        );
      } finally {
        await orm.close(true);
      }
    });

  db.command('status')
    .description('list applied and pending migrations; exits 3 while any is pending, so a deploy script can wait for or refuse a database behind this build')
    .action(async (_opts, cmd: Command) => {
      const config = cliConfig();
      const orm = await openDatabase(config, { requireCurrentSchema: false });
      try {
        const migrator = await migratorOf(orm);
        const executed = await migrator.getExecutedMigrations();
        const pending = await migrator.getPendingMigrations();
        const rows = [
          ...executed.map((m) => ({ name: m.name, status: 'applied', applied_at: m.executed_at?.toISOString?.() ?? String(m.executed_at) })),
          ...pending.map((m) => ({ name: m.name, status: 'pending', applied_at: null })),
        ];
        output(globalOptions(cmd), { dialect: dialectOf(config.databaseUrl), migrations: rows }, () => table(rows, ['name', 'status', 'applied_at']));
        if (pending.length > 0) {
          note(`${pending.length} migration(s) pending: run billing-admin db migrate`);
          process.exitCode = EXIT.conflict;
        }
      } finally {
        await orm.close(true);
      }
    });

  db.command('backup')
    .description('SQLite: an online, consistent copy of the database while the server runs (SQLite\'s backup API), then checked (integrity_check, wallet verify); never overwrites a file. PostgreSQL: says how to use pg_dump (exit 2)')
    .requiredOption('--out <file>', 'the copy to write; refused when it exists')
    .action(async (opts: { out: string }, cmd: Command) => {
      const config = cliConfig();
      if (dialectOf(config.databaseUrl) === 'postgresql') throw new CliFailure(PG_DUMP_ADVICE, EXIT.usage);
      const source = config.databaseUrl.slice('sqlite:'.length);
      if (source === ':memory:') throw new CliFailure('DATABASE_URL is sqlite::memory:, which no other process can read: nothing to back up', EXIT.usage);
      const out = resolve(opts.out);
      if (existsSync(out)) throw new CliFailure(`${out} exists: a backup never overwrites a file; name another with --out, or move that one away`, EXIT.usage);
      if (!existsSync(dirname(out))) throw new CliFailure(`${dirname(out)} does not exist: make the folder first, or name another with --out`, EXIT.usage);
      // Written beside the target under another name, checked, then linked into place: a copy
      // cut short (a full disk, Ctrl-C) never sits under the name the operator asked for.
      const partial = `${out}.partial-${process.pid}`;
      // A backup before a migration is the usual one: a schema behind this build is copied too.
      const orm = await openDatabase(config, { requireCurrentSchema: false });
      try {
        note(`copying ${source} to ${out} (the server may keep running)…`);
        await copySqlite(orm, partial);
      } catch (err) {
        rmSync(partial, { force: true });
        throw err;
      } finally {
        await orm.close(true);
      }
      let checks: BackupChecks;
      try {
        checks = await checkCopy(partial, config);
        linkSync(partial, out);
      } finally {
        for (const ext of ['', '-wal', '-shm']) rmSync(`${partial}${ext}`, { force: true });
      }
      const bytes = statSync(out).size;
      const sha256 = createHash('sha256').update(readFileSync(out)).digest('hex');
      const ok = checks.integrity_check === 'ok' && checks.wallet_verify.ok;
      const report = { dialect: 'sqlite', source, out, bytes, sha256, ok, checks };
      output(globalOptions(cmd), report, () =>
        [
          `Backed up ${source} to ${out} (${bytes} bytes, sha256 ${sha256}).`,
          `  integrity_check: ${checks.integrity_check}`,
          `  wallet verify:   ${checks.wallet_verify.skipped ? `skipped: ${checks.wallet_verify.skipped}` : checks.wallet_verify.ok ? 'all exact' : `${checks.wallet_verify.discrepancies} wallet(s) differ`} (${checks.wallet_verify.wallets_checked} wallets, ${checks.wallet_verify.entries_checked} entries)`,
          `  migrations:      ${checks.migrations_applied} applied, ${checks.migrations_pending} pending for this build`,
        ].join('\n'),
      );
      if (!ok) {
        // The report above says which check failed (one JSON document with --json); the exit status says that one did.
        note(`the copy at ${out} did not pass its checks (${checks.integrity_check !== 'ok' ? 'integrity_check' : 'wallet verify'}); it is kept for inspection`);
        process.exitCode = EXIT.checkFailed;
      }
    });
}

interface BackupChecks {
  integrity_check: string;
  wallet_verify: { ok: boolean; wallets_checked: number; entries_checked: number; discrepancies: number; skipped?: string };
  migrations_applied: number;
  migrations_pending: number;
}

interface SqliteHandle {
  backup(file: string, options?: { progress?: (info: { totalPages: number; remainingPages: number }) => number }): Promise<unknown>;
}

/**
 * SQLite's online backup API (better-sqlite3's `backup`) on the ORM's own connection: pages are
 * copied from one read snapshot, so writers in the server go on and the copy is consistent.
 * After the first step the rest is copied in one step, so that a busy server's writes do not
 * restart the copy again and again.
 */
async function copySqlite(orm: Awaited<ReturnType<typeof openOrm>>, file: string): Promise<void> {
  const knex = (orm.em.getConnection() as unknown as { getKnex(): { client: { acquireConnection(): Promise<SqliteHandle>; releaseConnection(c: SqliteHandle): Promise<void> } } }).getKnex();
  const connection = await knex.client.acquireConnection();
  try {
    await connection.backup(file, { progress: ({ remainingPages }) => Math.max(remainingPages, 100) });
  } finally {
    await knex.client.releaseConnection(connection);
  }
}

/** The copy, opened on its own: SQLite's integrity check, the wallets against their ledgers, the migrations it has. */
async function checkCopy(file: string, config: ReturnType<typeof cliConfig>): Promise<BackupChecks> {
  const orm = await openOrm(`sqlite:${file}`, { busyTimeoutMs: config.sqliteBusyTimeoutMs });
  try {
    const rows = await orm.em.getConnection().execute<{ integrity_check: string }[]>('pragma integrity_check');
    const integrity = rows.map((r) => r.integrity_check).join('; ');
    const pending = await pendingMigrations(orm);
    const applied = pending.length === 0 || (await orm.em.getConnection().execute<{ n: number }[]>("select count(*) as n from sqlite_master where name = 'mikro_orm_migrations'"))[0]?.n
      ? ((await orm.em.getConnection().execute<{ n: number }[]>('select count(*) as n from mikro_orm_migrations'))[0]?.n ?? 0)
      : 0;
    // This build's entities read only a schema as new as itself.
    const wallets = pending.length === 0 ? await verifyWallets({ em: orm.em.fork() }) : null;
    return {
      integrity_check: integrity,
      wallet_verify: wallets
        ? { ok: wallets.ok, wallets_checked: wallets.wallets_checked, entries_checked: wallets.entries_checked, discrepancies: wallets.discrepancies.length }
        : { ok: true, wallets_checked: 0, entries_checked: 0, discrepancies: 0, skipped: `the schema is behind this build (${pending.length} pending migration(s)): run wallet verify on a restored copy once migrated` },
      migrations_applied: Number(applied),
      migrations_pending: pending.length,
    };
  } finally {
    // The last connection to close folds the copy's log back into it: the file alone is the backup.
    await orm.close(true);
  }
}
