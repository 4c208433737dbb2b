import type { EntityDictionary, EntityName } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';

/**
 * Rows of `entity` read by fixed SQL and mapped by the ORM into `em`'s identity map: the same
 * entities a `find` gives, for the few reads every authenticated request makes. MikroORM builds
 * each query anew through knex, which costs 3-5 times the query itself (bench/README.md);
 * these statements are written once.
 */
/**
 * A fixed statement's rows. Errors come out as the ORM's own exceptions (a lost connection is a
 * DriverException, answered 503 like any other query's), which a raw execute does not do by itself.
 */
export async function executeRaw<R>(em: EntityManager, sql: string, params: unknown[] = []): Promise<R> {
  try {
    return await em.getConnection().execute<R & Record<string, unknown>[]>(sql, params);
  } catch (err) {
    throw em.getDriver().convertException(err as Error);
  }
}

export async function findRaw<T extends object>(em: EntityManager, entity: EntityName<T>, sql: string, params: unknown[]): Promise<T[]> {
  const rows = await executeRaw<Record<string, unknown>[]>(em, sql, params);
  return rows.map((row) => em.map(entity, row as EntityDictionary<T>));
}

export async function findOneRaw<T extends object>(em: EntityManager, entity: EntityName<T>, sql: string, params: unknown[]): Promise<T | null> {
  return (await findRaw(em, entity, sql, params))[0] ?? null;
}
