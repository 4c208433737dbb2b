import { DriverException, TableNotFoundException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hotRows, hotWrite } from '../../src/db/hot-sql.js';
import { migrateUp, openOrm, type Orm } from '../../src/db/orm.js';
import { DATABASES, createTestDatabase, type TestDatabase } from '../helpers/database.js';

describe.each(DATABASES)('hot statements on the ORM pool (%s)', (kind) => {
  let db: TestDatabase;
  let orm: Orm;
  const em = () => orm.em as EntityManager;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    orm = await openOrm(db.url, { create: true });
    await migrateUp(orm);
    await em().execute(`insert into counters (name, value) values ('hot-a', 7), ('hot-b', 8)`);
  });

  afterAll(async () => {
    await orm?.close(true);
    await db?.drop();
  });

  const valueOf = async (on: EntityManager, name: string) =>
    Number((await hotRows<{ value: unknown }>(on, 'select value from counters where name = ?', [name]))[0].value);
  /** Runs `work` in a transaction that is then rolled back. */
  const rolledBack = (work: (tx: EntityManager) => Promise<void>) =>
    orm.em
      .fork()
      .transactional(async (tx) => {
        await work(tx as EntityManager);
        throw new Error('roll back');
      })
      .catch((error: Error) => expect(error.message).toBe('roll back'));

  it('binds the values, and the same statement answers for each of them', async () => {
    const sql = 'select name, value from counters where name = ? or name = ? order by name';
    expect((await hotRows<{ name: string; value: unknown }>(em(), sql, ['hot-a', 'none'])).map((r) => [r.name, Number(r.value)])).toEqual([['hot-a', 7]]);
    expect((await hotRows<{ name: string; value: unknown }>(em(), sql, ['hot-b', 'hot-a'])).map((r) => [r.name, Number(r.value)])).toEqual([
      ['hot-a', 7],
      ['hot-b', 8],
    ]);
    // A value that looks like SQL is a value.
    expect(await hotRows(em(), sql, ["hot-a' or '1'='1", 'x'])).toEqual([]);
  });

  it('joins the transaction it runs in: it sees that transaction\'s own uncommitted writes', async () => {
    await rolledBack(async (tx) => {
      await tx.execute(`update counters set value = 70 where name = 'hot-a'`);
      expect(await valueOf(tx, 'hot-a')).toBe(70);
    });
    expect(await valueOf(em(), 'hot-a')).toBe(7);
  });

  it('writes on the transaction\'s own connection: values bound, the rows changed counted, undone by its rollback', async () => {
    await rolledBack(async (tx) => {
      const changed = await hotWrite(tx, 'update counters set value = value + ? where name = ? or name = ?', [100, 'hot-b', "x' or '1'='1"]);
      expect(changed).toBe(1);
      expect(await valueOf(tx, 'hot-b')).toBe(108);
    });
    expect(await valueOf(em(), 'hot-b')).toBe(8);
  });

  it("fails with MikroORM's exceptions, as em.execute does (the error boundary classifies those)", async () => {
    const failure = await hotRows(em(), 'select * from no_such_table where id = ?', [1]).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TableNotFoundException);
    expect(failure).toBeInstanceOf(DriverException);
  });
});
