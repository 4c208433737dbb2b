import type { Command } from 'commander';
import { dialectOf, migrateUp, migratorOf } from '../../src/db/orm.js';
import { cliConfig, EXIT, globalOptions, note, openDatabase, output, table } from '../runtime.js';

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
}
