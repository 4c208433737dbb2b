import type { EntityName, FilterQuery, FindOptions } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';

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
  const [items, count] = await em.findAndCount(entity, where, {
    ...options,
    limit: page.pageSize,
    offset: (page.page - 1) * page.pageSize,
  } as FindOptions<T>);
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

/** Escapes LIKE wildcards in user input. */
export function likePattern(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
