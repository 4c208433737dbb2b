import { DatabaseUnavailableError, DomainError, PromotionCodeInvalidError, SubscriptionExistsError, type ErrorCode, type FieldError } from './errors.js';

/*
 * The one classification of failures: anything thrown becomes one error code, and that code
 * alone decides the HTTP answer (src/http/problem.ts) and the exit status of the CLI and of the
 * server's start (exitStatusOf). Errors of the layers below (the ORM and its drivers, the
 * gateway client) are recognised by small adapters that live with them and are handed in, so
 * this module imports neither.
 */

export interface Failure {
  code: ErrorCode;
  /** Safe to show a client. */
  message: string;
  errors: FieldError[];
  /** For an operator only (logs, the CLI's stderr): the driver's reason and what to do. */
  operatorDetail: string | null;
  /** For `promotion_code_invalid`: why the code cannot be redeemed. */
  reason?: string;
  /** For `subscription_exists`: where the client can send the customer instead (its problem's members). */
  links?: Record<string, string>;
}

/** Recognises the errors of one layer (database, gateway); null for anything else. */
export type FailureRecogniser = (err: unknown) => Failure | null;

export const UNAVAILABLE_MESSAGE = 'The database is unavailable; retry later.';

/** Classifies anything thrown by a use case; null for an unexpected error (a bug: logged, 500, exit 70). */
export function classifyFailure(err: unknown, recognisers: readonly FailureRecogniser[]): Failure | null {
  if (err instanceof DatabaseUnavailableError) {
    return { code: err.code, message: UNAVAILABLE_MESSAGE, errors: [], operatorDetail: err.hint ? `${err.message}; ${err.hint}` : err.message };
  }
  if (err instanceof PromotionCodeInvalidError) return { code: err.code, message: err.message, errors: err.errors, operatorDetail: null, reason: err.reason };
  if (err instanceof SubscriptionExistsError) return { code: err.code, message: err.message, errors: [], operatorDetail: null, links: err.links };
  if (err instanceof DomainError) return { code: err.code, message: err.message, errors: err.errors, operatorDetail: null };
  for (const recognise of recognisers) {
    const failure = recognise(err);
    if (failure) return failure;
  }
  return null;
}

/**
 * Exit statuses of `billing-admin` and of the server's start (docs/operations.md, "Exit codes"):
 * 0 success, 1 a check found a problem, 2 bad input or configuration, 3 refused by a rule or a
 * state, 4 not found, 5 the database or the gateway unavailable, 70 an unexpected error (a bug).
 */
export const EXIT = { ok: 0, checkFailed: 1, usage: 2, conflict: 3, notFound: 4, unavailable: 5, internal: 70 } as const;

/** The exit status of an error code; an unclassified error (null) is 70. */
export function exitStatusOf(code: ErrorCode | null): number {
  if (code === null) return EXIT.internal;
  if (code === 'validation_error') return EXIT.usage;
  if (code === 'not_found') return EXIT.notFound;
  if (code === 'service_unavailable' || code === 'gateway_error' || code === 'gateway_unavailable') return EXIT.unavailable;
  return EXIT.conflict;
}

/** The one line an operator reads for a classified failure: its code, the reason, and any field errors. */
export function operatorLine(failure: Failure): string {
  const details = failure.errors.map((e) => `\n  ${e.field || '(input)'}: ${e.message}`).join('');
  return `${failure.code}: ${failure.operatorDetail ?? failure.message}${details}`;
}
