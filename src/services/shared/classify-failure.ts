import {
  ForeignKeyConstraintViolationException,
  NotFoundError as OrmNotFoundError,
  UniqueConstraintViolationException,
} from '@mikro-orm/core';
import { ConfigError } from '../../config.js';
import { describeDatabaseFailure, isDatabaseUnavailable } from '../../db/database-failure.js';
import { DatabaseUnavailableError, DomainError, type ErrorCode, type FieldError } from '../../domain/errors.js';
import { GatewayError, gatewayErrorToProblemCode } from '../../gateway/errors.js';

/*
 * The one classification of failures, shared by every caller: HTTP turns it into problem+json
 * (src/http/problem.ts), the CLI and the server's start into an exit status (exitStatusFor).
 */

export interface Failure {
  code: ErrorCode;
  /** Safe to show a client. */
  message: string;
  errors: FieldError[];
  /** For an operator only (logs, the CLI's stderr): the driver's reason and what to do. */
  operatorDetail: string | null;
}

/** Classifies anything thrown by a use case; null for an unexpected error (a bug: logged, 500, exit 70). */
export function classifyFailure(err: unknown): Failure | null {
  if (err instanceof DatabaseUnavailableError) {
    return { code: err.code, message: 'The database is unavailable; retry later.', errors: [], operatorDetail: err.hint ? `${err.message}; ${err.hint}` : err.message };
  }
  if (err instanceof DomainError) return { code: err.code, message: err.message, errors: err.errors, operatorDetail: null };
  if (err instanceof GatewayError) {
    return { code: gatewayErrorToProblemCode(err), message: `The payment gateway answered: ${err.message}`, errors: [], operatorDetail: `gateway ${err.kind}: ${err.message}` };
  }
  if (err instanceof OrmNotFoundError) return { code: 'not_found', message: 'Not found.', errors: [], operatorDetail: null };
  if (err instanceof UniqueConstraintViolationException) {
    return { code: 'conflict', message: 'The request conflicts with a concurrent change; retry it.', errors: [], operatorDetail: null };
  }
  if (err instanceof ForeignKeyConstraintViolationException) {
    return { code: 'conflict', message: 'The request refers to something that no longer exists.', errors: [], operatorDetail: null };
  }
  if (isDatabaseUnavailable(err)) {
    return { code: 'service_unavailable', message: 'The database is unavailable; retry later.', errors: [], operatorDetail: `database unavailable: ${describeDatabaseFailure(err)}` };
  }
  return null;
}

/**
 * Exit statuses of `billing-admin` and of the server's start (README "Exit codes"):
 * 0 success, 1 a check found a problem, 2 bad input or configuration, 3 refused by a rule or a
 * state, 4 not found, 5 the database or the gateway unavailable, 70 an unexpected error (a bug).
 */
export const EXIT = { ok: 0, checkFailed: 1, usage: 2, conflict: 3, notFound: 4, unavailable: 5, internal: 70 } as const;

function exitForCode(code: ErrorCode): number {
  if (code === 'validation_error') return EXIT.usage;
  if (code === 'not_found') return EXIT.notFound;
  if (code === 'service_unavailable' || code.startsWith('gateway')) return EXIT.unavailable;
  return EXIT.conflict;
}

/** The exit status and the one line to print for a failure. */
export function exitStatusFor(err: unknown): { code: number; message: string } {
  if (err instanceof ConfigError) return { code: EXIT.usage, message: `configuration: ${err.message}` };
  const failure = classifyFailure(err);
  if (!failure) return { code: EXIT.internal, message: err instanceof Error ? err.message : String(err) };
  const details = failure.errors.map((e) => `\n  ${e.field || '(input)'}: ${e.message}`).join('');
  return { code: exitForCode(failure.code), message: `${failure.code}: ${failure.operatorDetail ?? failure.message}${details}` };
}
