/**
 * Writes a new migration for each dialect from the difference between the entities and the
 * migration snapshot. Usage: npm run migration:create [-- --initial]
 * PostgreSQL needs a database to diff against: MIGRATION_PG_URL (default the local server).
 */
import { migratorOf, openOrm } from '../src/db/orm.js';
import { writeMigrationIndex } from './write-migration-index.js';

const initial = process.argv.includes('--initial');
const targets = [
  'sqlite::memory:',
  process.env.MIGRATION_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
];
for (const url of targets) {
  const orm = await openOrm(url, { migrationSnapshot: true });
  try {
    const result = initial
      ? await (await migratorOf(orm)).createInitialMigration()
      : await (await migratorOf(orm)).createMigration();
    console.log(`${url.split(':')[0]}: ${result.fileName || 'no changes'}`);
    writeMigrationIndex(url.startsWith('sqlite') ? 'sqlite' : 'postgresql');
  } finally {
    await orm.close(true);
  }
}
