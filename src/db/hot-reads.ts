import type { EntityDictionary, EntityName } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';

/**
 * Rows of `entity` read by fixed SQL and mapped by the ORM into `em`'s identity map: the same
 * entities a `find` gives, for the few reads every authenticated request makes. MikroORM builds
 * each query anew through knex, which costs 3-5 times the query itself (bench/README.md);
 * these statements are written once.
 * NOTE: em.execute, not em.getConnection().execute: it converts driver errors into the ORM's
 * exceptions (a lost connection answers 503 like any other query) and joins em's transaction.
 */
export async function findRaw<T extends object>(em: EntityManager, entity: EntityName<T>, sql: string, params: unknown[]): Promise<T[]> {
  const rows = (await em.execute(sql, params, 'all')) as EntityDictionary<T>[];
  return rows.map((row) => em.map(entity, row));
}

export async function findOneRaw<T extends object>(em: EntityManager, entity: EntityName<T>, sql: string, params: unknown[]): Promise<T | null> {
  return (await findRaw(em, entity, sql, params))[0] ?? null;
}
