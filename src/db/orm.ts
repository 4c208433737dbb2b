import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { PROJECT_ROOT } from '../project-root.js';
import type { MikroORM, Options } from '@mikro-orm/core';
import type { AbstractSqlDriver } from '@mikro-orm/knex';
import type { Migrator } from '@mikro-orm/migrations';
import { migrationNames as postgresqlMigrationNames } from '../../migrations/postgresql/names.js';
import { migrationNames as sqliteMigrationNames } from '../../migrations/sqlite/names.js';
import { dialectOf, dialectOfPlatform, type Dialect } from './dialect.js';
import { allEntities } from './entities/index.js';

export { dialectOf, type Dialect };

/** The ORM on either dialect; its `em` is the SQL entity manager. */
export type Orm = MikroORM<AbstractSqlDriver>;

export function migrationsPath(dialect: Dialect): string {
  return resolve(PROJECT_ROOT, 'migrations', dialect);
}

export interface OrmOptions {
  debug?: boolean;
  /** Connection pool size on PostgreSQL. */
  poolMax?: number;
}

function baseOptions(dialect: Dialect, opts: OrmOptions): Options {
  return {
    entities: allEntities,
    discovery: { warnWhenNoEntities: true },
    // Each request and each job must use its own context (STACK.md, MikroORM §3).
    allowGlobalContext: false,
    forceUtcTimezone: true,
    debug: opts.debug ?? false,
    migrations: {
      path: migrationsPath(dialect),
      pathTs: migrationsPath(dialect),
      // The static list (migrationsList) is set by migratorOf, which loads it.
      emit: 'ts',
      snapshot: true,
      snapshotName: '.snapshot',
      silent: true,
      transactional: true,
      allOrNothing: true,
    },
  };
}

/** Opens the database named by a `sqlite:PATH`, `sqlite::memory:` or `postgres://` URL. */
export async function openOrm(databaseUrl: string, opts: OrmOptions = {}): Promise<Orm> {
  const dialect = dialectOf(databaseUrl);
  if (dialect === 'sqlite') {
    const file = databaseUrl.slice('sqlite:'.length) || ':memory:';
    if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
    // NOTE: each driver is loaded only for its dialect: a process never needs both, and the other
    // one's modules were memory and start time for nothing.
    const { MikroORM: SqliteORM } = await import('@mikro-orm/better-sqlite');
    return SqliteORM.init({
      ...baseOptions(dialect, opts),
      dbName: file,
      pool: {
        afterCreate: (conn: { pragma(sql: string): unknown }, done: (err: Error | null, conn: unknown) => void) => {
          // WAL lets readers proceed during a write; the busy timeout makes a second process
          // wait for the write lock instead of failing at once.
          if (file !== ':memory:') conn.pragma('journal_mode = WAL');
          conn.pragma('busy_timeout = 10000');
          conn.pragma('foreign_keys = ON');
          done(null, conn);
        },
      },
    }) as unknown as Orm;
  }
  const { MikroORM: PostgresORM } = await import('@mikro-orm/postgresql');
  return PostgresORM.init({
    ...baseOptions(dialect, opts),
    clientUrl: databaseUrl,
    pool: { min: 0, max: opts.poolMax ?? 10 },
  }) as unknown as Orm;
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

/** Whether the database records every migration of this build as applied (most starts). */
async function upToDate(orm: Orm): Promise<boolean> {
  const expected = dialectOfPlatform(orm.em.getPlatform()) === 'sqlite' ? sqliteMigrationNames : postgresqlMigrationNames;
  let rows: { name: string }[];
  try {
    rows = await orm.em.getConnection().execute<{ name: string }[]>('select name from mikro_orm_migrations');
  } catch {
    return false; // a fresh database: no table yet
  }
  const applied = new Set(rows.map((r) => r.name));
  return expected.every((name) => applied.has(name));
}

export async function migrateUp(orm: Orm): Promise<string[]> {
  if (await upToDate(orm)) return [];
  const applied = await (await migratorOf(orm)).up();
  return applied.map((m) => m.name);
}
