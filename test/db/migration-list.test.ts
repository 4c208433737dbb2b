import { readdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { migrations as postgresqlMigrations } from '../../migrations/postgresql/index.js';
import { migrationNames as postgresqlNames } from '../../migrations/postgresql/names.js';
import { migrations as sqliteMigrations } from '../../migrations/sqlite/index.js';
import { migrationNames as sqliteNames } from '../../migrations/sqlite/names.js';
import { migrateUp, migrationsPath, openOrm } from '../../src/db/orm.js';
import { DATABASES, createTestDatabase, type TestDatabase } from '../helpers/database.js';

describe('the static migration lists', () => {
  it.each([
    ['sqlite', sqliteMigrations, sqliteNames],
    ['postgresql', postgresqlMigrations, postgresqlNames],
  ] as const)('%s: names.ts, index.ts and the files on disk agree', (dialect, list, names) => {
    const files = readdirSync(migrationsPath(dialect)).filter((f) => /^Migration\d+.*\.ts$/.test(f)).map((f) => f.replace(/\.ts$/, '')).sort();
    expect(list.map((m) => m.name)).toEqual(files);
    expect([...names]).toEqual(files);
  });
});

describe.each(DATABASES)('migrating at start on %s', (kind) => {
  let db: TestDatabase;
  afterAll(() => db?.drop());

  it('applies every migration to a fresh database, then has nothing to do', async () => {
    db = await createTestDatabase(kind);
    const orm = await openOrm(db.url, { create: true });
    try {
      expect(await migrateUp(orm)).toEqual(kind === 'sqlite' ? [...sqliteNames] : [...postgresqlNames]);
      expect(await migrateUp(orm)).toEqual([]);
    } finally {
      await orm.close(true);
    }
  });
});
