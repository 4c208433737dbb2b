/** Fails when the entities have changes that no committed migration covers (per dialect). */
import { migratorOf, openOrm } from '../src/db/orm.js';

const targets = [
  'sqlite::memory:',
  process.env.MIGRATION_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
];
let stale = false;
for (const url of targets) {
  const orm = await openOrm(url, { migrationSnapshot: true });
  try {
    const needed = await (await migratorOf(orm)).checkMigrationNeeded();
    console.log(`${url.split(':')[0]}: ${needed ? 'MIGRATION NEEDED' : 'up to date'}`);
    stale ||= needed;
  } finally {
    await orm.close(true);
  }
}
process.exit(stale ? 1 : 0);
