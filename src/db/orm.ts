import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { PROJECT_ROOT } from '../project-root.js';
import type { MikroORM, Options } from '@mikro-orm/core';
import type { AbstractSqlDriver, EntityManager } from '@mikro-orm/knex';
import type { Migrator } from '@mikro-orm/migrations';
import { migrationNames as postgresqlMigrationNames } from '../../migrations/postgresql/names.js';
import { migrationNames as sqliteMigrationNames } from '../../migrations/sqlite/names.js';
import { DatabaseUnavailableError } from '../domain/errors.js';
import { describeDatabaseFailure } from './database-failure.js';
import { pgSslOption, sslAttempts, sslSettingsOf, tlsFailureHint, withoutSslParams, type SslSettings } from './database-url.js';
import { dialectOf, dialectOfPlatform, type Dialect } from './dialect.js';
import { allEntities } from './entities/index.js';
import { withMigrationLock } from './migration-lock.js';

export { dialectOf, type Dialect };

/** The ORM on either dialect; its `em` is the SQL entity manager. */
export type Orm = MikroORM<AbstractSqlDriver>;

export function migrationsPath(dialect: Dialect): string {
  return resolve(PROJECT_ROOT, 'migrations', dialect);
}

/** What an operator runs to create or update the schema; named in every "schema behind" refusal. */
export const MIGRATE_COMMAND = 'npx billing-admin db migrate';

export interface OrmOptions {
  /**
   * Create the database when it does not exist (SQLite: its folder and file; PostgreSQL: the
   * database, MikroORM's ensureDatabase). Only `db migrate` and a server that migrates on start
   * pass it: anything else refuses a missing database rather than make an empty one.
   */
  create?: boolean;
  debug?: boolean;
  /** Connection pool size on PostgreSQL. */
  poolMax?: number;
  /** SQLite: how long to wait for another process's write lock (ms); default 30,000. */
  busyTimeoutMs?: number;
  /**
   * Read and write `migrations/<dialect>/.snapshot.json`: only the scripts that write and check
   * migrations. NOTE: MikroORM rewrites the snapshot from the live schema after every migration
   * it applies, so with this on, every server and test that migrated a database rewrote the
   * committed snapshot in the working tree, in a form `migration:check` then disagreed with.
   */
  migrationSnapshot?: boolean;
}

function baseOptions(dialect: Dialect, opts: OrmOptions): Options {
  return {
    entities: allEntities,
    discovery: { warnWhenNoEntities: true },
    // NOTE: MikroORM 6 defaults to true and then CREATES a PostgreSQL database it cannot find, so
    // a mistyped DATABASE_URL used to make a new empty database. Only `create` may do that.
    ensureDatabase: opts.create ?? false,
    // Each request and each job must use its own context (a fork of the entity manager): a shared
    // one would mix their identity maps.
    allowGlobalContext: false,
    forceUtcTimezone: true,
    debug: opts.debug ?? false,
    migrations: {
      path: migrationsPath(dialect),
      pathTs: migrationsPath(dialect),
      // The static list (migrationsList) is set by migratorOf, which loads it.
      emit: 'ts',
      snapshot: opts.migrationSnapshot ?? false,
      snapshotName: '.snapshot',
      silent: true,
      transactional: true,
      allOrNothing: true,
    },
  };
}

/**
 * Opens the database named by a `sqlite:PATH`, `sqlite::memory:` or `postgres://` URL and checks
 * that it answers; throws DatabaseUnavailableError when it is missing (and `create` is not set)
 * or cannot be reached.
 */
export async function openOrm(databaseUrl: string, opts: OrmOptions = {}): Promise<Orm> {
  const orm = await initOrm(databaseUrl, opts);
  const check = await orm.checkConnection();
  if (!check.ok) {
    await orm.close(true).catch(() => undefined);
    throw new DatabaseUnavailableError(`database unavailable: ${describeDatabaseFailure(check.error ?? check.reason)}`, tlsHint(databaseUrl, check.error ?? check.reason));
  }
  return orm;
}

/** What to change when a connection failed over TLS (or for the want of it). */
function tlsHint(databaseUrl: string, err: unknown): string | null {
  if (dialectOf(databaseUrl) !== 'postgresql') return null;
  const settings = sslSettingsOf(databaseUrl);
  if ('problem' in settings) return null;
  return tlsFailureHint(settings, describeDatabaseFailure(err));
}

async function initOrm(databaseUrl: string, opts: OrmOptions): Promise<Orm> {
  const dialect = dialectOf(databaseUrl);
  if (dialect === 'sqlite') {
    const file = databaseUrl.slice('sqlite:'.length) || ':memory:';
    if (file !== ':memory:') {
      if (opts.create) mkdirSync(dirname(resolve(file)), { recursive: true });
      else if (!existsSync(file)) {
        throw new DatabaseUnavailableError(`database unavailable: no SQLite database at ${resolve(file)}`, `create it with ${MIGRATE_COMMAND}, or fix DATABASE_URL`);
      }
    }
    // NOTE: each driver is loaded only for its dialect: a process never needs both, and the other
    // one's modules were memory and start time for nothing.
    const { MikroORM: SqliteORM } = await import('@mikro-orm/better-sqlite');
    return SqliteORM.init({
      ...baseOptions(dialect, opts),
      dbName: file,
      pool: {
        afterCreate: (conn: { pragma(sql: string): unknown }, done: (err: Error | null, conn: unknown) => void) => {
          // WAL lets readers proceed during a write; the busy timeout makes a second process
          // (an operator's command during a billing run) wait for the write lock instead of
          // failing at once with "database is locked".
          if (file !== ':memory:') conn.pragma('journal_mode = WAL');
          // NOTE: better-sqlite3 is built with WAL's synchronous at NORMAL, which does not flush
          // the WAL at COMMIT: a power loss or an OS crash could then take back transactions
          // already answered (a settlement the gateway was told we have). FULL flushes at every
          // COMMIT, so a 2xx survives them too; the webhook's group commit shares that flush.
          conn.pragma('synchronous = FULL');
          conn.pragma(`busy_timeout = ${Math.trunc(opts.busyTimeoutMs ?? 30_000)}`);
          conn.pragma('foreign_keys = ON');
          done(null, conn);
        },
      },
    }) as unknown as Orm;
  }
  const settings = sslSettingsOf(databaseUrl);
  // The configuration refused these already; a caller with its own URL (a test) gets the same words.
  if ('problem' in settings) throw new DatabaseUnavailableError(`database unavailable: ${settings.problem}`, 'fix DATABASE_URL or PGSSLMODE');
  const tls = await chooseTls(databaseUrl, settings);
  const { MikroORM: PostgresORM } = await import('@mikro-orm/postgresql');
  return PostgresORM.init({
    ...baseOptions(dialect, opts),
    clientUrl: databaseUrl,
    pool: { min: 0, max: opts.poolMax ?? 10 },
    // Always explicit: MikroORM drops the URL's sslmode, and pg alone would read PGSSLMODE its own way.
    driverOptions: { connection: { ssl: pgSslOption(settings, tls) } },
  }) as unknown as Orm;
}

/**
 * Whether the pool's connections use TLS. One mode, one answer (require: TLS or no connection).
 * prefer and allow try a first connection as libpq does and keep what worked, so that `prefer`
 * against a server offering no TLS connects unencrypted, and `allow` against one that insists
 * connects encrypted. When no attempt connects, the first mode is kept and openOrm reports why.
 */
async function chooseTls(databaseUrl: string, settings: SslSettings): Promise<boolean> {
  const attempts = sslAttempts(settings.mode);
  if (attempts.length === 1) return attempts[0];
  const { default: pg } = await import('pg');
  for (const tls of attempts) {
    const client = new pg.Client({ connectionString: withoutSslParams(databaseUrl), ssl: pgSslOption(settings, tls), connectionTimeoutMillis: 10_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return tls;
    } catch (err) {
      // The server answered with its own error (a SQLSTATE such as 3D000, the database does not
      // exist yet for `db migrate` to make): this mode reached it, and is the one to keep.
      const code = (err as { code?: unknown }).code;
      if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return tls;
      // else the next attempt, as libpq makes it
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  return attempts[0];
}

/**
 * How the connection to the database is protected, for the start-up line: SQLite is a local
 * file; on PostgreSQL the server's own view of this session (pg_stat_ssl).
 */
export async function connectionSecurity(orm: Orm): Promise<string> {
  if (dialectOfPlatform(orm.em.getPlatform()) === 'sqlite') return 'local file';
  const sslmode = (() => {
    const settings = sslSettingsOf(orm.config.get('clientUrl') ?? '');
    return 'problem' in settings ? '' : `sslmode=${settings.mode}${settings.source === 'default' ? ', the default' : settings.source === 'PGSSLMODE' ? ' from PGSSLMODE' : ''}`;
  })();
  const rows = await orm.em
    .getConnection()
    .execute<{ ssl: boolean; version: string | null }[]>('select ssl, version from pg_stat_ssl where pid = pg_backend_pid()');
  const row = rows[0];
  return row?.ssl ? `encrypted (TLS, ${row.version ?? 'unknown version'}; ${sslmode})` : `NOT encrypted (${sslmode})`;
}

/**
 * SQLite: moves everything in the write-ahead log into the database file and empties the log,
 * so that the file alone is a complete copy once the server has stopped. Called at a server's
 * close, when its own writers have stopped; a reader elsewhere (a CLI command) only makes it
 * wait up to the busy timeout. Nothing on PostgreSQL.
 */
export async function checkpointWal(orm: Orm): Promise<void> {
  if (dialectOfPlatform(orm.em.getPlatform()) !== 'sqlite') return;
  if ((orm.config.get('dbName') ?? ':memory:') === ':memory:') return;
  await orm.em.getConnection().execute('pragma wal_checkpoint(TRUNCATE)');
}

/**
 * The migrator, loaded on first use: @mikro-orm/migrations (umzug and the command-line
 * libraries it pulls in) and the migrations themselves were a tenth of the server's start.
 */
export async function migratorOf(orm: Orm): Promise<Migrator> {
  const dialect = dialectOfPlatform(orm.em.getPlatform());
  const [{ Migrator: MigratorClass }, { migrations }] = await Promise.all([
    import('@mikro-orm/migrations'),
    // A static list: umzug's folder scan cannot import .ts under vitest or from a bundle.
    dialect === 'sqlite' ? import('../../migrations/sqlite/index.js') : import('../../migrations/postgresql/index.js'),
  ]);
  orm.config.set('migrations', { ...orm.config.get('migrations'), migrationsList: migrations });
  return new MigratorClass(orm.em);
}

/** This build's migrations that the database does not record as applied, in order (none on most starts). */
export async function pendingMigrations(orm: Pick<Orm, 'em'>): Promise<string[]> {
  const expected = dialectOfPlatform(orm.em.getPlatform()) === 'sqlite' ? sqliteMigrationNames : postgresqlMigrationNames;
  let rows: { name: string }[];
  try {
    rows = await orm.em.getConnection().execute<{ name: string }[]>('select name from mikro_orm_migrations');
  } catch (err) {
    // No table yet is a fresh database (everything pending); anything else is an outage.
    if (/mikro_orm_migrations/.test(String((err as Error).message)) && /exist|no such table/i.test(String((err as Error).message))) return [...expected];
    throw err;
  }
  const applied = new Set(rows.map((r) => r.name));
  return expected.filter((name) => !applied.has(name));
}

/** Refuses a database whose schema is behind this build, naming the pending migrations and the command that applies them. */
export async function assertSchemaCurrent(orm: Orm): Promise<void> {
  const pending = await pendingMigrations(orm);
  if (pending.length === 0) return;
  const shown = pending.length > 3 ? `${pending.slice(0, 3).join(', ')} and ${pending.length - 3} more` : pending.join(', ');
  throw new DatabaseUnavailableError(
    `database schema is behind this build: ${pending.length} pending migration(s) (${shown})`,
    `apply them with ${MIGRATE_COMMAND}`,
    pending,
  );
}

/**
 * Applies the pending migrations under the migration lock (migration-lock.ts): a second process
 * migrating at once waits, then finds nothing left to apply.
 */
export async function migrateUp(orm: Orm): Promise<string[]> {
  if ((await pendingMigrations(orm)).length === 0) return [];
  const em = orm.em as unknown as EntityManager;
  const sqliteFile = dialectOfPlatform(em.getPlatform()) === 'sqlite' ? (orm.config.get('dbName') ?? null) : null;
  return withMigrationLock(em, sqliteFile, async () => {
    const applied = await (await migratorOf(orm)).up();
    return applied.map((m) => m.name);
  });
}
