import { raw, type EntityName, type FilterQuery, type FindOptions } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { isPostgres } from '../../db/dialect.js';

export interface PageRequest {
  page: number;
  pageSize: number;
}

export interface Page<T> {
  count: number;
  items: T[];
}

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** One page of a filtered, ordered query plus the total count. A page past the last is empty. */
export async function findPage<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  where: FilterQuery<T>,
  page: PageRequest,
  options: { orderBy: unknown; populate?: readonly string[] },
): Promise<Page<T>> {
  const offset = (page.page - 1) * page.pageSize;
  // A page whose offset no database can take (past 2^53) is surely past the last one.
  if (!Number.isSafeInteger(offset)) return { count: await em.count(entity, where), items: [] };
  const [items, count] = await em.findAndCount(entity, where, { ...options, limit: page.pageSize, offset } as FindOptions<T>);
  return { count, items: items as T[] };
}

/**
 * Turns an `ordering` value (`field` or `-field`) into an orderBy object; `allowed` maps the
 * wire names to entity properties. The contract already rejects unknown fields.
 */
export function orderingToOrderBy(
  ordering: string | undefined,
  allowed: Record<string, string>,
  fallback: Record<string, 'asc' | 'desc'>[],
): Record<string, 'asc' | 'desc'>[] {
  if (!ordering) return fallback;
  const desc = ordering.startsWith('-');
  const property = allowed[desc ? ordering.slice(1) : ordering];
  if (!property) return fallback;
  // The id breaks ties so that pages never overlap.
  return [{ [property]: desc ? 'desc' : 'asc' }, { id: 'asc' }];
}

/**
 * A case-insensitive substring match on any of `columns`, as a filter. It uses instr/strpos
 * rather than LIKE, so `%` and `_` in the user's text are plain characters on both dialects.
 */
export function containsText<T>(em: EntityManager, columns: string[], term: string): FilterQuery<T> {
  const find = isPostgres(em) ? 'strpos' : 'instr';
  const needle = term.toLowerCase();
  return {
    $or: columns.map((column) => ({ [raw(`${find}(lower(${column}), ?)`, [needle])]: { $gt: 0 } })),
  } as FilterQuery<T>;
}
