import type { Context } from 'koa';
import type { ErrorCode, FieldError } from '../domain/errors.js';
import type { Failure } from '../domain/failure.js';
import { classifyFailure } from '../services/common/classify-failure.js';

/** HTTP status and title of every error code: the one mapping from failures to HTTP. */
const STATUS: Record<ErrorCode, [number, string]> = {
  validation_error: [400, 'Validation failed'],
  not_authenticated: [401, 'Not authenticated'],
  invalid_api_key: [401, 'Invalid API key'],
  insufficient_scope: [403, 'Insufficient scope'],
  permission_denied: [403, 'Permission denied'],
  csrf_failed: [403, 'CSRF check failed'],
  not_found: [404, 'Not found'],
  method_not_allowed: [405, 'Method not allowed'],
  invalid_state: [409, 'Invalid state'],
  subscription_exists: [409, 'Subscription exists'],
  customer_exists: [409, 'Customer exists'],
  insufficient_funds: [409, 'Insufficient funds'],
  nothing_due: [409, 'Nothing due'],
  conflict: [409, 'Conflict'],
  payload_too_large: [413, 'Payload too large'],
  unsupported_media_type: [415, 'Unsupported media type'],
  idempotency_key_reused: [422, 'Idempotency key reused'],
  refund_refused: [422, 'Refund refused'],
  card_declined: [422, 'Card declined'],
  promotion_code_invalid: [422, 'Promotion code invalid'],
  period_closed: [422, 'Period closed'],
  event_in_future: [422, 'Event in the future'],
  unknown_metric: [422, 'Unknown metric'],
  no_metered_subscription: [422, 'No metered subscription'],
  rate_limited: [429, 'Too many requests'],
  not_implemented: [501, 'Not implemented'],
  gateway_error: [502, 'Payment gateway error'],
  gateway_unavailable: [503, 'Payment gateway unavailable'],
  service_unavailable: [503, 'Service unavailable'],
};

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  reason?: string;
  errors?: FieldError[];
  /** `subscription_exists` from a checkout: the live subscription, and a portal link to go to instead. */
  subscription_id?: string;
  portal_url?: string;
  portal_expires_at?: string;
}

export function problem(code: ErrorCode, detail: string, errors?: FieldError[], reason?: string, links: Record<string, string> = {}): Problem {
  const [status, title] = STATUS[code];
  return {
    type: `https://billing.example/problems/${code.replace(/_/g, '-')}`,
    title,
    status,
    detail,
    code,
    ...links,
    ...(reason ? { reason } : {}),
    ...(errors && errors.length > 0 ? { errors } : {}),
  };
}

/**
 * Turns anything thrown by a use case into a problem, by the classification every caller shares
 * (src/domain/failure.ts, given the database and gateway adapters in
 * src/services/common/classify-failure.ts); unknown errors become null, so the caller logs them
 * and answers a bare 500.
 */
export function toProblem(err: unknown): Problem | null {
  const failure = classifyFailure(err);
  return failure ? problemOf(failure) : null;
}

/** The client's view of a classified failure (no operator detail). */
export function problemOf(failure: Failure): Problem {
  return problem(failure.code, failure.message, failure.errors, failure.reason, failure.links);
}

/**
 * Seconds a client is asked to wait before retrying a 503 (the database or the gateway cannot be
 * used now: a full disk, a restart, contention) when the handler set none of its own.
 */
export const RETRY_AFTER_SECONDS = 5;

export function sendProblem(ctx: Context, p: Problem): void {
  if (p.status === 503 && !ctx.response.get('Retry-After')) ctx.set('Retry-After', String(RETRY_AFTER_SECONDS));
  ctx.status = p.status;
  ctx.type = 'application/problem+json';
  ctx.body = p;
}
