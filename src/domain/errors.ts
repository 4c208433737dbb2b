/**
 * The closed set of failures a use case can report. Each has a stable snake_case code.
 * src/domain/failure.ts turns anything thrown (these, and gateway and database errors through
 * their adapters) into one of them; src/http/problem.ts maps the code to problem+json and
 * exitStatusOf in the same failure module maps it to the CLI's and the server's exit status.
 */
export type ErrorCode =
  | 'validation_error'
  | 'not_authenticated'
  | 'invalid_api_key'
  | 'insufficient_scope'
  | 'permission_denied'
  | 'csrf_failed'
  | 'not_found'
  | 'invalid_state'
  | 'subscription_exists'
  | 'customer_exists'
  | 'insufficient_funds'
  | 'nothing_due'
  | 'idempotency_key_reused'
  | 'refund_refused'
  | 'card_declined'
  | 'promotion_code_invalid'
  | 'period_closed'
  | 'event_in_future'
  | 'unknown_metric'
  | 'no_metered_subscription'
  | 'rate_limited'
  | 'gateway_error'
  | 'gateway_unavailable'
  | 'service_unavailable'
  | 'not_implemented'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'conflict';

export interface FieldError {
  field: string;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly errors: FieldError[] = [],
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

/** Raised when input breaks a rule the contract cannot express. */
export class ValidationError extends DomainError {
  constructor(errors: FieldError[], message = 'The request is not valid.') {
    super('validation_error', message, errors);
  }
}

/** Raised when a resource does not exist or belongs to someone else (never 403: a stranger's id is not confirmed to exist). */
export class NotFoundError extends DomainError {
  constructor(what: string) {
    super('not_found', `${what} not found.`);
  }
}

/** Why a promotion code cannot be redeemed (docs/pricing.md). */
export type PromotionCodeRefusal = 'unknown' | 'inactive' | 'expired' | 'exhausted' | 'first_time_only' | 'below_minimum' | 'not_for_plan';

/** A promotion code that cannot be redeemed here and now; `reason` names why. */
export class PromotionCodeInvalidError extends DomainError {
  constructor(
    readonly reason: PromotionCodeRefusal,
    message: string,
  ) {
    super('promotion_code_invalid', message, [{ field: 'promotion_code', message }]);
  }
}

/** Why a usage event cannot be counted (docs/usage.md), the 422 codes of /events/. */
export type UsageEventRefusal = 'period_closed' | 'event_in_future' | 'unknown_metric' | 'no_metered_subscription';

/** Usage events refused, all of them named in `errors`; the code is the first one's. */
export class UsageEventRefusedError extends DomainError {
  constructor(code: UsageEventRefusal, message: string, errors: FieldError[]) {
    super(code, message, errors);
  }
}

/**
 * The customer already has a live subscription a new one cannot replace. `links` are members the
 * answer carries so the client can send them on (the subscription, a link to its portal).
 */
export class SubscriptionExistsError extends DomainError {
  constructor(
    message: string,
    readonly links: Record<string, string> = {},
  ) {
    super('subscription_exists', message);
  }
}

/** Raised when a state machine forbids the move. */
export class InvalidStateError extends DomainError {
  constructor(message: string) {
    super('invalid_state', message);
  }
}

/**
 * Raised when the database cannot be used: unreachable, missing, or with a schema behind this
 * build. `hint` says what the operator can do (never sent to HTTP clients).
 */
export class DatabaseUnavailableError extends DomainError {
  constructor(
    message: string,
    readonly hint: string | null = null,
    readonly pendingMigrations: string[] = [],
  ) {
    super('service_unavailable', message);
    this.name = 'DatabaseUnavailableError';
  }
}
