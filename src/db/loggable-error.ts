import { DriverException } from '@mikro-orm/core';
import { driverCodeOf, driverReason } from './database-failure.js';

/*
 * A driver's error carries the failed statement with its values in its message (knex writes
 * `insert into users … values ('carol', 'carol@example.com', …) - <reason>`), and so in its
 * stack: logged as is, a customer's name, email, amounts or password hash would reach the logs.
 * What is logged of one is its class, its code, the driver's reason and where it was thrown.
 */

function fromDriver(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== null && e !== undefined && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    // SQLite's result codes and PostgreSQL's SQLSTATEs (five characters, digits among them).
    if (e instanceof DriverException || (typeof code === 'string' && /^(SQLITE_\w+|(?=[A-Z]*\d)[0-9A-Z]{5})$/.test(code))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The stack's frames (`at …` lines), without the message above them. */
function framesOf(err: Error): string {
  return (err.stack ?? '')
    .split('\n')
    .filter((line) => line.trim().startsWith('at '))
    .join('\n');
}

/**
 * What a log line may say of any error: a driver's error without its statement or values, any
 * other error with its stack (for a bug, where it happened matters).
 */
export function loggableError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (!fromDriver(err)) return err.stack ?? `${err.name}: ${err.message}`;
  const code = driverCodeOf(err);
  const frames = framesOf(err);
  return `${err.name}${code ? ` ${code}` : ''}: ${driverReason(err.message)}${frames ? `\n${frames}` : ''}`;
}

/** One line for a log or a report: a driver's error as its code and reason, any other error's message as is. */
export function loggableMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (!fromDriver(err)) return err.message;
  const code = driverCodeOf(err);
  return `${code ? `${code}: ` : ''}${driverReason(err.message)}`;
}
