import type { Middleware } from 'koa';
import { isUuid } from '../domain/ids.js';
import { RenderRefusedError, type DocumentRenderer } from '../services/documents/document-renderer.js';
import { API_ROOT } from './api.js';
import { problem, sendProblem } from './problem.js';

/** The PDF operations (getInvoicePdf, getCreditNotePdf), on the canonical path, with the id. */
const DOCUMENT_PATH = new RegExp(`^${API_ROOT}/(?:invoices|credit-notes)/([^/]+)/pdf/?$`);

/** A PDF request that could find a document: one whose id is a UUID (anything else is a 404 that reads nothing). */
function documentRequest(path: string): boolean {
  const id = DOCUMENT_PATH.exec(path)?.[1];
  return id !== undefined && isUuid(id);
}

/**
 * NOTE: a refusal is sent after this pause (its Retry-After, 1 s), which costs the server a
 * timer and nothing else: a client that keeps requests in flight to flood can then send at most
 * as many a second as it holds connections, instead of as many as the event loop can refuse.
 */
const REFUSAL_PAUSE_MS = 1000;

/**
 * A user's burst of PDF requests is answered 429 (with Retry-After) as it arrives, right after
 * authentication: before routing, validation, any database read or render, so that a flood costs
 * the event loop as little per request as can be. Every request counts, a cached PDF's included
 * (DocumentRenderer.forUser: at once and per second); requests within the limits go on and hold
 * their slot until answered. Unauthenticated requests go on to their 401.
 */
export function documentBurstLimit(documents: DocumentRenderer): Middleware {
  return async (ctx, next) => {
    if (ctx.method !== 'GET' || !documentRequest(ctx.path) || !ctx.state.authMethod) return next();
    const userId = ctx.state.userFields?.id ?? ctx.state.user?.id;
    if (!userId) return next();
    try {
      await documents.forUser(userId, next);
    } catch (err) {
      if (!(err instanceof RenderRefusedError)) throw err;
      if (err.code === 'rate_limited') await new Promise((resolve) => setTimeout(resolve, REFUSAL_PAUSE_MS));
      ctx.set('Retry-After', String(err.retryAfterSeconds));
      sendProblem(ctx, problem(err.code, err.message));
    }
  };
}
