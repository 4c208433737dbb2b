import {
  ConnectionException,
  DeadlockException,
  DriverException,
  ForeignKeyConstraintViolationException,
  LockWaitTimeoutException,
  NotFoundError as OrmNotFoundError,
  TableNotFoundException,
  UniqueConstraintViolationException,
} from '@mikro-orm/core';
import { UNAVAILABLE_MESSAGE, type Failure } from '../domain/failure.js';

/*
 * Which driver errors mean "the database cannot be used now" (exit 5, HTTP 503) rather than a
 * bug: a refused or dropped connection, a database that does not exist, a server shutting down,
 * a lock held too long, a missing table (an unmigrated schema). The drivers report these as
 * error codes, sometimes wrapped by MikroORM (`cause`) and sometimes raw (a failed pool connect).
 */

/** Network-level codes (node:net) and PostgreSQL SQLSTATEs of an unusable database. */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE',
  '3D000', // invalid_catalog_name: the database does not exist
  '28000', '28P01', // authentication failed
  '53300', // too_many_connections
  '55000', // object_not_in_prerequisite_state (ALLOW_CONNECTIONS false)
  '57P01', '57P02', '57P03', // admin_shutdown, crash_shutdown, cannot_connect_now
  '08000', '08001', '08003', '08004', '08006',
  'SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_CANTOPEN', 'SQLITE_READONLY',
]);

const UNAVAILABLE_MESSAGES =
  /ECONNREFUSED|connection|terminat|not queryable|database is locked|does not exist|no such table|the database system is (starting|shutting) up/i;

function chain(err: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e: unknown = err, depth = 0; e !== null && e !== undefined && depth < 5; depth++) {
    out.push(e);
    const next = (e as { cause?: unknown }).cause;
    // AggregateError (a connect to several addresses) keeps its parts in `errors`.
    e = next ?? (e as { errors?: unknown[] }).errors?.[0];
  }
  return out;
}

/** True when the error says the database is unreachable, missing, locked or not migrated. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (err instanceof ConnectionException || err instanceof TableNotFoundException) return true;
  return chain(err).some((e) => {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
    return (e instanceof DriverException || e instanceof Error) && UNAVAILABLE_MESSAGES.test(e.message) && isDriverShaped(err);
  });
}

/** Messages alone are trusted only from driver errors, so a domain "X does not exist" is not mistaken for an outage. */
function isDriverShaped(err: unknown): boolean {
  return chain(err).some(
    (e) =>
      e instanceof DriverException ||
      typeof (e as { code?: unknown }).code === 'string' ||
      /node_modules\/(pg|pg-pool|knex|tarn|better-sqlite3|@mikro-orm)\//.test((e as Error)?.stack ?? ''),
  );
}

export const CONTENTION_MESSAGE = 'The database is busy with concurrent changes; retry later.';

/** PostgreSQL SQLSTATEs of a transaction given up to let others go on: serialization_failure, deadlock_detected. */
const CONTENTION_CODES = new Set(['40001', '40P01']);

/**
 * True when the database gave up on this transaction because of concurrent ones (a deadlock
 * victim, a serialization failure, a lock wait timed out): nothing is wrong with the request,
 * and the same work may succeed when run again. retryingTransaction retries exactly these; one
 * that outlasts the retries is answered as unavailability (503), never as a bug.
 */
export function isLockContention(err: unknown): boolean {
  if (err instanceof DeadlockException || err instanceof LockWaitTimeoutException) return true;
  return chain(err).some((e) => CONTENTION_CODES.has((e as { code?: unknown }).code as string));
}

/** One line for an operator: the driver's own reason, without the SQL or a stack. */
export function describeDatabaseFailure(err: unknown): string {
  const parts = chain(err);
  const innermost = [...parts].reverse().find((e) => e instanceof Error && e.message) as Error | undefined;
  const message = innermost?.message ?? String(err);
  const code = parts.map((e) => (e as { code?: unknown }).code).find((c) => typeof c === 'string');
  const firstLine = message.split('\n')[0].replace(/^.* - /, '').trim();
  if (code === '3D000') return `${firstLine} (npx billing-admin db migrate creates it, or fix DATABASE_URL)`;
  if (/no such table|relation .* does not exist/i.test(firstLine)) return `${firstLine} (the schema is missing: npx billing-admin db migrate)`;
  if (firstLine === '' && typeof code === 'string') return code;
  return firstLine || 'unknown error';
}

/**
 * The database's part of the one classification (src/domain/failure.ts): the ORM's and the
 * drivers' errors as error codes, so that the domain never imports the ORM.
 */
export function recogniseDatabaseFailure(err: unknown): Failure | null {
  if (err instanceof OrmNotFoundError) return { code: 'not_found', message: 'Not found.', errors: [], operatorDetail: null };
  if (err instanceof UniqueConstraintViolationException) {
    return { code: 'conflict', message: 'The request conflicts with a concurrent change; retry it.', errors: [], operatorDetail: null };
  }
  if (err instanceof ForeignKeyConstraintViolationException) {
    return { code: 'conflict', message: 'The request refers to something that no longer exists.', errors: [], operatorDetail: null };
  }
  if (isLockContention(err)) {
    return { code: 'service_unavailable', message: CONTENTION_MESSAGE, errors: [], operatorDetail: `database contention outlasted the retries: ${describeDatabaseFailure(err)}` };
  }
  if (isDatabaseUnavailable(err)) {
    return { code: 'service_unavailable', message: UNAVAILABLE_MESSAGE, errors: [], operatorDetail: `database unavailable: ${describeDatabaseFailure(err)}` };
  }
  return null;
}
