import { afterEach, describe, expect, it } from 'vitest';
import { openOrm, type Orm } from '../../src/db/orm.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/*
 * A 2xx means committed, and committed must survive a power loss or an OS crash, not only the
 * process dying (docs/operations.md, "SQLite"). better-sqlite3 is built with WAL's synchronous
 * at NORMAL, which leaves the last commits in the page cache; every connection the service and
 * the operator CLI open (openOrm) sets FULL, which flushes the WAL at each COMMIT.
 */
describe('SQLite connections', () => {
  let db: TestDatabase | undefined;
  let orm: Orm | undefined;
  afterEach(async () => {
    await orm?.close(true);
    await db?.drop();
  });

  it('flush the write-ahead log at every commit (synchronous FULL), with foreign keys enforced', async () => {
    db = await createTestDatabase('sqlite');
    orm = await openOrm(db.url, { create: true });
    const connection = orm.em.getConnection();
    expect(await connection.execute('pragma journal_mode')).toEqual([{ journal_mode: 'wal' }]);
    expect(await connection.execute('pragma synchronous')).toEqual([{ synchronous: 2 }]);
    expect(await connection.execute('pragma foreign_keys')).toEqual([{ foreign_keys: 1 }]);
  });
});
