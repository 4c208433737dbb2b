import type { Middleware } from 'koa';
import type { Logger } from '../logger.js';
import { loggableError } from '../db/loggable-error.js';
import { operatorLine } from '../domain/failure.js';
import { classifyFailure } from '../services/common/classify-failure.js';
import { problem, problemOf, sendProblem } from './problem.js';
import { loggedPath } from './request-log.js';

/**
 * The outermost middleware: every failure becomes problem+json; an unexpected one is logged
 * with its stack and answered 500 without any detail, so no stack trace or secret reaches a client.
 */
export function errorBoundary(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const failure = classifyFailure(err);
      if (failure) {
        const p = problemOf(failure);
        // The operator's line, not the driver's message: that one carries the failing SQL with
        // its values (customers' emails, password hashes).
        if (p.status >= 500) logger.warn('request failed', { request_id: ctx.state.requestId, method: ctx.method, path: loggedPath(ctx.path), status: p.status, error: operatorLine(failure) });
        return sendProblem(ctx, p);
      }
      logger.error('unexpected error', { request_id: ctx.state.requestId, method: ctx.method, path: loggedPath(ctx.path), error: loggableError(err) });
      sendProblem(ctx, { ...problem('service_unavailable', 'An unexpected error occurred; it has been logged.'), status: 500, title: 'Internal error' });
    }
  };
}
