import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Counter } from '../../src/db/entities/invoice.js';
import { hotRows, hotWrite } from '../../src/db/hot-sql.js';
import { inHotTransaction, NOT_HERE } from '../../src/db/hot-transaction.js';
import { migrateUp, openOrm, type Orm } from '../../src/db/orm.js';
import { DATABASES, createTestDatabase, type TestDatabase } from '../helpers/database.js';

// The webhook's plain settlement runs in these on PostgreSQL (process-notification.ts); its
// behaviour over HTTP is the webhook suites'. Here: the transaction itself.
describe.runIf(DATABASES.includes('postgresql'))('a hot transaction: BEGIN … COMMIT without knex (postgresql)', () => {
  let db: TestDatabase;
  let orm: Orm;
  const em = () => orm.em as EntityManager;
  const valueOf = async (on: EntityManager, name: string) =>
    (await hotRows<{ value: unknown }>(on, 'select value from counters where name = ?', [name])).map((r) => Number(r.value))[0] ?? null;

  beforeAll(async () => {
    db = await createTestDatabase('postgresql');
    orm = await openOrm(db.url, { create: true });
    await migrateUp(orm);
  });

  afterAll(async () => {
    await orm?.close(true);
    await db?.drop();
  });

  beforeEach(async () => {
    await em().execute(`delete from counters where name like 'hot-%'`);
    await em().execute(`insert into counters (name, value) values ('hot-a', 1)`);
  });

  it('commits what the work wrote, and nobody outside sees it before the COMMIT', async () => {
    const answer = await inHotTransaction(em(), async (tx) => {
      expect(await hotWrite(tx, 'update counters set value = ? where name = ?', [2, 'hot-a'])).toBe(1);
      expect(await valueOf(tx, 'hot-a')).toBe(2);
      expect(await valueOf(em(), 'hot-a')).toBe(1);
      return 'done';
    });
    expect(answer).toBe('done');
    expect(await valueOf(em(), 'hot-a')).toBe(2);
  });

  it('rolls back everything when the work answers NOT_HERE, and says so', async () => {
    const answer = await inHotTransaction(em(), async (tx) => {
      await hotWrite(tx, 'update counters set value = ? where name = ?', [3, 'hot-a']);
      await hotWrite(tx, 'insert into counters (name, value) values (?, ?)', ['hot-b', 9]);
      return NOT_HERE;
    });
    expect(answer).toBe(NOT_HERE);
    expect(await valueOf(em(), 'hot-a')).toBe(1);
    expect(await valueOf(em(), 'hot-b')).toBeNull();
  });

  it("rolls back when the work throws, and the caller gets the work's own error", async () => {
    const failure = new Error('the rules said no');
    await expect(
      inHotTransaction(em(), async (tx) => {
        await hotWrite(tx, 'update counters set value = ? where name = ?', [4, 'hot-a']);
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await valueOf(em(), 'hot-a')).toBe(1);
  });

  it("a statement's failure arrives as MikroORM's exception, and nothing of the work stays", async () => {
    const error = await inHotTransaction(em(), async (tx) => {
      await hotWrite(tx, 'insert into counters (name, value) values (?, ?)', ['hot-c', 1]);
      await hotWrite(tx, 'insert into counters (name, value) values (?, ?)', ['hot-a', 5]);
      return 'unreachable';
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UniqueConstraintViolationException);
    expect(await valueOf(em(), 'hot-c')).toBeNull();
  });

  it('refuses ORM queries inside it, loudly, rather than run them on another connection', async () => {
    const error = await inHotTransaction(em(), async (tx) => {
      await hotWrite(tx, 'update counters set value = ? where name = ?', [6, 'hot-a']);
      await tx.nativeUpdate(Counter, { name: 'hot-a' }, { value: 7 });
      return 'unreachable';
    }).catch((e: Error) => e);
    expect(String((error as Error).message)).toMatch(/Only hot statements/);
    expect(await valueOf(em(), 'hot-a')).toBe(1);
    const fromQueryBuilder = await inHotTransaction(em(), (tx) => tx.findOne(Counter, { name: 'hot-a' })).catch((e: Error) => e);
    expect(String((fromQueryBuilder as Error).message)).toMatch(/Only hot statements/);
  });

  it('gives its connection back to the pool whatever the outcome: forty at once, then forty more', async () => {
    for (let round = 0; round < 2; round++) {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 40 }, (_, i) =>
          inHotTransaction(em(), async (tx) => {
            await hotWrite(tx, 'update counters set value = value + 1 where name = ?', ['hot-a']);
            if (i % 3 === 1) return NOT_HERE;
            if (i % 3 === 2) throw new Error(`no ${i}`);
            return i;
          }),
        ),
      );
      expect(outcomes.filter((o) => o.status === 'rejected')).toHaveLength(13);
    }
    // 14 of each forty committed (i % 3 === 0), twice.
    expect(await valueOf(em(), 'hot-a')).toBe(1 + 28);
  });

  it('binds a Date as the same instant, to the millisecond, near and far', async () => {
    for (const iso of ['2026-12-05T22:03:38.123Z', '1970-01-01T00:00:00.000Z', '0500-06-30T12:00:00.001Z', '9999-12-31T23:59:59.999Z']) {
      const [row] = await hotRows<{ ms: unknown }>(em(), 'select (extract(epoch from ?::timestamptz) * 1000)::bigint as ms', [new Date(iso)]);
      expect(Number(row.ms)).toBe(Date.parse(iso));
    }
  });
});
