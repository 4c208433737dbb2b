import { ConnectionException, DeadlockException, DriverException, LockWaitTimeoutException, ReadOnlyException, UniqueConstraintViolationException } from '@mikro-orm/core';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config.js';
import { loggableError, loggableMessage } from '../../../src/db/loggable-error.js';
import { DatabaseUnavailableError, InvalidStateError, NotFoundError, ValidationError } from '../../../src/domain/errors.js';
import { classifyFailure as classifyInDomain, exitStatusOf } from '../../../src/domain/failure.js';
import { GatewayError } from '../../../src/gateway/errors.js';
import { toProblem } from '../../../src/http/problem.js';
import { classifyFailure, EXIT, exitStatusFor } from '../../../src/services/common/classify-failure.js';

/** One classification for HTTP and for exit statuses: each failure gets the same code in both. */
describe('classifyFailure and its two readers', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
  const missingDatabase = Object.assign(new Error('database "nope" does not exist'), { code: '3D000' });
  const deadlock = Object.assign(new Error('deadlock detected'), { code: '40P01' });
  const serialization = Object.assign(new Error('could not serialize access due to concurrent update'), { code: '40001' });

  it.each([
    ['a validation error', new ValidationError([{ field: 'amount', message: 'is not a number' }]), 'validation_error', 400, EXIT.usage],
    ['a missing resource', new NotFoundError('User "nobody"'), 'not_found', 404, EXIT.notFound],
    ['an unreachable gateway', new GatewayError('unavailable', 'connect ECONNREFUSED'), 'gateway_unavailable', 503, EXIT.unavailable],
    ['a refused database connection (raw driver error)', refused, 'service_unavailable', 503, EXIT.unavailable],
    ['a database that does not exist', missingDatabase, 'service_unavailable', 503, EXIT.unavailable],
    ['a lost connection (MikroORM)', new ConnectionException(new Error('Connection terminated unexpectedly')), 'service_unavailable', 503, EXIT.unavailable],
    ['a schema behind the build', new DatabaseUnavailableError('schema behind', 'run db migrate', ['M1']), 'service_unavailable', 503, EXIT.unavailable],
    ['a unique violation', new UniqueConstraintViolationException(new Error('duplicate key')), 'conflict', 409, EXIT.conflict],
    ['a deadlock that outlasted the retries (MikroORM)', new DeadlockException(deadlock), 'service_unavailable', 503, EXIT.unavailable],
    ['a serialization failure that outlasted the retries (MikroORM)', new DeadlockException(serialization), 'service_unavailable', 503, EXIT.unavailable],
    ['a deadlock (raw driver error)', deadlock, 'service_unavailable', 503, EXIT.unavailable],
    ['a lock wait that timed out (MikroORM)', new LockWaitTimeoutException(new Error('Lock wait timeout exceeded')), 'service_unavailable', 503, EXIT.unavailable],
  ])('%s', (_what, err, code, status, exit) => {
    expect(classifyFailure(err)?.code).toBe(code);
    expect(toProblem(err)?.status).toBe(status);
    expect(exitStatusFor(err).code).toBe(exit);
  });

  it('the operator line names the driver reason and what to do; the client never sees it', () => {
    const err = new DatabaseUnavailableError('database schema is behind this build', 'apply them with npx billing-admin db migrate');
    expect(exitStatusFor(err).message).toContain('npx billing-admin db migrate');
    expect(toProblem(err)?.detail).not.toContain('migrate');
    expect(exitStatusFor(refused).message).toContain('ECONNREFUSED');
    expect(toProblem(refused)?.detail).not.toContain('127.0.0.1');
  });

  it('a deadlock answers a retryable problem, and the operator line says the retries were outlasted', () => {
    expect(toProblem(new DeadlockException(deadlock))).toMatchObject({ status: 503, code: 'service_unavailable', type: 'https://billing.example/problems/service-unavailable' });
    expect(toProblem(new DeadlockException(deadlock))?.detail).not.toContain('deadlock detected');
    expect(exitStatusFor(new DeadlockException(deadlock)).message).toContain('deadlock detected');
  });

  it('bad configuration is 2 and an unexpected error is 70 (a bug), never 5', () => {
    expect(exitStatusFor(new ConfigError('DATABASE_URL names no database')).code).toBe(EXIT.usage);
    expect(exitStatusFor(new TypeError('x is undefined')).code).toBe(EXIT.internal);
    expect(classifyFailure(new Error('User "x" does not exist'))).toBeNull();
  });

  it('the domain classifies its own errors without any adapter, and knows no ORM or gateway error by itself', () => {
    expect(classifyInDomain(new InvalidStateError('paused'), [])?.code).toBe('invalid_state');
    expect(classifyInDomain(refused, [])).toBeNull();
    expect(classifyInDomain(new UniqueConstraintViolationException(new Error('duplicate key')), [])).toBeNull();
    expect(classifyInDomain(new GatewayError('unavailable', 'down'), [])).toBeNull();
  });

  it.each([
    ['invalid_state', EXIT.conflict],
    ['insufficient_funds', EXIT.conflict],
    ['conflict', EXIT.conflict],
    ['gateway_error', EXIT.unavailable],
    [null, EXIT.internal],
  ] as const)('the error code %s exits %i', (code, exit) => {
    expect(exitStatusOf(code)).toBe(exit);
  });

  /** A driver error as knex leaves it: the statement and its values before the driver's reason. */
  const sqlite = (code: string, reason: string) =>
    Object.assign(new Error(`insert into \`topups\` (\`user_id\`, \`amount\`) values ('carol', 2468100) - ${reason}`), { code });
  const pg = (code: string, reason: string) => Object.assign(new Error(`update "users" set "email" = 'carol@example.com' - ${reason}`), { code });

  it.each([
    ['SQLite out of space', new DriverException(sqlite('SQLITE_FULL', 'database or disk is full')), 'the disk is full (SQLITE_FULL: database or disk is full)'],
    ['a SQLite write the disk failed', new DriverException(sqlite('SQLITE_IOERR_WRITE', 'disk I/O error')), 'the disk failed a read or a write (SQLITE_IOERR_WRITE: disk I/O error)'],
    ['a read-only SQLite file (MikroORM)', new ReadOnlyException(sqlite('SQLITE_READONLY', 'attempt to write a readonly database')), 'the database is read-only'],
    ['a SQLite file that cannot be opened', new DriverException(sqlite('SQLITE_CANTOPEN', 'unable to open database file')), 'the database file cannot be opened'],
    ['PostgreSQL out of space', new DriverException(pg('53100', 'could not extend file "base/1/2": No space left on device')), 'the disk is full (53100: could not extend file'],
    ['a PostgreSQL server shutting down', new DriverException(pg('57P01', 'terminating connection due to administrator command')), 'the database server is shutting down or restarting'],
    ['a PostgreSQL connection failure', new DriverException(pg('08006', 'connection failure')), 'the connection to the database failed'],
    ['a PostgreSQL standby', new DriverException(pg('25006', 'cannot execute UPDATE in a read-only transaction')), 'the database is read-only'],
    ['a driver error without a code', new DriverException(new Error("insert into `users` values ('carol') - database or disk is full")), 'the disk is full (database or disk is full)'],
  ])('%s is a 503 whose operator line names the cause, never the statement', (_what, err, cause) => {
    expect(toProblem(err)).toMatchObject({ status: 503, code: 'service_unavailable' });
    const line = exitStatusFor(err).message;
    expect(line).toContain(`service_unavailable: database unavailable: ${cause}`);
    expect(line).not.toMatch(/insert into|update "users"|carol|2468100/);
    expect(exitStatusFor(err).code).toBe(EXIT.unavailable);
  });

  it('a driver error reaches a log line as its class, code, reason and frames, without the statement or its values', () => {
    const err = new DriverException(sqlite('SQLITE_CONSTRAINT_NOTNULL', 'NOT NULL constraint failed: topups.amount'));
    const logged = loggableError(err);
    expect(logged).toMatch(/^DriverException SQLITE_CONSTRAINT_NOTNULL: NOT NULL constraint failed: topups\.amount\n\s+at /);
    expect(logged).not.toMatch(/insert into|carol|2468100/);
    expect(loggableMessage(err)).toBe('SQLITE_CONSTRAINT_NOTNULL: NOT NULL constraint failed: topups.amount');
    // Any other error keeps its stack and message: a bug is found by where it happened.
    const bug = new TypeError('x is undefined');
    expect(loggableError(bug)).toBe(bug.stack);
    expect(loggableMessage(bug)).toBe('x is undefined');
  });
});
