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
 * a lock held too long, a missing table (an unmigrated schema), a full disk, a failing disk, a
 * database made read-only. The drivers report these as error codes, sometimes wrapped by
 * MikroORM (`cause`) and sometimes raw (a failed pool connect).
 */

/**
 * What an operator reads first in the warning line, by the driver's code: node:net codes,
 * PostgreSQL SQLSTATEs (exact, or by class: `53…` insufficient resources, `08…` connection
 * exceptions, `57P0…` operator intervention) and SQLite's result codes (with their extended
 * forms, SQLITE_IOERR_WRITE and the like).
 */
const CAUSES: readonly (readonly [RegExp, string])[] = [
  [/^(SQLITE_FULL|53100)$/, 'the disk is full'],
  [/^(SQLITE_IOERR(_\w+)?|58030)$/, 'the disk failed a read or a write'],
  [/^(SQLITE_READONLY(_\w+)?|25006)$/, 'the database is read-only'],
  [/^SQLITE_CANTOPEN(_\w+)?$/, 'the database file cannot be opened'],
  [/^(SQLITE_CORRUPT(_\w+)?|SQLITE_NOTADB|XX001|XX002)$/, 'the database file is damaged'],
  [/^(SQLITE_NOMEM|53200)$/, 'the database ran out of memory'],
  [/^53300$/, 'the database has no connection left'],
  [/^53\w{3}$/, 'the database server ran out of resources'],
  [/^57P0\d$/, 'the database server is shutting down or restarting'],
  [/^55000$/, 'the database refuses connections'],
  [/^3D000$/, 'the database does not exist'],
  [/^28(000|P01)$/, 'the database refused the credentials'],
  [/^08\w{3}$/, 'the connection to the database failed'],
  [/^(SQLITE_BUSY|SQLITE_LOCKED)(_\w+)?$/, 'the database is locked'],
  [/^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|EPIPE)$/, 'the database cannot be reached'],
];

/** The cause named by a driver code, or null when the code says nothing about availability. */
function causeOfCode(code: unknown): string | null {
  if (typeof code !== 'string') return null;
  return CAUSES.find(([pattern]) => pattern.test(code))?.[1] ?? null;
}

/** The same causes read from a driver's message, for the errors that come without a code. */
const CAUSE_MESSAGES: readonly (readonly [RegExp, string])[] = [
  [/database or disk is full|no space left on device|could not extend file/i, 'the disk is full'],
  [/disk I\/O error/i, 'the disk failed a read or a write'],
  [/readonly database|read-only transaction/i, 'the database is read-only'],
];

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

/** True when the error says the database is unreachable, missing, locked, full, failing or not migrated. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (err instanceof ConnectionException || err instanceof TableNotFoundException) return true;
  return chain(err).some((e) => {
    if (causeOfCode((e as { code?: unknown }).code)) return true;
    return e instanceof Error && (UNAVAILABLE_MESSAGES.test(e.message) || CAUSE_MESSAGES.some(([m]) => m.test(e.message))) && isDriverShaped(err);
  });
}

/**
 * Why the database cannot be used, in words an operator acts on ("the disk is full"), or null
 * when the driver did not say. Named in the one warning line of each request it fails.
 */
export function databaseFailureCause(err: unknown): string | null {
  const parts = chain(err);
  for (const e of parts) {
    const cause = causeOfCode((e as { code?: unknown }).code);
    if (cause) return cause;
  }
  for (const e of parts) {
    const message = e instanceof Error ? e.message : '';
    const found = CAUSE_MESSAGES.find(([pattern]) => pattern.test(message));
    if (found) return found[1];
  }
  return null;
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

/**
 * The driver's own words from a message knex may have prefixed with the failed statement and its
 * values (`insert into … values (…) - database or disk is full`): what follows the last ` - `,
 * first line only. A statement may span lines, so the whole message is searched.
 */
export function driverReason(message: string): string {
  const at = message.lastIndexOf(' - ');
  return (at >= 0 ? message.slice(at + 3) : message).split('\n')[0].trim();
}

/** The first driver code in the chain (SQLITE_FULL, 53100, ECONNREFUSED), or null. */
export function driverCodeOf(err: unknown): string | null {
  const code = chain(err).map((e) => (e as { code?: unknown }).code).find((c) => typeof c === 'string');
  return (code as string | undefined) ?? null;
}

/** One line for an operator: the driver's own reason, without the SQL or a stack. */
export function describeDatabaseFailure(err: unknown): string {
  const parts = chain(err);
  const innermost = [...parts].reverse().find((e) => e instanceof Error && e.message) as Error | undefined;
  const message = innermost?.message ?? String(err);
  const code = parts.map((e) => (e as { code?: unknown }).code).find((c) => typeof c === 'string');
  const firstLine = driverReason(message);
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
    const cause = databaseFailureCause(err);
    const detail = describeDatabaseFailure(err);
    const code = driverCodeOf(err);
    const reason = code && !detail.includes(code) ? `${code}: ${detail}` : detail;
    return { code: 'service_unavailable', message: UNAVAILABLE_MESSAGE, errors: [], operatorDetail: `database unavailable: ${cause ? `${cause} (${reason})` : detail}` };
  }
  return null;
}
