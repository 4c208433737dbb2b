import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateUp, openOrm, type Orm } from '../../../src/db/orm.js';
import { rehearse } from '../../../src/services/common/rehearse.js';
import { retryingTransaction } from '../../../src/services/common/retrying-transaction.js';
import { DATABASES, createTestDatabase, type TestDatabase } from '../../helpers/database.js';

/*
 * The dry runs (billing run, payments sync, webhooks replay) rehearse in a transaction they roll
 * back, beside a server that keeps writing to the same database from its own connection.
 */
const execFileAsync = promisify(execFile);

describe.each(DATABASES)('a rehearsal (%s)', (kind) => {
  let db: TestDatabase;
  /** The CLI's connection, and a live server's. */
  let cli: Orm;
  let server: Orm;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    cli = await openOrm(db.url, { create: true });
    await migrateUp(cli);
    server = await openOrm(db.url);
    await (cli.em as EntityManager).execute(`insert into counters (name, value) values ('rehearsed', 1), ('served', 1)`);
  });

  afterAll(async () => {
    await server?.close(true);
    await cli?.close(true);
    await db?.drop();
  });

  const valueOf = async (on: EntityManager, name: string) =>
    Number(((await on.execute('select value from counters where name = ?', [name])) as { value: unknown }[])[0].value);
  const bump = (on: EntityManager, name: string, by: number) => on.execute(`update counters set value = value + ${by} where name = ?`, [name], 'run');
  /**
   * The server's write, from a process of its own on SQLite, as a live server's is. Made from
   * this process on the second connection, it was seen to wait for the rehearsal's end even
   * without the rehearsal's lock, which hid the failure this test is for.
   */
  const serverBump = (name: string): Promise<unknown> =>
    kind === 'sqlite'
      ? execFileAsync(process.execPath, [
          '-e',
          `const D = require('better-sqlite3'); const d = new D(process.argv[1]); d.pragma('busy_timeout = 20000'); d.prepare('update counters set value = value + 1 where name = ?').run(process.argv[2]);`,
          db.url.slice('sqlite:'.length),
          name,
        ])
      : bump(server.em.fork() as EntityManager, name, 1);

  it('answers what its work returned and keeps nothing of what the work wrote', async () => {
    const seen = await rehearse(cli.em as EntityManager, 'counters', async (tx) => {
      await bump(tx, 'rehearsed', 10);
      return valueOf(tx, 'rehearsed');
    });
    expect(seen).toBe(11);
    expect(await valueOf(cli.em.fork() as EntityManager, 'rehearsed')).toBe(1);
  });

  it('a write of the server between its reads and its first write neither fails it nor is lost: the server waits its turn', async () => {
    const before = await valueOf(server.em.fork() as EntityManager, 'served');
    let serverWrite: Promise<unknown> = Promise.resolve();
    const seen = await rehearse(cli.em as EntityManager, 'counters', async (tx) => {
      const read = await valueOf(tx, 'rehearsed');
      serverWrite = serverBump('served');
      // Long enough for the server's write to commit, were it not waiting for the rehearsal.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await bump(tx, 'rehearsed', 10);
      return read;
    });
    await serverWrite;
    expect(seen).toBe(1);
    expect(await valueOf(server.em.fork() as EntityManager, 'served')).toBe(before + 1);
    expect(await valueOf(cli.em.fork() as EntityManager, 'rehearsed')).toBe(1);
  });

  it('a retrying transaction inside it is part of it: rolled back with it, never committed beside it or left waiting for the connection', async () => {
    await rehearse(cli.em as EntityManager, 'counters', (tx) => retryingTransaction(tx, (em) => bump(em, 'rehearsed', 5)));
    expect(await valueOf(cli.em.fork() as EntityManager, 'rehearsed')).toBe(1);
  });
});
