import type { Context } from 'koa';
import { DEFAULT_PAGE_SIZE, type Page, type PageRequest } from '../services/common/pagination.js';

export function pageRequest(query: { page?: number; page_size?: number }): PageRequest {
  return { page: query.page ?? 1, pageSize: query.page_size ?? DEFAULT_PAGE_SIZE };
}

function pageUrl(ctx: Context, page: number): string {
  const url = new URL(ctx.originalUrl, `${ctx.protocol}://${ctx.host}`);
  url.searchParams.set('page', String(page));
  return url.toString();
}

/** The list envelope of every list: `{count, next, previous, results}` with absolute URLs. */
export function envelope<T, R>(ctx: Context, page: Page<T>, request: PageRequest, serialize: (item: T) => R) {
  const lastPage = Math.max(1, Math.ceil(page.count / request.pageSize));
  return {
    count: page.count,
    next: request.page < lastPage ? pageUrl(ctx, request.page + 1) : null,
    previous: request.page > 1 ? pageUrl(ctx, Math.min(request.page - 1, lastPage)) : null,
    results: page.items.map(serialize),
  };
}
